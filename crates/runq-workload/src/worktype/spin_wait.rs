//! SpinWait: pure CPU, `spin_iters` units per iteration, no blocking.

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::spin::spin_burst;
use crate::telemetry::Telemetry;

/// SpinWait parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Spin units per iteration.
    pub spin_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params { spin_iters: 1024 }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "SpinWait",
    summary: "burns CPU in spin bursts and never blocks",
    units: "one unit per spin step; checkpoint every iteration at the default 1024",
    wakes: None,
    workers: None,
};

struct Body(u64);

impl WorkerBody for Body {
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        spin_burst(self.0)
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let n = p.spin_iters;
    independent(move |_| Ok(Box::new(Body(n))))
}
