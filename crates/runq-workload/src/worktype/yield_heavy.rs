//! YieldHeavy: `sched_yield()` in a loop, one unit per yield.

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// YieldHeavy takes no parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "YieldHeavy",
    summary: "calls sched_yield() back to back, stressing the pick-next path",
    units: "one unit per yield; checkpoint every 1024 iterations",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[],
    needs: super::HostNeed::Nothing,
};

struct Body;

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
        1
    }
}

/// Builds the per-worker bodies.
pub fn prepare(_: &Params) -> Box<dyn PreparedWork> {
    independent(|_| Ok(Box::new(Body)))
}
