//! Bursty: spin for `burst_ms`, then sleep for `sleep_ms`. The wake sample
//! is how late the sleep returned (elapsed minus requested), with the
//! worker's timer slack set to 1 ns so the default 50 µs is not in it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{independent, since, PreparedWork, TypeInfo, WorkerBody};
use crate::spin::spin_burst;
use crate::stop::stop_requested;
use crate::telemetry::{Telemetry, CHUNK_UNITS};
use crate::wake_stamp::overshoot_ns;
use runq_kernel::clock::fast::now_ns;

/// Bursty parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Length of each CPU burst, ms.
    pub burst_ms: u64,
    /// Length of each sleep, ms.
    pub sleep_ms: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            burst_ms: 50,
            sleep_ms: 100,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "Bursty",
    summary: "alternates CPU bursts of burst_ms with sleeps of sleep_ms (wakeup placement)",
    units: "1024-unit spin bursts repeated for burst_ms; checkpoint every iteration",
    wakes: Some("sleep overshoot: elapsed minus requested sleep (timer slack set to 1 ns)"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::SleepOvershoot,
    params: &[
        super::ranges::ParamRange::new("burst_ms", 1, super::ranges::MAX_MS),
        super::ranges::ParamRange::new("sleep_ms", 0, super::ranges::MAX_MS),
    ],
    needs: super::HostNeed::Nothing,
};

struct Body {
    burst_ns: u64,
    sleep: Duration,
    /// The timer slack is set, in the worker's own thread.
    slack_set: bool,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.slack_set {
            super::fine_timer_slack();
            self.slack_set = true;
        }
        let start = now_ns();
        tel.plan(self.burst_ns);
        let mut units = 0;
        while since(start) < self.burst_ns && !stop_requested() {
            units += spin_burst(1024);
            if units % CHUNK_UNITS == 0 {
                // Progress inside a long burst, for the stall checks.
                tel.progress_within(units);
            }
        }
        if self.sleep.is_zero() || stop_requested() {
            return units;
        }
        let requested = u64::try_from(self.sleep.as_nanos()).unwrap_or(u64::MAX);
        tel.plan(requested);
        let before = now_ns();
        crate::stop::sleep_unless_stopped(self.sleep);
        tel.record_wake(overshoot_ns(before, now_ns(), requested));
        units
    }
}

/// Bodies that spin for `burst_ns`, then sleep `sleep` (shared with
/// IdleChurn, which uses microsecond scales).
pub(super) fn prepare_ns(burst_ns: u64, sleep: Duration) -> Box<dyn PreparedWork> {
    independent(move |_| {
        Ok(Box::new(Body {
            burst_ns,
            sleep,
            slack_set: false,
        }))
    })
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    prepare_ns(p.burst_ms * 1_000_000, Duration::from_millis(p.sleep_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_sets_its_own_timer_slack_to_1_ns() {
        let slack = std::thread::spawn(|| {
            let mut body = prepare_ns(1_000, Duration::from_micros(10))
                .worker(0)
                .unwrap();
            let mut tel = Telemetry::start();
            body.iterate(&mut tel);
            // SAFETY: prctl reading the calling thread's timer slack.
            unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) }
        })
        .join()
        .unwrap();
        assert_eq!(slack, 1);
    }
}
