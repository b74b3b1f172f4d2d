//! One benchmark run: N processes (this one and N-1 forked children) meet
//! at a barrier twice, each stamps its start tick, runs OUTER x INNER call
//! chains, meets the others twice more and stamps its end tick. Two waits
//! on each side, as the original does: the first lets late starters catch
//! up, the second makes every stamp happen after everyone has arrived.

use std::io;

use runq_kernel::mapping::AnonMapping;
use serde::Serialize;

use crate::barrier::ProcessBarrier;
use crate::callgraph::run_chain;
use crate::config::{Config, Target};
use crate::statsd::Statsd;
use crate::tsc;

/// The result of a run: the original's CSV fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunResult {
    /// The run's inputs.
    pub config: Config,
    /// Calls made by all processes together.
    pub total_calls: u64,
    /// Sum over processes of (end tick - start tick).
    pub ticks: u64,
    /// `ticks / total_calls`.
    pub ticks_per_call: f64,
}

impl RunResult {
    /// The original program's line:
    /// `n, outer, inner, target, total_calls, ticks, ticks_per_call`.
    pub fn csv_line(&self) -> String {
        let c = &self.config;
        format!(
            "{}, {}, {}, {}, {}, {}, {:.6}",
            c.procs,
            c.outer,
            c.inner,
            c.target.as_number(),
            self.total_calls,
            self.ticks,
            self.ticks_per_call
        )
    }
}

/// Why a run produced no result.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A system call failed while setting up.
    #[error("setting up the run: {0}")]
    Setup(#[from] io::Error),
    /// A worker process died before the end.
    #[error("worker process {pid} ended early ({how}); no result")]
    WorkerDied {
        /// Its pid.
        pid: i32,
        /// Exit status or signal.
        how: String,
    },
}

/// Per-process slots in shared memory: start, end and calls.
struct Slots {
    map: AnonMapping,
    procs: usize,
}

impl Slots {
    fn new(procs: usize) -> io::Result<Self> {
        Ok(Slots {
            map: AnonMapping::shared(procs * 3 * 8)?,
            procs,
        })
    }

    fn slot(&self, field: usize, me: usize) -> *mut u64 {
        assert!(field < 3 && me < self.procs, "slot out of range");
        // SAFETY: in range (checked); the mapping is 8-aligned.
        unsafe { (self.map.as_ptr() as *mut u64).add(field * self.procs + me) }
    }

    fn set(&self, field: usize, me: usize, v: u64) {
        // SAFETY: a valid slot pointer; each process writes only its own.
        unsafe { std::ptr::write_volatile(self.slot(field, me), v) }
    }

    fn get(&self, field: usize, me: usize) -> u64 {
        // SAFETY: a valid slot pointer.
        unsafe { std::ptr::read_volatile(self.slot(field, me)) }
    }
}

const START: usize = 0;
const END: usize = 1;
const CALLS: usize = 2;

/// The timed work of one process; returns the calls it made.
fn work(config: &Config, statsd: Option<&Statsd>) -> u64 {
    let mut calls = 0u64;
    for _ in 0..config.outer {
        let t0 = tsc::ticks();
        let before = calls;
        for i in 0..config.inner {
            let arg = match config.target {
                Target::EachIndex => i,
                Target::Value(v) => v,
            };
            calls += run_chain(arg);
        }
        if let Some(s) = statsd {
            s.iteration(tsc::ticks().wrapping_sub(t0), config.inner, calls - before);
        }
    }
    calls
}

/// One process's part: barriers, stamps, work.
fn participate(
    config: &Config,
    me: usize,
    barrier: &ProcessBarrier,
    slots: &Slots,
    give_up: &mut dyn FnMut() -> bool,
) -> bool {
    let statsd = Statsd::from_env();
    if !barrier.wait(&mut *give_up) {
        return false;
    }
    slots.set(START, me, tsc::ticks());
    if !barrier.wait(&mut *give_up) {
        return false;
    }
    slots.set(CALLS, me, work(config, statsd.as_ref()));
    if !barrier.wait(&mut *give_up) {
        return false;
    }
    slots.set(END, me, tsc::ticks());
    barrier.wait(&mut *give_up)
}

/// Forks the children; each runs its part and `_exit`s.
fn fork_children(
    config: &Config,
    barrier: &ProcessBarrier,
    slots: &Slots,
) -> Result<Vec<i32>, RunError> {
    let parent = std::process::id() as i32;
    let mut pids = Vec::with_capacity(config.procs.saturating_sub(1));
    for me in 1..config.procs {
        // SAFETY: the child runs only the benchmark and ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            barrier.abort();
            let err = io::Error::last_os_error();
            reap(&pids);
            return Err(err.into());
        }
        if pid == 0 {
            // SAFETY: prctl/getppid/_exit in the child.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                let ok = participate(config, me, barrier, slots, &mut || false);
                libc::_exit(if ok { 0 } else { 1 });
            }
        }
        pids.push(pid);
    }
    Ok(pids)
}

/// Waits for every child (after an abort or at the end).
fn reap(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: reaping our own children.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    }
}

/// The first of `pids` that has ended, with how it ended.
fn child_ended(pids: &[i32]) -> Option<(i32, String)> {
    let mut status = 0;
    let pid = pids.iter().copied().find(|&pid| {
        // SAFETY: non-blocking wait on one of our own children.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == pid }
    })?;
    let how = if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    };
    Some((pid, how))
}

/// Runs the benchmark with `config.procs` processes.
pub fn run(config: &Config) -> Result<RunResult, RunError> {
    let procs = config.procs.max(1);
    let barrier = ProcessBarrier::new(procs as u32)?;
    let slots = Slots::new(procs)?;
    let pids = fork_children(config, &barrier, &slots)?;
    let mut died = None;
    let ok = participate(config, 0, &barrier, &slots, &mut || {
        died = died.take().or_else(|| child_ended(&pids));
        died.is_some()
    });
    reap(&pids);
    if !ok {
        let (pid, how) = died.unwrap_or((0, "unknown".into()));
        return Err(RunError::WorkerDied { pid, how });
    }
    let (mut ticks, mut calls) = (0u64, 0u64);
    for me in 0..procs {
        ticks += slots.get(END, me).wrapping_sub(slots.get(START, me));
        calls += slots.get(CALLS, me);
    }
    Ok(RunResult {
        config: Config { procs, ..*config },
        total_calls: calls,
        ticks,
        ticks_per_call: ticks as f64 / calls.max(1) as f64,
    })
}
