//! Types that keep changing their own scheduling attributes, then yield:
//! AffinityChurn (re-pins to a random allowed CPU), PolicyChurn (cycles
//! SCHED_OTHER, SCHED_BATCH, SCHED_IDLE) and NiceSweep (walks a nice
//! range). Failures of the attribute change are ignored: the point is the
//! scheduler's reaction to the attempts.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{independent, timed_yield, PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::placement::{current_affinity, set_affinity};
use crate::spin::spin_burst;
use crate::telemetry::Telemetry;

/// AffinityChurn description.
pub const AFFINITY_CHURN: TypeInfo = TypeInfo {
    name: "AffinityChurn",
    summary:
        "spins, re-pins itself to a random CPU of its allowed set, then yields (forced migrations)",
    units: "spin_iters units per iteration (at least 1); checkpoint every iteration at the default 1024",
    wakes: Some("sched_yield() after the re-pin, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::YieldWait,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

struct AffinityBody {
    spin: u64,
    allowed: Vec<usize>,
    rng: u64,
}

impl AffinityBody {
    /// The CPUs the worker may use: its mask when it first runs (after its
    /// group's affinity and cgroup placement), re-read when one vanishes.
    fn refresh_allowed(&mut self) {
        let mask = current_affinity();
        self.allowed = if mask.len() > 1 || self.allowed.is_empty() {
            mask.into_iter().collect()
        } else {
            runq_kernel::cpulist::online_cpus().into_iter().collect()
        };
    }

    fn next_cpu(&mut self) -> Option<usize> {
        if self.allowed.is_empty() {
            return None;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        Some(self.allowed[(self.rng % self.allowed.len() as u64) as usize])
    }
}

impl WorkerBody for AffinityBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if self.allowed.is_empty() {
            self.refresh_allowed();
        }
        let units = tel.spin(self.spin);
        if let Some(cpu) = self.next_cpu() {
            if set_affinity(&BTreeSet::from([cpu])).is_err() {
                // The cgroup's cpuset shrank: forget the stale set.
                self.allowed.retain(|&c| c != cpu);
                if self.allowed.is_empty() {
                    self.refresh_allowed();
                }
            }
        }
        timed_yield(tel);
        units
    }
}

/// Builds AffinityChurn bodies.
pub fn prepare_affinity(p: &SpinParams) -> Box<dyn PreparedWork> {
    let spin = p.spin_iters;
    independent(move |idx| {
        Ok(Box::new(AffinityBody {
            spin,
            allowed: Vec::new(),
            rng: runq_kernel::clock::monotonic_ns() ^ ((idx as u64 + 1) << 40) | 1,
        }))
    })
}

/// PolicyChurn description.
pub const POLICY_CHURN: TypeInfo = TypeInfo {
    name: "PolicyChurn",
    summary:
        "spins, switches its policy SCHED_OTHER -> SCHED_BATCH -> SCHED_IDLE in turn, then yields",
    units: "spin_iters units per iteration (at least 1); checkpoint every iteration at the default 1024",
    wakes: Some("sched_yield() after the switch, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::YieldWait,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

const POLICIES: [libc::c_int; 3] = [libc::SCHED_OTHER, libc::SCHED_BATCH, libc::SCHED_IDLE];

struct PolicyBody {
    spin: u64,
    next: usize,
}

impl WorkerBody for PolicyBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = tel.spin(self.spin);
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler on the calling thread with a valid
        // param. Leaving SCHED_IDLE needs RLIMIT_NICE or CAP_SYS_NICE;
        // without them the thread stays idle-class, which is also a test.
        unsafe { libc::sched_setscheduler(0, POLICIES[self.next], &param) };
        self.next = (self.next + 1) % POLICIES.len();
        timed_yield(tel);
        units
    }
}

/// Builds PolicyChurn bodies.
pub fn prepare_policy(p: &SpinParams) -> Box<dyn PreparedWork> {
    let spin = p.spin_iters;
    independent(move |idx| {
        Ok(Box::new(PolicyBody {
            spin,
            next: idx % POLICIES.len(),
        }))
    })
}

/// NiceSweep parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NiceSweepParams {
    /// Lowest nice of the sweep (below 0 needs CAP_SYS_NICE).
    pub nice_min: i32,
    /// Highest nice of the sweep.
    pub nice_max: i32,
}

impl Default for NiceSweepParams {
    fn default() -> Self {
        NiceSweepParams {
            nice_min: 0,
            nice_max: 19,
        }
    }
}

impl NiceSweepParams {
    /// The range must not be empty (each end's bounds are its range).
    pub fn validate(&self) -> Result<(), String> {
        if self.nice_min > self.nice_max {
            return Err(format!(
                "nice_min ({}) must not be above nice_max ({})",
                self.nice_min, self.nice_max
            ));
        }
        Ok(())
    }
}

/// NiceSweep description.
pub const NICE_SWEEP: TypeInfo = TypeInfo {
    name: "NiceSweep",
    summary: "spin_burst(512), then steps its nice value through nice_min..nice_max, then yields",
    units: "512 spin units per iteration; checkpoint every 2 iterations",
    wakes: Some("sched_yield() after the renice, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::YieldWait,
    params: &[
        super::ranges::ParamRange::new("nice_min", -20, 19),
        super::ranges::ParamRange::new("nice_max", -20, 19),
    ],
    needs: super::HostNeed::Nothing,
};

struct NiceBody {
    min: i32,
    max: i32,
    next: i32,
}

impl WorkerBody for NiceBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = spin_burst(512);
        // SAFETY: setpriority on the calling thread (who = 0).
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, self.next) };
        self.next = if self.next >= self.max {
            self.min
        } else {
            self.next + 1
        };
        timed_yield(tel);
        units
    }
}

/// Builds NiceSweep bodies.
pub fn prepare_nice(p: &NiceSweepParams) -> Box<dyn PreparedWork> {
    let (min, max) = (p.nice_min, p.nice_max);
    independent(move |idx| {
        let span = (max - min + 1).max(1);
        let offset = i32::try_from(idx).unwrap_or(0) % span;
        Ok(Box::new(NiceBody {
            min,
            max,
            next: min + offset,
        }))
    })
}
