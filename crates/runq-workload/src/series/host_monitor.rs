//! The host monitor's thread: it samples `sched/debug` every
//! [`HOST_INTERVAL`], or less often when a read costs more than 1% of a
//! CPU (the dump lists every task, per CPU: with 2,000 tasks a read costs
//! ~20 ms). Its own thread, raised like the parent (SCHED_FIFO 1 when it
//! may), is not starved among many workers and keeps a slow read from
//! delaying the run loop; the run's end takes what it has and does
//! not wait for a read under way. The thread mounts debugfs, when it must,
//! in a mount namespace of its own: the host never sees that mount.
//! With a BPF scheduler enabled at the start, the thread also has the
//! kernel dump sched_ext's state (SysRq-D into a tracefs instance of its
//! own) every [`DUMP_INTERVAL`] or 100 times the dump's cost, for the
//! dispatch queues' depths; the run's end waits up to [`THREAD_EXIT_WAIT`]
//! for the thread to remove that instance.
//! The runnable-wait probe, when given, starts with the run and is read
//! once at its end, on the run's thread.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use runq_kernel::sched_debug::{CpuRq, SchedDebug};
use runq_kernel::sched_ext_dump::DumpReader;
use std::time::{Duration, Instant};

use runq_kernel::sched_ext::{read_events, read_sched_ext, SchedExtSysfs};

use super::host::{
    summarize, HostSchedExt, HostSeries, RunnableWait, RunnableWaitProbe, HOST_INTERVAL,
};
use super::rq_clock::StallTracker;

/// A runnable-wait probe, or why there is none.
pub(crate) type WaitProbe = Result<Box<dyn RunnableWaitProbe>, String>;

/// Why a run with the source has no sample.
const NO_READ_ENDED: &str = "no read of sched/debug ended during the run: \
     the monitor's thread waits its turn among the runnable tasks";

/// A read may cost this share of the time between reads, at most.
const MAX_COST_SHARE: u32 = 100;

/// How long the thread sleeps between looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(25);

/// How often the thread has sched_ext dump its state, at most.
const DUMP_INTERVAL: Duration = Duration::from_secs(2);

/// How long the run's end waits for the thread to end (and remove its
/// tracefs instance).
const THREAD_EXIT_WAIT: Duration = Duration::from_secs(2);

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
    /// Set by the thread as it ends, its tracefs instance removed.
    ended: AtomicBool,
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
        let ext = self
            .ext_start
            .as_ref()
            .is_some_and(|e| e.sysfs.state == "enabled");
        let spawned = std::thread::Builder::new()
            .name("runq-host".into())
            .spawn(move || {
                monitor_thread(&shared, start, ext);
                shared.ended.store(true, Ordering::Release);
            });
        if let Err(e) = spawned {
            self.shared.ended.store(true, Ordering::Release);
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
        let waited = Instant::now();
        while !self.shared.ended.load(Ordering::Acquire) && waited.elapsed() < THREAD_EXIT_WAIT {
            std::thread::sleep(Duration::from_millis(5));
        }
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

/// The thread: opens `sched/debug` (mounting debugfs in its own mount
/// namespace when it must) and, when `ext` (a BPF scheduler enabled at
/// the start), sched_ext's dump; samples until stopped.
fn monitor_thread(shared: &Shared, start: Instant, ext: bool) {
    let debug = match runq_kernel::sched_debug::open() {
        Ok(debug) => {
            log::info!("host monitor: sampling debugfs sched/debug");
            lock(shared).source = Some("debugfs sched/debug".into());
            Some(debug)
        }
        Err(why) => {
            log::info!("host monitor: no run-queue samples: {why}");
            lock(shared).unavailable = Some(why);
            None
        }
    };
    let dump = ext.then(DumpReader::open).and_then(|d| {
        d.map_err(|why| {
            log::info!("host monitor: no sched_ext dumps: {why}");
            lock(shared).dsq_unavailable = Some(why);
        })
        .ok()
    });
    if debug.is_none() && dump.is_none() {
        return;
    }
    // Ahead of any crowd of workers, as the parent is while it starts
    // them: it never spins, and its reads are held to 1% of a CPU.
    let _boost = crate::spawn::boost::Boost::raise();
    sample_until_stopped(debug, dump, shared, start);
}

/// When each source is next due, from the start of the run.
#[derive(Default)]
struct Due {
    debug: Duration,
    dump: Duration,
}

/// A sample of each source that is due, then a sleep until the next is,
/// until stopped or every source has failed. Each source waits
/// [`HOST_INTERVAL`] (the dump [`DUMP_INTERVAL`]) or 100 times its read's
/// CPU cost, whichever is longer.
fn sample_until_stopped(
    mut debug: Option<SchedDebug>,
    mut dump: Option<DumpReader>,
    shared: &Shared,
    start: Instant,
) {
    let mut due = Due::default();
    let mut clocks = StallTracker::default();
    while !shared.stop.load(Ordering::Relaxed) && (debug.is_some() || dump.is_some()) {
        let now = start.elapsed();
        if let Some(d) = debug.as_mut().filter(|_| now >= due.debug) {
            let cost = sample_debug(d, shared, start, &mut clocks);
            due.debug = start.elapsed() + HOST_INTERVAL.max(cost * MAX_COST_SHARE);
            if lock(shared).stopped.is_some() {
                debug = None;
            }
        }
        if let Some(d) = dump.as_mut().filter(|_| now >= due.dump) {
            match sample_dump(d, shared, start) {
                Ok(cost) => due.dump = start.elapsed() + DUMP_INTERVAL.max(cost * MAX_COST_SHARE),
                Err(why) => {
                    lock(shared).dsq_unavailable = Some(why);
                    dump = None;
                }
            }
        }
        let next = match (&debug, &dump) {
            (Some(_), Some(_)) => due.debug.min(due.dump),
            (Some(_), None) => due.debug,
            _ => due.dump,
        };
        std::thread::sleep(STOP_POLL.min(next.saturating_sub(start.elapsed())));
    }
}

/// One read of `sched/debug` into the series; its CPU cost.
fn sample_debug(
    debug: &mut SchedDebug,
    shared: &Shared,
    start: Instant,
    clocks: &mut StallTracker,
) -> Duration {
    let t0 = runq_kernel::clock::thread_cpu_ns();
    let at_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let before = current_cpu();
    let read = debug.read_rqs();
    let me = current_cpu().filter(|c| Some(*c) == before);
    let cost = runq_kernel::clock::thread_cpu_ns().saturating_sub(t0);
    let mut s = lock(shared);
    s.cpu_ns += cost;
    match read {
        Ok(mut rqs) if !rqs.is_empty() => {
            for r in rqs
                .iter_mut()
                .filter(|r| me == Some(r.cpu) && r.nr_running > 0)
            {
                r.nr_running -= 1;
            }
            push_sample(&mut s, at_ns, &rqs);
            if clocks.observe(at_ns, &rqs) {
                s.rq_clock = Some(clocks.clocks().clone());
            } else {
                s.rq_clock_unavailable =
                    Some("this kernel's sched/debug has no per-CPU .clock lines".into());
            }
        }
        Ok(_) => s.stopped = Some(format!("no CPU in sched/debug at {at_ns} ns")),
        Err(e) => s.stopped = Some(format!("sched/debug unreadable at {at_ns} ns: {e}")),
    }
    Duration::from_nanos(cost)
}

/// One sched_ext dump into the series; its CPU cost, or why dumping
/// failed.
fn sample_dump(dump: &mut DumpReader, shared: &Shared, start: Instant) -> Result<Duration, String> {
    let t0 = runq_kernel::clock::thread_cpu_ns();
    let at_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let read = dump.dump();
    let cost = runq_kernel::clock::thread_cpu_ns().saturating_sub(t0);
    let mut s = lock(shared);
    s.cpu_ns += cost;
    match read {
        Ok(Some(d)) => s.dsq.get_or_insert_with(Default::default).add(at_ns, &d),
        Ok(None) => {} // no BPF scheduler enabled at this moment
        Err(e) => return Err(format!("the sched_ext dump failed at {at_ns} ns: {e}")),
    }
    Ok(Duration::from_nanos(cost))
}

/// Appends one sample's depths (the monitor's own thread already left
/// out); a sample whose CPUs differ from the first's (hotplug) is left
/// out.
fn push_sample(s: &mut HostSeries, at_ns: u64, rqs: &[CpuRq]) {
    let cpus: Vec<u32> = rqs.iter().map(|r| r.cpu).collect();
    if s.cpus.is_empty() {
        s.cpus = cpus.clone();
    }
    if cpus == s.cpus {
        s.nr_running
            .push(rqs.iter().map(|r| r.nr_running).collect());
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
