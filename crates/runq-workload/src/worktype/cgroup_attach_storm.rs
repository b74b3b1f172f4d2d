//! CgroupAttachStorm: each worker makes `groups` cgroups of its own under
//! its group's cgroup (`storm-<worker>-<k>`, in every hierarchy runq
//! placed it in), forks `victims` child tasks, and moves them round those
//! cgroups by writing their pids to `cgroup.procs`, `moves_per_s` moves a
//! second (0: as fast as it can). Each write is a cgroup migration the
//! kernel does under its cgroup locks while the victims sleep and wake
//! (1 ms naps), so the storm loads the attach path and the scheduler's
//! handling of tasks that change group.
//!
//! The worker times each `cgroup.procs` write. At its end it kills and
//! reaps its victims and removes its cgroups; a victim whose worker dies
//! first dies with it (`PR_SET_PDEATHSIG`), and runq removes the run's
//! cgroup tree after the run. Processes only.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::cgroup_churn::{move_into, own_group_dirs};
use super::ranges::ParamRange;
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::cgroup::create_child_cgroup;
use runq_kernel::clock::monotonic_ns;

/// CgroupAttachStorm parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Cgroups each worker makes and moves its victims round.
    pub groups: u64,
    /// Child tasks each worker moves.
    pub victims: u64,
    /// Moves a second per worker (one victim, every hierarchy); 0: no pause.
    pub moves_per_s: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            groups: 4,
            victims: 2,
            moves_per_s: 1000,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "CgroupAttachStorm",
    summary: "each worker forks victims and moves them round cgroups it made (cgroup.procs \
              writes) at moves_per_s; cleans up its victims and cgroups; needs the group to \
              have a cgroup (processes only)",
    units: "one unit per move (one victim moved in every hierarchy)",
    wakes: Some("the time across each move's cgroup.procs writes"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::AttachTime,
    params: &[
        ParamRange::new("groups", 2, 64),
        ParamRange::new("victims", 1, 64),
        ParamRange::new("moves_per_s", 0, 1_000_000),
    ],
    needs: super::HostNeed::Nothing,
};

/// Forks a victim: a child that naps 1 ms at a time until it is killed,
/// and dies with its parent.
fn fork_victim() -> Result<libc::pid_t, String> {
    // SAFETY: the worker is a single-threaded process (the type runs in
    // process mode only); the child calls only async-signal-safe
    // functions and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "CgroupAttachStorm: fork: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: prctl and nanosleep with valid arguments, in the child.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() == 1 {
                libc::_exit(0);
            }
            loop {
                libc::nanosleep(&nap, std::ptr::null_mut());
            }
        }
    }
    Ok(pid)
}

/// A worker's cgroups and victims.
struct Storm {
    /// Per hierarchy, the worker's cgroups.
    rings: Vec<Vec<PathBuf>>,
    victims: Vec<libc::pid_t>,
}

impl Storm {
    /// Makes the cgroups under the worker's own and forks the victims.
    fn start(idx: usize, p: &Params) -> Result<Storm, String> {
        let mut storm = Storm {
            rings: Vec::new(),
            victims: Vec::new(),
        };
        for (h, dir) in own_group_dirs("CgroupAttachStorm")? {
            let mut ring = Vec::new();
            for k in 0..p.groups {
                let leaf = dir.join(format!("storm-{idx}-{k}"));
                create_child_cgroup(&h, &leaf).map_err(|e| format!("CgroupAttachStorm: {e}"))?;
                ring.push(leaf);
            }
            storm.rings.push(ring);
        }
        for _ in 0..p.victims {
            storm.victims.push(fork_victim()?);
        }
        Ok(storm)
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        for &pid in &self.victims {
            // SAFETY: our own children, killed then reaped (through the
            // stop signals the parent repeats until the report is in).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                {
                }
            }
        }
        for dir in self.rings.iter().flatten() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

struct Body {
    idx: usize,
    params: Params,
    /// Set up on the first iteration; `None` after a failure.
    storm: Option<Storm>,
    /// Moves made so far (which victim and cgroup come next).
    moves: u64,
    /// When the next move is due (monotonic ns).
    due_ns: u64,
    error: Option<String>,
}

impl Body {
    /// Moves the next victim to its next cgroup in every hierarchy.
    fn move_one(&mut self) -> Result<(), String> {
        let Some(storm) = &self.storm else {
            return Ok(());
        };
        let n = storm.victims.len() as u64;
        let victim = storm.victims[(self.moves % n) as usize];
        let k = ((self.moves / n + 1) % self.params.groups) as usize;
        self.moves += 1;
        for ring in &storm.rings {
            move_into(&ring[k], victim as u32, "CgroupAttachStorm")?;
        }
        Ok(())
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if self.storm.is_none() && self.error.is_none() {
            match Storm::start(self.idx, &self.params) {
                Ok(s) => self.storm = Some(s),
                Err(e) => self.error = Some(e),
            }
            self.due_ns = monotonic_ns();
        }
        if self.storm.is_none() {
            // Nothing to move: idle until the stop, reporting why.
            tel.plan(10_000_000);
            return u64::from(crate::stop::sleep_unless_stopped(
                std::time::Duration::from_millis(10),
            ));
        }
        if let Some(gap_ns) = 1_000_000_000u64.checked_div(self.params.moves_per_s) {
            tel.plan(self.due_ns.saturating_sub(monotonic_ns()));
            if !super::timer_latency::sleep_until(self.due_ns) {
                return 0;
            }
            self.due_ns += gap_ns;
        }
        let t0 = monotonic_ns();
        if let Err(e) = self.move_one() {
            self.error.get_or_insert(e);
        }
        tel.record_wake(monotonic_ns().saturating_sub(t0));
        1
    }

    fn setup_error(&self) -> Option<String> {
        self.error.clone()
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let params = p.clone();
    super::independent(move |idx| {
        Ok(Box::new(Body {
            idx,
            params: params.clone(),
            storm: None,
            moves: 0,
            due_ns: 0,
            error: None,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_outside_runq_reports_why_it_cannot_storm() {
        // The test process is in no runq cgroup.
        let mut body = prepare(&Params::default()).worker(0).unwrap();
        let mut tel = Telemetry::start();
        body.iterate(&mut tel);
        let err = body.setup_error().expect("no cgroup to storm in");
        assert!(
            err.starts_with("CgroupAttachStorm: the worker is in no runq cgroup"),
            "{err}"
        );
    }

    #[test]
    fn victims_die_with_the_storm() {
        let storm = Storm {
            rings: Vec::new(),
            victims: vec![fork_victim().unwrap(), fork_victim().unwrap()],
        };
        let pids = storm.victims.clone();
        drop(storm);
        for pid in pids {
            // SAFETY: probing a pid we reaped: ESRCH once it is gone.
            assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "victim {pid} lives on");
        }
    }
}
