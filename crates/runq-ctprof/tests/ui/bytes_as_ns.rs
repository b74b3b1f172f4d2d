// A byte counter bound to a nanosecond sum must not compile.
use runq_ctprof::registry::AggRule;

fn main() {
    let _rule = AggRule::SumNs(|t| t.rchar);
}
