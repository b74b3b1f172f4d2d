//! SpinWait: pure CPU, `spin_iters` units per iteration, no blocking.

use super::{independent, PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "SpinWait",
    summary: "burns CPU in spin bursts and never blocks",
    units: "one unit per spin step (1 per iteration when spin_iters = 0); checkpoint every iteration at the default 1024",
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
        tel.spin(self.0)
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &SpinParams) -> Box<dyn PreparedWork> {
    let n = p.spin_iters;
    independent(move |_| Ok(Box::new(Body(n))))
}
