//! CacheYield: the CachePressure walk followed by a `sched_yield()`, so a
//! cache-hungry task keeps handing the CPU back (cache-hot vs. fairness).

use super::cache_pressure::{Params, StridedBuffer, STEPS};
use super::{independent, timed_yield, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "CacheYield",
    summary: "strided read-modify-writes over a size_kb buffer, then sched_yield()",
    units: "one unit per RMW step (1024 per iteration); checkpoint every iteration",
    wakes: Some("sched_yield(), timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::YieldWait,
    params: &[
        super::ranges::ParamRange::new("size_kb", 1, super::ranges::MAX_KB),
        super::ranges::ParamRange::new("stride", 1, 1 << 30),
    ],
    needs: super::HostNeed::Nothing,
};

struct Body(StridedBuffer);

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = self.0.walk(STEPS);
        timed_yield(tel);
        units
    }
}

/// Builds the per-worker bodies (each with its own buffer).
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let p = p.clone();
    independent(move |_| Ok(Box::new(Body(StridedBuffer::new(&p)))))
}
