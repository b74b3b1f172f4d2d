//! The per-thread walk: reads a thread's procfs files into a
//! [`ThreadState`], counting every missing or malformed source.

use std::io::Write;
use std::os::fd::OwnedFd;

use runq_kernel::proc::cgroup_file::parse_v2_path;
use runq_kernel::proc::stat::policy_name;
use runq_kernel::proc::{
    parse_io, parse_sched, parse_smaps_rollup, parse_stat, parse_status, FileReader,
};
use runq_kernel::schedstat::parse_schedstat;
use runq_kernel::taskstats::{QueryError, Taskstats, TaskstatsClient};

use runq_kernel::proc::reader::ReadError;

use super::cgroup_share::SharedCgroup;
use super::tally::{Source, Tally};
use crate::avail::{Reason, Source as Src};
use crate::metric_types::*;
use crate::model::ThreadState;

/// Why a read failed, as an availability reason: a file missing from a
/// task that has since exited is the thread's exit, not the kernel's lack.
/// `dir` is the process's `task` directory, `tid_dir` the thread's `<tid>/`.
fn reason(e: &ReadError, dir: &OwnedFd, tid_dir: &[u8]) -> Reason {
    match e {
        ReadError::Missing if task_gone(dir, tid_dir) => Reason::ThreadGone,
        ReadError::Missing => Reason::Absent,
        ReadError::Denied => Reason::Eperm,
        ReadError::Other(_) => Reason::Error,
    }
}

/// True when the thread `tid_dir` (`<tid>/`) of the process whose `task`
/// directory `dir` is has exited (its `stat`, which every live task has,
/// is gone).
fn task_gone(dir: &OwnedFd, tid_dir: &[u8]) -> bool {
    use std::os::fd::AsRawFd;
    let mut name = tid_dir.to_vec();
    name.extend_from_slice(b"stat\0");
    // SAFETY: a valid directory fd and a NUL-terminated name.
    unsafe { libc::faccessat(dir.as_raw_fd(), name.as_ptr().cast(), libc::F_OK, 0) != 0 }
}

/// Reused state of one capture worker.
#[derive(Debug)]
pub struct Worker {
    reader: FileReader,
    /// The procfs root.
    root: Vec<u8>,
    /// The `task` directory of the last process read, kept open for its
    /// next thread: each file opens relative to it as `<tid>/<file>`.
    task_dir: Option<(u32, OwnedFd)>,
    /// `<tid>/` of the thread being read.
    tid_dir: Vec<u8>,
    /// Counts of outcomes.
    pub tally: Tally,
    /// Taskstats socket, when taskstats is wanted and available.
    pub taskstats: Option<TaskstatsClient>,
    /// The last process's cgroup, shared by its threads when it can be.
    pub cgroup: SharedCgroup,
    /// Set after the first `EPERM` from taskstats.
    taskstats_denied: bool,
    /// True when reading the live `/proc` (affinity then comes from
    /// `sched_getaffinity`); false for a synthetic tree.
    pub live: bool,
    /// Read leaders' `smaps_rollup` (a walk of every mapping: a recording
    /// reads it at full captures only).
    pub smaps: bool,
}

impl Worker {
    /// A worker reading under `proc_root`.
    pub fn new(proc_root: &[u8], taskstats: Option<TaskstatsClient>) -> Self {
        Worker {
            reader: FileReader::new(),
            root: proc_root.to_vec(),
            task_dir: None,
            tid_dir: Vec::with_capacity(16),
            tally: Tally::default(),
            taskstats,
            cgroup: SharedCgroup::default(),
            taskstats_denied: false,
            live: proc_root == b"/proc",
            smaps: true,
        }
    }

    /// Captures one thread; `None` when it exited before its stat was read.
    pub fn capture(&mut self, tgid: u32, tid: u32) -> Option<ThreadState> {
        let dir = match self.task_dir.take() {
            Some((last, dir)) if last == tgid => dir,
            _ => {
                let task = format!("/{tgid}/task");
                let Ok(dir) = self.reader.open_dir(&[&self.root, task.as_bytes()]) else {
                    self.tally.vanished += 1;
                    return None;
                };
                dir
            }
        };
        self.tid_dir.clear();
        let _ = write!(self.tid_dir, "{tid}/");
        let t = self.capture_in(&dir, tgid, tid);
        self.task_dir = Some((tgid, dir));
        t
    }

    /// Captures thread `tid` of the process whose `task` directory is `dir`.
    fn capture_in(&mut self, dir: &OwnedFd, tgid: u32, tid: u32) -> Option<ThreadState> {
        let mut t = ThreadState {
            tid,
            tgid,
            ..ThreadState::default()
        };
        if !self.read_stat(dir, &mut t) {
            self.tally.vanished += 1;
            return None;
        }
        let ts = self.query_taskstats(&mut t);
        self.read_schedstat(dir, &mut t, ts.as_ref());
        self.read_sched(dir, &mut t);
        self.read_io(dir, &mut t);
        self.read_cgroup(dir, &mut t);
        if self.live {
            read_affinity(&mut t, &mut self.tally);
        }
        if tid == tgid && self.smaps {
            let r = self.reader.read_at(dir, &[&self.tid_dir, b"smaps_rollup"]);
            self.tally.read(Source::SmapsRollup, &r);
            match r {
                Ok(text) => t.smaps_rollup_kb = parse_smaps_rollup(text),
                // Denied is what differs between a root and a non-root
                // capture; a missing file is a kernel thread or an exit.
                Err(ReadError::Denied) => t.mark(Src::SmapsRollup, Reason::Eperm),
                Err(_) => {}
            }
        }
        Some(t)
    }

    /// Queries taskstats for `t` (when wanted and allowed); the answer
    /// when there was one.
    fn query_taskstats(&mut self, t: &mut ThreadState) -> Option<Taskstats> {
        if let Some(client) = self.taskstats.as_mut() {
            let r = client.query(t.tid);
            self.tally.taskstats(&r);
            match r {
                Ok(ts) => {
                    apply_taskstats(t, &ts);
                    return Some(ts);
                }
                // The family is admin-only: every later query would be
                // refused too, so count them without asking.
                Err(QueryError::Permission) => {
                    self.taskstats = None;
                    self.taskstats_denied = true;
                    mark_taskstats(t, Reason::Eperm);
                }
                Err(QueryError::NoTask) => mark_taskstats(t, Reason::ThreadGone),
                Err(QueryError::Other(_)) => mark_taskstats(t, Reason::Error),
            }
        } else if self.taskstats_denied {
            self.tally.ts_eperm += 1;
            mark_taskstats(t, Reason::Eperm);
        } else {
            mark_taskstats(t, Reason::NotQueried);
        }
        None
    }

    fn read_stat(&mut self, dir: &OwnedFd, t: &mut ThreadState) -> bool {
        let r = self.reader.read_at(dir, &[&self.tid_dir, b"stat"]);
        self.tally.read(Source::Stat, &r);
        let Ok(text) = r else { return false };
        let Some(s) = parse_stat(text) else {
            self.tally.parse_failed(Source::Stat);
            return false;
        };
        t.comm = s.comm;
        t.state = s.state;
        t.minflt = MonotonicCount(s.minflt);
        t.majflt = MonotonicCount(s.majflt);
        t.utime_clock_ticks = ClockTicks(s.utime);
        t.stime_clock_ticks = ClockTicks(s.stime);
        t.priority = OrdinalI32(s.priority as i32);
        t.nice = OrdinalI32(s.nice as i32);
        if t.tid == t.tgid {
            t.nr_threads = GaugeCount(s.num_threads);
        }
        t.start_time_clock_ticks = s.start_time;
        t.processor = OrdinalI32(s.processor as i32);
        t.rt_priority = OrdinalU32(s.rt_priority as u32);
        t.policy = CategoricalString(policy_name(s.policy).to_string());
        true
    }

    /// The schedstat figures, from taskstats' CPU figures when they were
    /// read (the same three scheduler fields: `sum_exec_runtime`,
    /// `run_delay`, `pcount`; a zero run count, as with delay accounting
    /// off on kernels that then leave them out, reads the file instead),
    /// else from `/proc/<tid>/schedstat`.
    fn read_schedstat(&mut self, dir: &OwnedFd, t: &mut ThreadState, ts: Option<&Taskstats>) {
        if let Some(ts) = ts.filter(|ts| ts.cpu.count > 0) {
            t.run_time_ns = MonotonicNs(ts.run_virtual_ns);
            t.wait_time_ns = MonotonicNs(ts.cpu.total_ns);
            t.timeslices = MonotonicCount(ts.cpu.count);
            self.tally.read(Source::Schedstat, &Ok(()));
            return;
        }
        let r = self.reader.read_at(dir, &[&self.tid_dir, b"schedstat"]);
        self.tally.read(Source::Schedstat, &r);
        match r {
            Ok(text) => match std::str::from_utf8(text).ok().and_then(parse_schedstat) {
                Some(s) => {
                    t.run_time_ns = MonotonicNs(s.cpu_time_ns);
                    t.wait_time_ns = MonotonicNs(s.run_delay_ns);
                    t.timeslices = MonotonicCount(s.run_count);
                }
                None => {
                    self.tally.parse_failed(Source::Schedstat);
                    t.mark(Src::Schedstat, Reason::Error);
                }
            },
            Err(e) => t.mark(Src::Schedstat, reason(&e, dir, &self.tid_dir)),
        }
    }

    fn read_sched(&mut self, dir: &OwnedFd, t: &mut ThreadState) {
        let r = self.reader.read_at(dir, &[&self.tid_dir, b"sched"]);
        self.tally.read(Source::Sched, &r);
        let text = match r {
            Ok(text) => text,
            Err(e) => {
                let why = reason(&e, dir, &self.tid_dir);
                t.mark(Src::Sched, why);
                t.mark(Src::Schedstats, why);
                return self.read_status(dir, t);
            }
        };
        let s = parse_sched(text);
        if s.nr_switches.is_none() && s.sum_exec_runtime.is_none() {
            self.tally.parse_failed(Source::Sched);
            t.mark(Src::Sched, Reason::Error);
            t.mark(Src::Schedstats, Reason::Error);
            return self.read_status(dir, t);
        }
        if s.nr_wakeups.is_none() {
            self.tally.sched_without_schedstats += 1;
            t.mark(Src::Schedstats, Reason::NoSchedstats);
        }
        let c = |v: Option<u64>| MonotonicCount(v.unwrap_or(0));
        let ns = |v: Option<u64>| MonotonicNs(v.unwrap_or(0));
        let pk = |v: Option<u64>| PeakNs(v.unwrap_or(0));
        t.voluntary_csw = c(s.nr_voluntary_switches);
        t.nonvoluntary_csw = c(s.nr_involuntary_switches);
        t.nr_wakeups = c(s.nr_wakeups);
        t.nr_wakeups_local = c(s.nr_wakeups_local);
        t.nr_wakeups_remote = c(s.nr_wakeups_remote);
        t.nr_wakeups_sync = c(s.nr_wakeups_sync);
        t.nr_wakeups_migrate = c(s.nr_wakeups_migrate);
        t.nr_wakeups_affine = c(s.nr_wakeups_affine);
        t.nr_wakeups_affine_attempts = c(s.nr_wakeups_affine_attempts);
        t.nr_migrations = c(s.nr_migrations);
        t.nr_forced_migrations = c(s.nr_forced_migrations);
        t.nr_migrations_cold = DeadCounter(s.nr_migrations_cold.unwrap_or(0));
        t.nr_failed_migrations_affine = c(s.nr_failed_migrations_affine);
        t.nr_failed_migrations_running = c(s.nr_failed_migrations_running);
        t.nr_failed_migrations_hot = c(s.nr_failed_migrations_hot);
        t.wait_sum = ns(s.wait_sum);
        t.wait_count = c(s.wait_count);
        // The kernel's sleep sum includes block time; keep only true sleep.
        let sleep = s.sum_sleep_runtime.unwrap_or(0);
        t.voluntary_sleep_ns = MonotonicNs(sleep.saturating_sub(s.sum_block_runtime.unwrap_or(0)));
        t.block_sum = ns(s.sum_block_runtime);
        t.iowait_sum = ns(s.iowait_sum);
        t.iowait_count = c(s.iowait_count);
        t.core_forceidle_sum = ns(s.core_forceidle_sum);
        t.wait_max = pk(s.wait_max);
        t.sleep_max = pk(s.sleep_max);
        t.block_max = pk(s.block_max);
        t.exec_max = pk(s.exec_max);
        t.slice_max = pk(s.slice_max);
        t.fair_slice_ns = GaugeNs(s.slice.unwrap_or(0));
        t.ext_enabled = s.ext_enabled == Some(1);
    }

    fn read_status(&mut self, dir: &OwnedFd, t: &mut ThreadState) {
        let r = self.reader.read_at(dir, &[&self.tid_dir, b"status"]);
        self.tally.read(Source::Status, &r);
        if let Ok(text) = r {
            let s = parse_status(text);
            t.voluntary_csw = MonotonicCount(s.voluntary_ctxt_switches.unwrap_or(0));
            t.nonvoluntary_csw = MonotonicCount(s.nonvoluntary_ctxt_switches.unwrap_or(0));
        }
    }

    fn read_io(&mut self, dir: &OwnedFd, t: &mut ThreadState) {
        let r = self.reader.read_at(dir, &[&self.tid_dir, b"io"]);
        self.tally.read(Source::Io, &r);
        if let Err(e) = &r {
            t.mark(Src::Io, reason(e, dir, &self.tid_dir));
        }
        if let Ok(text) = r {
            let io = parse_io(text);
            if io.rchar.is_none() {
                self.tally.parse_failed(Source::Io);
                t.mark(Src::Io, Reason::Error);
            }
            t.rchar = Bytes(io.rchar.unwrap_or(0));
            t.wchar = Bytes(io.wchar.unwrap_or(0));
            t.syscr = MonotonicCount(io.syscr.unwrap_or(0));
            t.syscw = MonotonicCount(io.syscw.unwrap_or(0));
            t.read_bytes = Bytes(io.read_bytes.unwrap_or(0));
            t.write_bytes = Bytes(io.write_bytes.unwrap_or(0));
            t.cancelled_write_bytes = Bytes(io.cancelled_write_bytes.unwrap_or(0));
        }
    }

    fn read_cgroup(&mut self, dir: &OwnedFd, t: &mut ThreadState) {
        if let Some(path) = self.cgroup.shared(t.tgid) {
            // Known without a read: counted as one.
            t.cgroup = path.to_string();
            self.tally.read(Source::Cgroup, &Ok(()));
            return;
        }
        let r = self.reader.read_at(dir, &[&self.tid_dir, b"cgroup"]);
        self.tally.read(Source::Cgroup, &r);
        match r.map(parse_v2_path) {
            Ok(Some(p)) => t.cgroup = self.cgroup.read(t.tgid, p),
            Ok(None) => {
                self.tally.parse_failed(Source::Cgroup);
                self.cgroup.unread();
            }
            Err(_) => self.cgroup.unread(),
        }
    }
}

fn read_affinity(t: &mut ThreadState, tally: &mut Tally) {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: set is a valid out-buffer of `size` bytes.
    let rc = unsafe { libc::sched_getaffinity(t.tid as libc::pid_t, size, &mut set) };
    let r: Result<(), runq_kernel::proc::reader::ReadError> = if rc == 0 {
        Ok(())
    } else {
        Err(runq_kernel::proc::reader::ReadError::Missing)
    };
    tally.read(Source::Affinity, &r);
    if rc == 0 {
        let max = (size * 8) as u32;
        // SAFETY: CPU_COUNT reads the set within its bounds.
        let count = unsafe { libc::CPU_COUNT(&set) } as usize;
        // SAFETY: CPU_ISSET reads the set within its bounds. The scan stops
        // at the last CPU in the set, not at the set's end.
        let cpus = (0..max).filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) });
        t.cpu_affinity = CpuSet(cpus.take(count).collect());
    }
}

fn mark_taskstats(t: &mut ThreadState, why: Reason) {
    t.mark(Src::Taskstats, why);
    t.mark(Src::Delayacct, why);
}

/// Copies the taskstats delay and watermark fields into a thread.
pub fn apply_taskstats(t: &mut ThreadState, ts: &Taskstats) {
    macro_rules! bucket {
        ($b:ident, $count:ident, $total:ident, $max:ident, $min:ident) => {
            t.$count = MonotonicCount(ts.$b.count);
            t.$total = MonotonicNs(ts.$b.total_ns);
            t.$max = PeakNs(ts.$b.max_ns);
            t.$min = PeakNs(ts.$b.min_ns);
        };
    }
    bucket!(
        cpu,
        cpu_delay_count,
        cpu_delay_total_ns,
        cpu_delay_max_ns,
        cpu_delay_min_ns
    );
    bucket!(
        blkio,
        blkio_delay_count,
        blkio_delay_total_ns,
        blkio_delay_max_ns,
        blkio_delay_min_ns
    );
    bucket!(
        swapin,
        swapin_delay_count,
        swapin_delay_total_ns,
        swapin_delay_max_ns,
        swapin_delay_min_ns
    );
    bucket!(
        freepages,
        freepages_delay_count,
        freepages_delay_total_ns,
        freepages_delay_max_ns,
        freepages_delay_min_ns
    );
    bucket!(
        thrashing,
        thrashing_delay_count,
        thrashing_delay_total_ns,
        thrashing_delay_max_ns,
        thrashing_delay_min_ns
    );
    bucket!(
        compact,
        compact_delay_count,
        compact_delay_total_ns,
        compact_delay_max_ns,
        compact_delay_min_ns
    );
    bucket!(
        wpcopy,
        wpcopy_delay_count,
        wpcopy_delay_total_ns,
        wpcopy_delay_max_ns,
        wpcopy_delay_min_ns
    );
    bucket!(
        irq,
        irq_delay_count,
        irq_delay_total_ns,
        irq_delay_max_ns,
        irq_delay_min_ns
    );
    t.hiwater_rss_bytes = PeakBytes(ts.hiwater_rss_kb.saturating_mul(1024));
    t.hiwater_vm_bytes = PeakBytes(ts.hiwater_vm_kb.saturating_mul(1024));
}
