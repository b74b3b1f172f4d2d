//! The host monitor's thread: it samples `sched/debug` every
//! [`HOST_INTERVAL`], or less often when a read costs more than 1% of a
//! CPU (the dump lists every task, per CPU: with 2,000 tasks a read costs
//! ~20 ms). Its own thread, raised like the parent (SCHED_FIFO 1 when it
//! may), is not starved among many workers and keeps a slow read from
//! delaying the run loop; the run's end takes what it has and does
//! not wait for a read under way. The thread mounts debugfs, when it must,
//! in a mount namespace of its own: the host never sees that mount.
//! The runnable-wait probe, when given, starts with the run and is read
//! once at its end, on the run's thread.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use runq_kernel::sched_debug::SchedDebug;
use std::time::{Duration, Instant};

use runq_kernel::sched_ext::{read_events, read_sched_ext, SchedExtSysfs};

use super::host::{
    summarize, HostSchedExt, HostSeries, RunnableWait, RunnableWaitProbe, HOST_INTERVAL,
};

/// A runnable-wait probe, or why there is none.
pub(crate) type WaitProbe = Result<Box<dyn RunnableWaitProbe>, String>;

/// Why a run with the source has no sample.
const NO_READ_ENDED: &str = "no read of sched/debug ended during the run: \
     the monitor's thread waits its turn among the runnable tasks";

/// A read may cost this share of the time between reads, at most.
const MAX_COST_SHARE: u32 = 100;

/// How long the thread sleeps between looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(25);

/// sched_ext's sysfs values at the start of the run.
#[derive(Debug)]
struct ExtStart {
    sysfs: SchedExtSysfs,
    events: Option<BTreeMap<String, u64>>,
}

/// What the thread and the run share.
#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    series: Mutex<HostSeries>,
}

/// Samples the host during a run, on its own thread.
pub(crate) struct HostMonitor {
    shared: Arc<Shared>,
    ext_start: Option<ExtStart>,
    wait: WaitProbe,
}

impl HostMonitor {
    /// A monitor, with sched_ext's starting values and the runnable-wait
    /// probe (or why there is none).
    pub(crate) fn new(wait: WaitProbe) -> HostMonitor {
        let sys = Path::new("/sys");
        HostMonitor {
            shared: Arc::default(),
            ext_start: read_sched_ext(sys).map(|sysfs| ExtStart {
                sysfs,
                events: read_events(sys),
            }),
            wait,
        }
    }

    /// Starts the thread, which opens `sched/debug` (mounting debugfs in
    /// its own mount namespace when it may) and samples; sample times
    /// count from `start`.
    pub(crate) fn begin(&mut self, start: Instant) {
        if let Ok(probe) = &mut self.wait {
            if let Err(why) = probe.begin() {
                self.wait = Err(why);
            }
        }
        match &self.wait {
            Ok(probe) => log::info!("host monitor: runnable waits from {}", probe.source()),
            Err(why) => log::info!("host monitor: no runnable-wait figures: {why}"),
        }
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("runq-host".into())
            .spawn(move || match runq_kernel::sched_debug::open() {
                Ok(debug) => {
                    log::info!("host monitor: sampling debugfs sched/debug");
                    // Ahead of any crowd of workers, as the parent is while
                    // it starts them: it never spins, and its reads are
                    // held to 1% of a CPU.
                    let _boost = crate::spawn::boost::Boost::raise();
                    lock(&shared).source = Some("debugfs sched/debug".into());
                    sample_until_stopped(debug, &shared, start);
                }
                Err(why) => {
                    log::info!("host monitor: no run-queue samples: {why}");
                    lock(&shared).unavailable = Some(why);
                }
            });
        if let Err(e) = spawned {
            self.lock().unavailable = Some(format!("no monitor thread: {e}"));
        }
    }

    fn lock(&self) -> MutexGuard<'_, HostSeries> {
        lock(&self.shared)
    }

    /// The record of the run: the samples so far, their summary, the
    /// runnable waits and sched_ext's end values. The thread stops at its
    /// next look, a read under way not waited for.
    pub(crate) fn finish(mut self) -> HostSeries {
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut s = self.lock().clone();
        let read = match &mut self.wait {
            Ok(probe) => probe.read().map(|f| RunnableWait::new(probe.source(), f)),
            Err(why) => Err(why.clone()),
        };
        match read {
            Ok(wait) => s.runnable_wait = Some(wait),
            Err(why) => s.longest_runnable_wait_unavailable = Some(why),
        }
        if s.unavailable.is_none() && s.at_ns.is_empty() && s.stopped.is_none() {
            s.stopped = Some(NO_READ_ENDED.into());
        }
        s.summary = summarize(&s.at_ns, &s.nr_running);
        let sys = Path::new("/sys");
        s.sched_ext = self.ext_start.and_then(|start| {
            let end = read_sched_ext(sys)?;
            Some(HostSchedExt {
                nr_rejected: end.nr_rejected.saturating_sub(start.sysfs.nr_rejected),
                enabled: end.enable_seq.saturating_sub(start.sysfs.enable_seq),
                events: read_events(sys).map(|e| delta(&e, start.events.as_ref())),
                state_start: start.sysfs.state,
                state_end: end.state,
                ops: end.ops,
            })
        });
        s
    }
}

/// The shared series, even after a panic elsewhere.
fn lock(shared: &Shared) -> MutexGuard<'_, HostSeries> {
    shared.series.lock().unwrap_or_else(|p| p.into_inner())
}

/// The thread: a sample, then a sleep of [`HOST_INTERVAL`] or 100 times
/// the read's CPU cost, whichever is longer, until stopped or a read fails.
fn sample_until_stopped(mut debug: SchedDebug, shared: &Shared, start: Instant) {
    let mut next = Duration::ZERO;
    while !shared.stop.load(Ordering::Relaxed) {
        if start.elapsed() < next {
            std::thread::sleep(STOP_POLL.min(next - start.elapsed()));
            continue;
        }
        let t0 = runq_kernel::clock::thread_cpu_ns();
        let at_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let before = current_cpu();
        let read = debug.read_nr_running();
        let me = current_cpu().filter(|c| Some(*c) == before);
        let cost = runq_kernel::clock::thread_cpu_ns().saturating_sub(t0);
        let mut s = lock(shared);
        s.cpu_ns += cost;
        match read {
            Ok(depths) if !depths.is_empty() => push_sample(&mut s, at_ns, &depths, me),
            Ok(_) => s.stopped = Some(format!("no CPU in sched/debug at {at_ns} ns")),
            Err(e) => s.stopped = Some(format!("sched/debug unreadable at {at_ns} ns: {e}")),
        }
        if s.stopped.is_some() {
            return;
        }
        let gap = Duration::from_nanos(cost) * MAX_COST_SHARE;
        next = start.elapsed() + HOST_INTERVAL.max(gap);
    }
}

/// Appends one sample's depths, without the monitor's own thread (on CPU
/// `me` while it read); a sample whose CPUs differ from the first's
/// (hotplug) is left out.
fn push_sample(s: &mut HostSeries, at_ns: u64, depths: &[(u32, u32)], me: Option<u32>) {
    let cpus: Vec<u32> = depths.iter().map(|d| d.0).collect();
    if s.cpus.is_empty() {
        s.cpus = cpus.clone();
    }
    if cpus == s.cpus {
        let row = depths
            .iter()
            .map(|&(c, n)| n - u32::from(me == Some(c) && n > 0));
        s.nr_running.push(row.collect());
        s.at_ns.push(at_ns);
    }
}

/// Counters `end` minus their values in `start` (a counter missing there
/// counts from zero: the scheduler was loaded during the run).
pub(crate) fn delta(
    end: &BTreeMap<String, u64>,
    start: Option<&BTreeMap<String, u64>>,
) -> BTreeMap<String, u64> {
    end.iter()
        .map(|(k, &v)| {
            let v0 = start.and_then(|s| s.get(k)).copied().unwrap_or(0);
            (k.clone(), v.saturating_sub(v0))
        })
        .collect()
}

/// The CPU this thread runs on now.
fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}
