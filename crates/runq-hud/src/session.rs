//! A headless session: discover the workers, attach the probe, feed the
//! detector until the deadline, a stop request or the target's exit, and
//! build the report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::bpf::{BpfError, Probe};
use crate::detect::{Detector, Finding};
use crate::discovery::{select_workers, threads, DiscoveryError, Method};
use crate::event::RawEvent;
use crate::report::{group, run_queue_stats, Report, WorkerStats};
use crate::stacks::Stacks;
use crate::symbols::{Symbols, TargetError};

/// What to watch and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Target process.
    pub pid: u32,
    /// Blocking threshold, ns.
    pub threshold_ns: u64,
    /// cpu-clock sampling frequency, Hz.
    pub frequency: u64,
    /// Stop after this long (None: until stopped or the target exits).
    pub duration: Option<Duration>,
    /// Worker thread-name prefix, overriding discovery.
    pub worker_prefix: Option<String>,
    /// Where /proc is (tests may point elsewhere).
    pub proc_root: PathBuf,
    /// An unstripped copy of the target's executable, for its symbols.
    pub target_binary: Option<PathBuf>,
}

/// Why a session could not run.
#[derive(Debug, thiserror::Error)]
pub enum HudError {
    /// Target or workers not found.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// BPF load/attach failure.
    #[error(transparent)]
    Bpf(#[from] BpfError),
    /// `--target` cannot stand in for the executable.
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// The outcome: the report, every finding, and how quickly findings were
/// seen after their interval ended.
pub struct Session {
    /// The report.
    pub report: Report,
    /// Every finding, in arrival order.
    pub findings: Vec<Finding>,
    /// Per finding: ns from the end of its interval to its detection.
    pub detection_latency_ns: Vec<u64>,
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// On-CPU ns of a thread, from /proc/PID/task/TID/schedstat.
fn cpu_ns(proc_root: &Path, pid: u32, tid: u32) -> u64 {
    std::fs::read_to_string(proc_root.join(format!("{pid}/task/{tid}/schedstat")))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

struct Watched {
    method: Method,
    comms: BTreeMap<u32, String>,
    cpu_start: BTreeMap<u32, u64>,
}

impl Watched {
    /// Finds (new) workers and adds them to the probe's filter.
    fn refresh(&mut self, opts: &Options, probe: &mut Probe) -> Result<(), HudError> {
        let all = threads(&opts.proc_root, opts.pid)?;
        let prefix = match &self.method {
            Method::ExplicitPrefix(p) => Some(p.as_str()),
            _ => opts.worker_prefix.as_deref(),
        };
        let Some((_, tids)) = select_workers(&all, prefix) else {
            return Ok(());
        };
        let new: Vec<u32> = tids
            .into_iter()
            .filter(|t| !self.comms.contains_key(t))
            .collect();
        for t in &new {
            let comm = all
                .iter()
                .find(|x| x.tid == *t)
                .map(|x| x.comm.clone())
                .unwrap_or_default();
            self.comms.insert(*t, comm);
            self.cpu_start
                .insert(*t, cpu_ns(&opts.proc_root, opts.pid, *t));
        }
        probe.watch(&new)?;
        Ok(())
    }
}

/// How often the ring buffer is drained: findings reach the report or the
/// screen within about this long.
const POLL: Duration = Duration::from_millis(50);

/// How often new worker threads and the target's exit are looked for.
const REFRESH: Duration = Duration::from_millis(250);

/// Feeds one event by its cached summary; its frames are only built when
/// the detector keeps them.
fn feed(detector: &mut Detector, stacks: &mut Stacks, ev: &RawEvent) -> Vec<Finding> {
    let summary = stacks.summary(&ev.stack);
    detector.feed_summarized(ev, summary, || stacks.frames(&ev.stack))
}

/// Runs a session; `on_finding` sees each finding as it is detected.
pub fn run(
    opts: &Options,
    stop: &AtomicBool,
    mut on_finding: impl FnMut(&Finding),
) -> Result<Session, HudError> {
    let mut symbols = Symbols::new(&opts.proc_root, opts.pid);
    if let Some(binary) = &opts.target_binary {
        symbols.use_target_binary(binary)?;
    }
    let all = threads(&opts.proc_root, opts.pid)?;
    let (method, _) = select_workers(&all, opts.worker_prefix.as_deref())
        .ok_or(DiscoveryError::NoWorkers(opts.pid))?;
    let mut probe = Probe::attach(opts.threshold_ns, opts.frequency)?;
    let mut watched = Watched {
        method,
        comms: BTreeMap::new(),
        cpu_start: BTreeMap::new(),
    };
    watched.refresh(opts, &mut probe)?;
    // Loading symbols and debug info up front keeps that work out of the
    // measured part of a target's life.
    symbols.prewarm();
    let mut stacks = Stacks::new(symbols);
    let mut detector = Detector::new(opts.threshold_ns);
    let (mut findings, mut latency) = (Vec::new(), Vec::new());
    let started = Instant::now();
    let mut last_refresh = Instant::now();
    let mut target_exited = false;
    loop {
        std::thread::sleep(POLL);
        let events = probe.drain();
        stacks.prefetch(events.iter().flat_map(|e| &e.stack));
        for ev in events {
            for f in feed(&mut detector, &mut stacks, &ev) {
                latency.push(monotonic_ns().saturating_sub(f.start_ns + f.duration_ns));
                on_finding(&f);
                findings.push(f);
            }
        }
        if stop.load(Ordering::Relaxed) || opts.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if last_refresh.elapsed() >= REFRESH {
            if !opts.proc_root.join(opts.pid.to_string()).exists() {
                target_exited = true;
                break;
            }
            // Threads that appear later (a growing runtime) join the filter.
            let _ = watched.refresh(opts, &mut probe);
            last_refresh = Instant::now();
        }
    }
    findings.extend(detector.flush());
    // Blocking-pool threads share the workers' name; once a thread showed
    // the pool's frames, none of its findings count.
    findings.retain(|f| !detector.pool_tids.contains(&f.tid));
    let elapsed = started.elapsed().as_secs_f64();
    let report = build_report(
        opts,
        &watched,
        &findings,
        &detector,
        &mut probe,
        stacks.symbols(),
        elapsed,
        target_exited,
    );
    Ok(Session {
        report,
        findings,
        detection_latency_ns: latency,
    })
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    opts: &Options,
    watched: &Watched,
    findings: &[Finding],
    detector: &Detector,
    probe: &mut Probe,
    symbols: &Symbols,
    elapsed: f64,
    target_exited: bool,
) -> Report {
    // Blocking-pool threads share the workers' name; leave them out.
    let workers = watched
        .comms
        .iter()
        .filter(|(tid, _)| !detector.pool_tids.contains(tid))
        .map(|(tid, comm)| {
            let cpu =
                cpu_ns(&opts.proc_root, opts.pid, *tid).saturating_sub(watched.cpu_start[tid]);
            let mut by_cat = BTreeMap::new();
            for f in findings.iter().filter(|f| f.tid == *tid) {
                *by_cat.entry(f.category).or_insert(0) += 1;
            }
            WorkerStats {
                tid: *tid,
                comm: comm.clone(),
                cpu_ns: cpu,
                utilization: cpu as f64 / 1e9 / elapsed.max(1e-9),
                findings: by_cat,
            }
        })
        .collect();
    let comm = std::fs::read_to_string(opts.proc_root.join(format!("{}/comm", opts.pid)))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let seen_tids: BTreeSet<u32> = findings.iter().map(|f| f.tid).collect();
    Report {
        pid: opts.pid,
        comm,
        discovery: watched.method.to_string(),
        threshold_ns: opts.threshold_ns,
        frequency_hz: opts.frequency,
        duration_s: elapsed,
        target_exited,
        blockers: group(findings),
        workers,
        run_queue: run_queue_stats(findings),
        events: detector.tally,
        lost_events: probe.lost_events(),
        symbol_hint: (!symbols.debug_info_seen() && !seen_tids.is_empty()).then(|| {
            "the target has no debug info, so blockers have no file:line: build it with \
             `debug = \"line-tables-only\"` (or pass --target with an unstripped copy)"
                .to_string()
        }),
    }
}
