// A dead counter implements no reduction.
use runq_ctprof::agg::{max_across, sum_across};
use runq_ctprof::metric_types::DeadCounter;

fn main() {
    let _ = sum_across([DeadCounter(1)]);
    let _ = max_across([DeadCounter(1)]);
}
