//! Lock-based work types: MutexContention (every worker fights for one
//! shared futex mutex) and PriorityInversion (low/medium/high triples on a
//! plain or priority-inheriting futex).

use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::futex_lock::FutexLock;
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::shared::SharedRegion;
use crate::spin::spin_burst;
use crate::telemetry::Telemetry;

/// Bytes between lock words (one cache line).
const SLOT: usize = 64;

/// MutexContention parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MutexParams {
    /// Spin units outside the lock.
    pub work_iters: u64,
    /// Spin units while holding the lock.
    pub hold_iters: u64,
}

impl Default for MutexParams {
    fn default() -> Self {
        MutexParams {
            work_iters: 1024,
            hold_iters: 256,
        }
    }
}

/// MutexContention description.
pub const MUTEX_CONTENTION: TypeInfo = TypeInfo {
    name: "MutexContention",
    summary: "every worker spins work_iters, then takes one shared futex mutex for hold_iters",
    units:
        "work_iters + hold_iters units per acquire (1280 by default: checkpoint every 4 iterations)",
    wakes: Some(
        "contended acquire that a wake handed the lock: from the unlocker's stamp, taken just before its FUTEX_WAKE, to running again",
    ),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::Latency,
    params: &[
        super::ranges::ParamRange::new("work_iters", 0, super::ranges::MAX_ITERS),
        super::ranges::ParamRange::new("hold_iters", 0, super::ranges::MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

struct MutexBody {
    region: SharedRegion,
    work: u64,
    hold: u64,
}

impl WorkerBody for MutexBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let mut units = tel.spin(self.work);
        let lock = FutexLock::new(self.region.atomic_u32(0), self.region.atomic_u64(8), false);
        match lock.lock() {
            Some(got) => {
                if let Some(stamp) = got.wake_stamp {
                    tel.record_wake_stamped(stamp);
                }
            }
            None => return units,
        }
        units += tel.spin(self.hold);
        lock.unlock();
        units
    }
}

struct MutexGroup {
    region: SharedRegion,
    params: MutexParams,
}

impl PreparedWork for MutexGroup {
    fn worker(&mut self, _: usize) -> io::Result<Box<dyn WorkerBody>> {
        Ok(Box::new(MutexBody {
            region: self.region.clone(),
            work: self.params.work_iters,
            hold: self.params.hold_iters,
        }))
    }
}

/// Maps the group's mutex.
pub fn prepare_mutex(p: &MutexParams) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(MutexGroup {
        region: SharedRegion::new(SLOT)?,
        params: p.clone(),
    }))
}

/// PriorityInversion parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InversionParams {
    /// Use a priority-inheriting futex (FUTEX_LOCK_PI).
    pub pi: bool,
    /// Spin units the low-priority holder does inside the lock.
    pub hold_iters: u64,
    /// Spin units per iteration outside the lock (the medium task's burst).
    pub work_iters: u64,
    /// The high-priority task's sleep between acquires, µs.
    pub high_sleep_us: u64,
}

impl Default for InversionParams {
    fn default() -> Self {
        InversionParams {
            pi: false,
            hold_iters: 65_536,
            work_iters: 1024,
            high_sleep_us: 1000,
        }
    }
}

/// PriorityInversion description.
pub const PRIORITY_INVERSION: TypeInfo = TypeInfo {
    name: "PriorityInversion",
    summary:
        "triples of low/medium/high tasks: low holds a lock high wants while medium hogs the CPU \
              (pi = true uses a priority-inheriting futex)",
    units: "low: hold_iters + work_iters per iteration; medium: work_iters; high: 256 per acquire",
    wakes: Some(
        "high task only: lock wait, from the failed fast path to owning the lock, every acquire \
         (the low task's hold and any inversion are in it: not a wakeup latency)",
    ),
    workers: super::WorkerRule::MultipleOf {
        n: 3,
        roles: "low, medium, high",
    },
    wake_figure: super::WakeFigure::LockWait,
    params: &[
        super::ranges::ParamRange::new("hold_iters", 0, super::ranges::MAX_ITERS),
        super::ranges::ParamRange::new("work_iters", 0, super::ranges::MAX_ITERS),
        super::ranges::ParamRange::new("high_sleep_us", 0, super::ranges::MAX_US),
    ],
    needs: super::HostNeed::Nothing,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Low,
    Medium,
    High,
}

/// The nice value a PriorityInversion worker of `role` (0 low, 1 medium,
/// 2 high) gives itself under a non-RT policy: 10, 5 and 0.
pub(crate) fn inversion_role_nice(role: u8) -> i32 {
    10 - 5 * i32::from(role.min(2))
}

struct InversionBody {
    region: SharedRegion,
    offset: usize,
    role: Role,
    params: InversionParams,
    prioritized: bool,
}

impl InversionBody {
    /// Gives the three roles distinct priorities once, after the group's
    /// own setup: RT priorities p, p+1, p+2 under FIFO/RR, else nice 10,
    /// 5 and 0 (raising priority may fail without privilege; then the
    /// high task simply keeps nice 0).
    fn set_role_priority(&mut self) {
        self.prioritized = true;
        let step = match self.role {
            Role::Low => 0,
            Role::Medium => 1,
            Role::High => 2,
        };
        // SAFETY: scheduler calls on the calling thread with valid params.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            if policy == libc::SCHED_FIFO || policy == libc::SCHED_RR {
                let mut param = libc::sched_param { sched_priority: 0 };
                libc::sched_getparam(0, &mut param);
                param.sched_priority = (param.sched_priority + step).min(99);
                libc::sched_setscheduler(0, policy, &param);
            } else {
                libc::setpriority(libc::PRIO_PROCESS, 0, inversion_role_nice(self.role as u8));
            }
        }
    }
}

impl WorkerBody for InversionBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.prioritized {
            self.set_role_priority();
        }
        let lock = FutexLock::new(
            self.region.atomic_u32(self.offset),
            self.region.atomic_u64(self.offset + 8),
            self.params.pi,
        );
        let p = &self.params;
        match self.role {
            Role::Medium => tel.spin(p.work_iters),
            Role::Low => {
                let Some(_) = lock.lock() else { return 0 };
                let units = tel.spin(p.hold_iters);
                lock.unlock();
                units + tel.spin(p.work_iters)
            }
            Role::High => {
                tel.plan(p.high_sleep_us.saturating_mul(1000));
                crate::stop::sleep_unless_stopped(Duration::from_micros(p.high_sleep_us));
                let Some(got) = lock.lock() else { return 0 };
                tel.record_wake(got.waited_ns);
                let units = spin_burst(256);
                lock.unlock();
                units
            }
        }
    }

    fn role(&self) -> u8 {
        self.role as u8
    }
}

struct InversionGroup {
    region: SharedRegion,
    params: InversionParams,
}

impl PreparedWork for InversionGroup {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let role = [Role::Low, Role::Medium, Role::High][idx % 3];
        Ok(Box::new(InversionBody {
            region: self.region.clone(),
            offset: (idx / 3) * SLOT,
            role,
            params: self.params.clone(),
            prioritized: false,
        }))
    }
}

/// Maps one lock word per triple.
pub fn prepare_inversion(p: &InversionParams, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(InversionGroup {
        region: SharedRegion::new((workers / 3).max(1) * SLOT)?,
        params: p.clone(),
    }))
}
