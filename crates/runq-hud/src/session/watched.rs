//! The watched threads: their names, when each was added, and their CPU
//! time over the session.

use std::collections::BTreeMap;
use std::path::Path;

use runq_kernel::clock::monotonic_ns;
use runq_kernel::schedstat::read_schedstat;

use super::{HudError, Options};
use crate::bpf::Probe;
use crate::discovery::{members, threads, Method, Thread};

/// On-CPU ns of a thread, from /proc/PID/task/TID/schedstat.
fn cpu_ns(proc_root: &Path, pid: u32, tid: u32) -> u64 {
    read_schedstat(&proc_root.join(format!("{pid}/task/{tid}/schedstat")))
        .map_or(0, |s| s.cpu_time_ns)
}

pub(super) struct Watched {
    pub(super) method: Method,
    pub(super) comms: BTreeMap<u32, String>,
    pub(super) cpu_start: BTreeMap<u32, u64>,
    /// The last on-CPU reading of each thread while the target lived (the
    /// report keeps it when the target exits).
    pub(super) cpu_last: BTreeMap<u32, u64>,
    /// When each thread joined the probe's filter.
    since: WatchedSince,
}

/// When each thread joined the probe's filter (CLOCK_MONOTONIC ns, the
/// clock of the probe's events): an interval that began before it cannot
/// have been seen from its start. Discovery watches every thread of the
/// target for a while and keeps some: a thread's switch-out recorded then
/// (its wait or sleep already going on) would otherwise come back as an
/// interval as long as the whole of discovery.
#[derive(Debug, Default)]
struct WatchedSince(BTreeMap<u32, u64>);

impl WatchedSince {
    /// `tid` is watched from `now_ns` (a thread watched already keeps its
    /// first time).
    fn start(&mut self, tid: u32, now_ns: u64) {
        self.0.entry(tid).or_insert(now_ns);
    }

    /// True when an interval of `tid` that began at `start_ns` began
    /// before the thread was watched, or the thread is not watched.
    fn began_before(&self, tid: u32, start_ns: u64) -> bool {
        self.0.get(&tid).is_none_or(|t| start_ns < *t)
    }
}

impl Watched {
    pub(super) fn new(method: Method) -> Self {
        Watched {
            method,
            comms: BTreeMap::new(),
            cpu_start: BTreeMap::new(),
            cpu_last: BTreeMap::new(),
            since: WatchedSince::default(),
        }
    }

    /// Reads every watched thread's on-CPU time now (a thread that has
    /// gone keeps its last reading).
    pub(super) fn read_cpu(&mut self, opts: &Options) {
        for tid in self.comms.keys() {
            let path = opts
                .proc_root
                .join(format!("{}/task/{tid}/schedstat", opts.pid));
            if let Some(s) = read_schedstat(&path) {
                self.cpu_last.insert(*tid, s.cpu_time_ns);
            }
        }
    }

    /// True when an interval that began at `start_ns` on `tid` began
    /// before the thread was watched: the probe cannot have seen where it
    /// started (a switch-out kept from discovery's sampling, or one before
    /// the probes were attached), so it is no finding.
    pub(super) fn began_unwatched(&self, tid: u32, start_ns: u64) -> bool {
        self.since.began_before(tid, start_ns)
    }

    /// The watched threads.
    pub(super) fn tids(&self) -> Vec<u32> {
        self.comms.keys().copied().collect()
    }

    /// Adds threads to the set and to the probe's filter.
    pub(super) fn add(
        &mut self,
        opts: &Options,
        all: &[Thread],
        tids: &[u32],
        probe: &mut Probe,
    ) -> Result<(), HudError> {
        let new: Vec<u32> = tids
            .iter()
            .copied()
            .filter(|t| !self.comms.contains_key(t))
            .collect();
        for t in &new {
            let comm = all
                .iter()
                .find(|x| x.tid == *t)
                .map(|x| x.comm.clone())
                .unwrap_or_default();
            self.comms.insert(*t, comm);
            let now = cpu_ns(&opts.proc_root, opts.pid, *t);
            self.cpu_start.insert(*t, now);
            self.cpu_last.insert(*t, now);
            self.since.start(*t, monotonic_ns());
        }
        probe.watch(&new)?;
        Ok(())
    }

    /// Finds new threads that match the discovery method (a growing
    /// runtime) and adds them.
    pub(super) fn refresh(&mut self, opts: &Options, probe: &mut Probe) -> Result<(), HudError> {
        let all = threads(&opts.proc_root, opts.pid)?;
        let tids = members(&all, &self.method);
        self.add(opts, &all, &tids, probe)
    }
}

#[cfg(test)]
mod tests {
    use super::WatchedSince;

    #[test]
    fn an_interval_counts_only_from_when_its_thread_was_watched() {
        let mut since = WatchedSince::default();
        // Discovery sampled thread 7 from t=100; the session kept it at
        // t=600: a run-queue wait that began at 350, while discovery
        // narrowed its filter, is left out; one from 600 on is not.
        since.start(7, 600);
        assert!(since.began_before(7, 350));
        assert!(!since.began_before(7, 600));
        assert!(!since.began_before(7, 900));
        // A thread never watched has no interval of its own.
        assert!(since.began_before(8, 900));
        // Watched again later (a rediscovery), it keeps its first time.
        since.start(7, 2_000);
        assert!(!since.began_before(7, 900));
    }
}
