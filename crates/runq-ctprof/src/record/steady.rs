//! The cheap steady state of a recording. Between full captures, each
//! interval reads only `/proc/<tid>/schedstat` of every thread (through a
//! descriptor kept open and re-read with `pread` at offset 0) and re-reads
//! in full only the threads whose schedstat moved, plus the leader of
//! their process (memory, thread count). Idle threads keep their previous
//! state: a thread that did not run did not change its counters.
//!
//! Host context, cgroup stats, sched_ext state, `smaps_rollup` and jemalloc
//! counters are read only at full captures (threads keep the values of the
//! last one); host PSI is read every interval.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use runq_kernel::schedstat::parse_schedstat;

use crate::avail::Source;
use crate::capture::{capture, list_threads, read_listed, CaptureOptions};
use crate::model::{CtprofSnapshot, ThreadState};
use runq_kernel::clock::unix_ns;

/// Descriptors kept below the soft `RLIMIT_NOFILE` for everything else.
const FD_RESERVE: u64 = 256;

/// Raises the soft open-file limit to the hard one; returns how many
/// schedstat descriptors may stay open.
fn fd_budget() -> usize {
    // SAFETY: rl is plain data filled by getrlimit.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 0;
    }
    if rl.rlim_cur < rl.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: rl.rlim_max,
            rlim_max: rl.rlim_max,
        };
        // SAFETY: valid pointer; failure leaves the old limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            rl.rlim_cur = rl.rlim_max;
        }
    }
    rl.rlim_cur.saturating_sub(FD_RESERVE).min(1 << 20) as usize
}

/// The incremental capturer of a recording.
#[derive(Debug)]
pub struct Steady {
    opts: CaptureOptions,
    /// The last snapshot's threads by tid.
    prev: HashMap<u32, ThreadState>,
    /// Threads per process in the last snapshot.
    counts: HashMap<u32, u32>,
    /// The last full capture's host-wide parts.
    full: CtprofSnapshot,
    fds: HashMap<u32, File>,
    fd_budget: usize,
    /// After [`Steady::next`]: the previous state of the threads re-read
    /// (and of those gone), by tid.
    pub old: HashMap<u32, ThreadState>,
    /// After [`Steady::next`]: the tids re-read this interval.
    pub fresh: HashSet<u32>,
}

impl Steady {
    /// A capturer with `opts`; the first [`Steady::next`] is a full capture.
    pub fn new(opts: &CaptureOptions) -> Self {
        Steady {
            opts: opts.clone(),
            prev: HashMap::new(),
            counts: HashMap::new(),
            full: CtprofSnapshot::new(),
            fds: HashMap::new(),
            fd_budget: fd_budget(),
            old: HashMap::new(),
            fresh: HashSet::new(),
        }
    }

    /// The next snapshot: a full capture when `full` (or the first time),
    /// else the incremental one described in the module doc.
    pub fn next(&mut self, full: bool) -> CtprofSnapshot {
        if full || self.prev.is_empty() {
            let snap = capture(&self.opts);
            self.full = CtprofSnapshot {
                threads: Vec::new(),
                ..snap.clone()
            };
            self.old = std::mem::take(&mut self.prev);
            self.fresh = snap.threads.iter().map(|t| t.tid).collect();
            return snap;
        }
        self.incremental()
    }

    /// Takes back the snapshot just written, as the state the next
    /// interval is compared with.
    pub fn keep(&mut self, snap: CtprofSnapshot) {
        self.counts.clear();
        for t in &snap.threads {
            *self.counts.entry(t.tgid).or_insert(0) += 1;
        }
        self.prev = snap.threads.into_iter().map(|t| (t.tid, t)).collect();
        self.fds.retain(|tid, _| self.prev.contains_key(tid));
    }

    /// schedstat's three counters, read through a kept descriptor.
    fn schedstat(&mut self, tgid: u32, tid: u32) -> Option<(u64, u64, u64)> {
        let mut buf = [0u8; 128];
        let n = if let Some(f) = self.fds.get(&tid) {
            f.read_at(&mut buf, 0).ok()
        } else {
            let root = self.opts.proc_root.display();
            let f = File::open(format!("{root}/{tgid}/task/{tid}/schedstat")).ok()?;
            let n = f.read_at(&mut buf, 0).ok();
            if self.fds.len() < self.fd_budget {
                self.fds.insert(tid, f);
            }
            n
        };
        let Some(n) = n.filter(|&n| n > 0) else {
            self.fds.remove(&tid);
            return None;
        };
        let s = parse_schedstat(std::str::from_utf8(&buf[..n]).ok()?)?;
        Some((s.cpu_time_ns, s.run_delay_ns, s.run_count))
    }

    /// Splits the listing into threads to re-read and threads unchanged.
    fn triage(&mut self, listed: &[(u32, u32)]) -> (Vec<(u32, u32)>, Vec<u32>) {
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for &(tgid, _) in listed {
            *counts.entry(tgid).or_insert(0) += 1;
        }
        let mut active: HashSet<u32> = counts
            .iter()
            .filter(|(tgid, n)| self.counts.get(tgid) != Some(n))
            .map(|(tgid, _)| *tgid)
            .collect();
        let mut changed = HashSet::new();
        for &(tgid, tid) in listed {
            let now = self.schedstat(tgid, tid);
            let same = self.prev.get(&tid).is_some_and(|p| {
                p.tgid == tgid
                    && !p.unavailable.contains_key(&Source::Schedstat)
                    && now == Some((p.run_time_ns.0, p.wait_time_ns.0, p.timeslices.0))
            });
            if !same {
                changed.insert(tid);
                active.insert(tgid);
            }
        }
        let (mut reread, mut reuse) = (Vec::new(), Vec::new());
        for &(tgid, tid) in listed {
            if changed.contains(&tid) || (tid == tgid && active.contains(&tgid)) {
                reread.push((tgid, tid));
            } else {
                reuse.push(tid);
            }
        }
        (reread, reuse)
    }

    fn incremental(&mut self) -> CtprofSnapshot {
        let started = Instant::now();
        let mut snap = CtprofSnapshot {
            threads: Vec::new(),
            exited: Vec::new(),
            ..self.full.clone()
        };
        snap.captured_at_unix_ns = unix_ns();
        let listed = list_threads(&self.opts.proc_root);
        let (reread, reuse) = self.triage(&listed);
        let opts = CaptureOptions {
            workers: 1,
            ..self.opts.clone()
        };
        let (mut fresh, tally, ts_unavailable) = read_listed(&opts, &reread, false);
        let host_wide = self.full.capabilities.as_ref().map(|c| &c.unavailable);
        for t in &mut fresh {
            if let Some(caps) = host_wide {
                t.unavailable.retain(|s, _| !caps.contains_key(s));
            }
            // jemalloc counters and smaps_rollup are read at full
            // captures only.
            if let Some(o) = self.prev.get(&t.tid).filter(|o| o.key() == t.key()) {
                t.allocated_bytes = o.allocated_bytes;
                t.deallocated_bytes = o.deallocated_bytes;
                t.smaps_rollup_kb.clone_from(&o.smaps_rollup_kb);
                if let Some(why) = o.unavailable.get(&Source::SmapsRollup) {
                    t.unavailable.insert(Source::SmapsRollup, *why);
                }
            }
        }
        self.fresh = fresh.iter().map(|t| t.tid).collect();
        snap.threads = reuse
            .iter()
            .filter_map(|tid| self.prev.remove(tid))
            .chain(fresh)
            .collect();
        snap.threads.sort_unstable_by_key(|t| (t.tgid, t.tid));
        self.old = std::mem::take(&mut self.prev);
        snap.probe_summary = Some(tally.probe_summary(listed.len() as u64));
        snap.parse_summary = Some(tally.parse_summary());
        let mut ts = tally.taskstats_summary();
        ts.unavailable = ts_unavailable;
        ts.delayacct_enabled = runq_kernel::taskstats::delayacct_enabled();
        snap.taskstats_summary = Some(ts);
        snap.psi = runq_kernel::psi::read_host_psi(&self.opts.proc_root);
        snap.capture_duration_ns = started.elapsed().as_nanos() as u64;
        snap
    }
}
