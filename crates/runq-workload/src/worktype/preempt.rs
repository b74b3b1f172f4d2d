//! Priority-driven preemption: PreemptStorm (CPU hogs next to boosted
//! sleepers that preempt them on every wakeup) and RtStarvation
//! (SCHED_FIFO spinners sharing a CPU with SCHED_OTHER workers, which live
//! on what the RT throttle leaves, `/proc/sys/kernel/sched_rt_runtime_us`).

use std::collections::BTreeSet;
use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS, MAX_US};
use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::placement::{current_affinity, set_affinity};
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// Puts the calling thread under SCHED_FIFO at `priority`.
fn set_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler on the calling thread with a valid param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// PreemptStorm parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PreemptParams {
    /// The wakers' sleep between wakeups, µs.
    pub sleep_us: u64,
    /// Spin units per hog iteration.
    pub hog_iters: u64,
    /// Spin units a waker does after each wakeup.
    pub waker_iters: u64,
    /// Wakers try SCHED_FIFO priority 1 first (else, or when refused,
    /// nice -10; without privilege they keep nice 0).
    pub fifo: bool,
}

impl Default for PreemptParams {
    fn default() -> Self {
        PreemptParams {
            sleep_us: 500,
            hog_iters: 4096,
            waker_iters: 256,
            fifo: false,
        }
    }
}

/// PreemptStorm description.
pub const PREEMPT_STORM: TypeInfo = TypeInfo {
    name: "PreemptStorm",
    summary: "pairs of a CPU hog and a boosted waker (nice -10, or SCHED_FIFO with fifo = \
              true) that sleeps sleep_us and preempts the hog on each wakeup",
    units: "hogs: hog_iters units per iteration; wakers: waker_iters per wakeup (at least 1)",
    wakes: Some("wakers only: sleep overshoot, elapsed minus requested (timer slack set to 1 ns)"),
    workers: super::WorkerRule::MultipleOf {
        n: 2,
        roles: "pairs: a hog and a waker",
    },
    wake_figure: super::WakeFigure::SleepOvershoot,
    params: &[
        ParamRange::new("sleep_us", 1, MAX_US),
        ParamRange::new("hog_iters", 0, MAX_ITERS),
        ParamRange::new("waker_iters", 0, MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

struct PreemptBody {
    waker: bool,
    boosted: bool,
    params: PreemptParams,
}

impl PreemptBody {
    /// Raises the waker's priority and sets its timer slack to 1 ns, once,
    /// in its own thread.
    fn boost(&mut self) {
        self.boosted = true;
        super::fine_timer_slack();
        if self.params.fifo && set_fifo(1).is_ok() {
            return;
        }
        // SAFETY: setpriority on the calling thread; refused without
        // privilege, which leaves the waker at nice 0.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -10) };
    }
}

impl WorkerBody for PreemptBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.waker {
            return tel.spin(self.params.hog_iters);
        }
        if !self.boosted {
            self.boost();
        }
        let requested = self.params.sleep_us.saturating_mul(1000);
        tel.plan(requested);
        let before = now_ns();
        if !crate::stop::sleep_unless_stopped(Duration::from_micros(self.params.sleep_us)) {
            return 0;
        }
        tel.record_wake(crate::wake_stamp::overshoot_ns(before, now_ns(), requested));
        tel.spin(self.params.waker_iters)
    }

    fn role(&self) -> u8 {
        u8::from(self.waker)
    }
}

/// Builds PreemptStorm bodies: even workers hog, odd ones wake.
pub fn prepare_preempt(p: &PreemptParams) -> Box<dyn PreparedWork> {
    let params = p.clone();
    independent(move |idx| {
        Ok(Box::new(PreemptBody {
            waker: idx % 2 == 1,
            boosted: false,
            params: params.clone(),
        }))
    })
}

/// RtStarvation parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RtParams {
    /// Spin units per iteration, for spinners and SCHED_OTHER workers.
    pub spin_iters: u64,
    /// The spinners' SCHED_FIFO priority.
    pub rt_priority: u64,
}

impl Default for RtParams {
    fn default() -> Self {
        RtParams {
            spin_iters: 1024,
            rt_priority: 1,
        }
    }
}

/// RtStarvation description.
pub const RT_STARVATION: TypeInfo = TypeInfo {
    name: "RtStarvation",
    summary: "triples pinned to one CPU each: a SCHED_FIFO spinner and two SCHED_OTHER \
              spinners that only run in what the RT throttle leaves (needs CAP_SYS_NICE)",
    units: "spin_iters units per iteration (at least 1) for every worker; the SCHED_OTHER \
            workers' units show they still progressed",
    wakes: None,
    workers: super::WorkerRule::MultipleOf {
        n: 3,
        roles: "a SCHED_FIFO spinner, two SCHED_OTHER workers",
    },
    wake_figure: super::WakeFigure::None,
    params: &[
        ParamRange::new("spin_iters", 0, MAX_ITERS),
        ParamRange::new("rt_priority", 1, 99),
    ],
    needs: super::HostNeed::Nothing,
};

/// The CPU triple `triple` shares: the triples spread over `allowed` in
/// order, wrapping when there are more triples than CPUs.
fn triple_cpu(allowed: &BTreeSet<usize>, triple: usize) -> Option<usize> {
    allowed.iter().nth(triple % allowed.len().max(1)).copied()
}

struct RtBody {
    triple: usize,
    /// SCHED_FIFO priority for the spinner, `None` for SCHED_OTHER.
    fifo: Option<i32>,
    placed: bool,
    spin: u64,
    /// The kernel's refusal of SCHED_FIFO, reported as a setup error.
    error: Option<String>,
}

impl RtBody {
    /// Pins the worker onto its triple's CPU and, for the spinner, enters
    /// SCHED_FIFO (the probe in [`prepare_rt`] showed it is allowed).
    fn place(&mut self) {
        self.placed = true;
        if let Some(cpu) = triple_cpu(&current_affinity(), self.triple) {
            let _ = set_affinity(&BTreeSet::from([cpu]));
        }
        if let Some(priority) = self.fifo {
            if let Err(e) = set_fifo(priority) {
                self.error = Some(format!("SCHED_FIFO priority {priority}: {e}"));
            }
        }
    }
}

impl WorkerBody for RtBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.placed {
            self.place();
        }
        tel.spin(self.spin)
    }

    fn role(&self) -> u8 {
        u8::from(self.fifo.is_none())
    }

    fn setup_error(&self) -> Option<String> {
        self.error.clone()
    }
}

/// Checks that SCHED_FIFO is allowed (from a short-lived thread, so the
/// caller keeps its policy), then builds the bodies: worker 3k of each
/// triple spins under SCHED_FIFO.
pub fn prepare_rt(p: &RtParams) -> io::Result<Box<dyn PreparedWork>> {
    let priority = i32::try_from(p.rt_priority).map_err(io::Error::other)?;
    let probe = std::thread::spawn(move || set_fifo(priority))
        .join()
        .map_err(|_| io::Error::other("the SCHED_FIFO probe panicked"))?;
    if let Err(e) = probe {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "RtStarvation needs SCHED_FIFO priority {priority} for its spinners \
                 (CAP_SYS_NICE, or RLIMIT_RTPRIO of at least {priority}): {e}"
            ),
        ));
    }
    let spin = p.spin_iters;
    Ok(independent(move |idx| {
        Ok(Box::new(RtBody {
            triple: idx / 3,
            fifo: (idx % 3 == 0).then_some(priority),
            placed: false,
            spin,
            error: None,
        }))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_spread_over_the_allowed_cpus_and_wrap() {
        let allowed = BTreeSet::from([2, 5, 9]);
        assert_eq!(triple_cpu(&allowed, 0), Some(2));
        assert_eq!(triple_cpu(&allowed, 2), Some(9));
        assert_eq!(triple_cpu(&allowed, 4), Some(5));
        assert_eq!(triple_cpu(&BTreeSet::new(), 1), None);
    }
}
