//! Mixed: a spin burst then a yield, each iteration.

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::spin::spin_burst;
use crate::telemetry::Telemetry;

/// Mixed parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Spin units before each yield.
    pub spin_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params { spin_iters: 1024 }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "Mixed",
    summary: "a spin burst followed by sched_yield(), mixing CPU work and voluntary switches",
    units: "one unit per spin step (1024 per iteration); checkpoint every iteration",
    wakes: None,
    workers: None,
};

struct Body(u64);

impl WorkerBody for Body {
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        let units = spin_burst(self.0);
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
        units
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let n = p.spin_iters;
    independent(move |_| Ok(Box::new(Body(n))))
}
