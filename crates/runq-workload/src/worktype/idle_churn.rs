//! IdleChurn: microsecond bursts and sleeps, so CPUs keep entering and
//! leaving idle (idle-state exit latency, wakeup placement on idle CPUs).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{bursty, PreparedWork, TypeInfo};

/// IdleChurn parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Spin time per burst, µs.
    pub burst_us: u64,
    /// Sleep after each burst, µs.
    pub sleep_us: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            burst_us: 50,
            sleep_us: 100,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "IdleChurn",
    summary: "short spin bursts of burst_us and short sleeps of sleep_us (idle entry/exit churn)",
    units: "1024-unit spin bursts repeated for burst_us; checkpoint every iteration",
    wakes: Some("sleep overshoot: elapsed minus requested sleep (timer slack set to 1 ns)"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::SleepOvershoot,
    params: &[
        super::ranges::ParamRange::new("burst_us", 1, super::ranges::MAX_US),
        super::ranges::ParamRange::new("sleep_us", 1, super::ranges::MAX_US),
    ],
    needs: super::HostNeed::Nothing,
};

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    bursty::prepare_ns(p.burst_us * 1000, Duration::from_micros(p.sleep_us))
}
