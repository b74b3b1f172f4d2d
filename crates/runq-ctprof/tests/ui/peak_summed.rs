// A lifetime peak bound to a sum reduction must not compile.
use runq_ctprof::registry::AggRule;

fn main() {
    let _rule = AggRule::SumNs(|t| t.wait_max);
}
