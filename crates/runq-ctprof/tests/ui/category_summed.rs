// A categorical value cannot be summed.
use runq_ctprof::agg::sum_across;
use runq_ctprof::metric_types::CategoricalString;

fn main() {
    let _ = sum_across(vec![CategoricalString("SCHED_OTHER".into())]);
}
