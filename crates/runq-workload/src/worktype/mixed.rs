//! Mixed: a spin burst then a yield, each iteration.

use super::{independent, PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "Mixed",
    summary: "a spin burst followed by sched_yield(), mixing CPU work and voluntary switches",
    units: "one unit per spin step (1024 per iteration); checkpoint every iteration",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

struct Body(u64);

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = tel.spin(self.0);
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
        units
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &SpinParams) -> Box<dyn PreparedWork> {
    let n = p.spin_iters;
    independent(move |_| Ok(Box::new(Body(n))))
}
