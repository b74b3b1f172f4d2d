//! The watched threads: their names, when each was added, and their CPU
//! time over the session. Threads that appear later are watched when
//! their name matches the discovery method's; with workers found by
//! their stacks, one of another name is watched on probation, for its
//! stacks to show whether it runs a task loop (a runtime started late).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use runq_kernel::clock::monotonic_ns;
use runq_kernel::schedstat::read_schedstat;

use super::{HudError, Options};
use crate::bpf::Probe;
use crate::detect::roles::Roles;
use crate::discovery::{members, threads, Method, Thread};

/// How long a thread that appeared after discovery, under a name the
/// discovery method does not match, is watched for its stacks to show a
/// runtime's task loop; it leaves the filter then unless it showed one
/// (or had a finding).
const PROBATION: Duration = Duration::from_secs(2);

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
    /// Every thread of the target seen so far.
    known: BTreeSet<u32>,
    /// Threads watched on probation, since when.
    probation: BTreeMap<u32, Instant>,
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
            known: BTreeSet::new(),
            probation: BTreeMap::new(),
        }
    }

    /// The target's threads now: at discovery, those it did not choose are
    /// no newcomers later; at each refresh, the threads a later one
    /// compares with (only the living: a thread that exited is forgotten).
    pub(super) fn know(&mut self, all: &[Thread]) {
        self.known = all.iter().map(|t| t.tid).collect();
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
    /// runtime) and adds them; with workers found by their stacks, adds
    /// the other newcomers on probation, and removes those whose
    /// probation ended without a task loop (`roles` says).
    pub(super) fn refresh(
        &mut self,
        opts: &Options,
        probe: &mut Probe,
        roles: &Roles,
    ) -> Result<(), HudError> {
        let all = threads(&opts.proc_root, opts.pid)?;
        let mut tids = members(&all, &self.method);
        if !self.method.by_names() {
            let now = Instant::now();
            for t in &all {
                if !self.known.contains(&t.tid) && !tids.contains(&t.tid) {
                    self.probation.insert(t.tid, now);
                    tids.push(t.tid);
                }
            }
            let ended = ended_probation(&mut self.probation, now, |t| roles.listed(t));
            if !ended.is_empty() {
                log::debug!("hud: threads {ended:?} showed no task loop on probation; unwatched");
            }
            self.remove(&ended, probe)?;
        }
        self.forget_exited(&all, probe, |t| roles.listed(t))?;
        self.know(&all);
        self.add(opts, &all, &tids, probe)
    }

    /// Forgets the watched threads that are not among `all` (they exited),
    /// but those to `keep` (a listed worker keeps its figures for the
    /// report, until the end of its window with `--window`): what hud
    /// holds per thread stays as large as the target's threads, however
    /// many come and go.
    pub(super) fn forget_exited(
        &mut self,
        all: &[Thread],
        probe: &mut Probe,
        keep: impl Fn(u32) -> bool,
    ) -> Result<(), HudError> {
        let living: BTreeSet<u32> = all.iter().map(|t| t.tid).collect();
        let gone = exited(self.comms.keys().copied(), &living, keep);
        self.probation.retain(|t, _| living.contains(t));
        self.remove(&gone, probe)
    }

    /// Takes threads out of the set and the probe's filter.
    fn remove(&mut self, tids: &[u32], probe: &mut Probe) -> Result<(), HudError> {
        if tids.is_empty() {
            return Ok(());
        }
        for t in tids {
            self.comms.remove(t);
            self.cpu_start.remove(t);
            self.cpu_last.remove(t);
            self.since.0.remove(t);
        }
        probe.unwatch(tids)?;
        Ok(())
    }
}

/// The `watched` threads not `living` (they exited), but those to `keep`.
fn exited(
    watched: impl Iterator<Item = u32>,
    living: &BTreeSet<u32>,
    keep: impl Fn(u32) -> bool,
) -> Vec<u32> {
    watched
        .filter(|t| !living.contains(t) && !keep(*t))
        .collect()
}

/// Ends the probation of the threads watched on it for [`PROBATION`] by
/// `now`; returns those of them that are not `listed` as workers.
fn ended_probation(
    probation: &mut BTreeMap<u32, Instant>,
    now: Instant,
    listed: impl Fn(u32) -> bool,
) -> Vec<u32> {
    let ended: Vec<u32> = probation
        .iter()
        .filter(|(_, since)| now.duration_since(**since) >= PROBATION)
        .map(|(t, _)| *t)
        .collect();
    for t in &ended {
        probation.remove(t);
    }
    ended.into_iter().filter(|t| !listed(*t)).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    use super::{ended_probation, exited, WatchedSince, PROBATION};

    #[test]
    fn threads_that_exited_are_forgotten_but_those_kept() {
        let living = [1, 2, 5].into_iter().collect();
        // 3 and 4 exited; 4 is a listed worker whose window is not over.
        let gone = exited([1, 2, 3, 4].into_iter(), &living, |t| t == 4);
        assert_eq!(gone, [3]);
        assert_eq!(exited([3, 4].into_iter(), &living, |_| false), [3, 4]);
    }

    #[test]
    fn a_newcomer_leaves_at_the_end_of_its_probation_unless_it_ran_a_loop() {
        let start = Instant::now();
        let mut probation = BTreeMap::from([(7, start), (8, start), (9, start + PROBATION)]);
        let listed = |t: u32| t == 8;
        let early = start + PROBATION - Duration::from_millis(1);
        assert!(ended_probation(&mut probation, early, listed).is_empty());
        assert_eq!(probation.len(), 3);
        // 7 and 8 are through: 7 showed no loop and leaves, 8 stays as a
        // worker; 9 came later and waits.
        assert_eq!(
            ended_probation(&mut probation, start + PROBATION, listed),
            [7]
        );
        assert_eq!(probation.keys().copied().collect::<Vec<_>>(), [9]);
    }

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
