//! A headless session: discover the workers, attach the probe, feed the
//! detector until the deadline, a stop request or the target's exit, and
//! build the report.

mod build;
mod detach;
mod watched;
mod workers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runq_kernel::clock::monotonic_ns;

use crate::bpf::{BpfError, Probe};
use crate::culprit::AppCode;
use crate::detect::{Detector, Finding};
use crate::discovery::{threads, DiscoveryError};
use crate::event::{Kind, RawEvent};
use crate::health::{StackHealth, UnwindChoice};
use crate::polls::{PollSitesError, RuntimeSites};
use crate::prep::StackPrep;
use crate::report::{PollMethod, PollTiming, Report, TaskTracking};
use crate::stacks::Stacks;
use crate::symbols::debugfile::DEBUG_DIRS;
use crate::symbols::{Symbols, TargetError};
use crate::task_ids::Method;
use build::build_report;
use watched::Watched;
use workers::discover;

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
    /// How to get stacks.
    pub unwind: UnwindChoice,
    /// Crates to take as the program's own code, besides the crate of its
    /// `main` (`--app-crate`).
    pub app_crates: Vec<String>,
    /// Time every poll with uprobes on Tokio's task poll (`--exact-polls`).
    pub exact_polls: bool,
    /// Tag every event with the Tokio task being polled (a uprobe on
    /// Tokio's `set_current_task_id`; off with `--no-task-ids`).
    pub task_ids: bool,
    /// Continuous mode: every this long, the findings so far become a
    /// report of their own ([`Update::Window`]) and are let go, so that a
    /// session that runs for days holds one window's findings at most.
    pub rotate: Option<Duration>,
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
    /// `--debug-file` cannot stand in for the executable.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// `--exact-polls` found no poll to probe.
    #[error(transparent)]
    PollSites(#[from] PollSitesError),
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
    /// The probes, attached until the session is dropped, so that its
    /// report can be written first: removing a uprobe waits for a kernel
    /// grace period (about 0.1 s each; `--exact-polls` attaches two per
    /// poll function).
    pub probes: AttachedProbes,
}

/// The session's BPF programs, detached when dropped (or, on the way out,
/// by [`AttachedProbes::detach_after_exit`]).
pub struct AttachedProbes {
    _probe: Probe,
}

/// How often the ring buffer is drained: findings reach the report or the
/// screen within about this long.
const POLL: Duration = Duration::from_millis(50);

/// How often new worker threads and the target's exit are looked for.
const REFRESH: Duration = Duration::from_millis(250);

/// Feeds one event by its cached summary; its frames are only built when
/// the detector keeps them.
fn feed(
    detector: &mut Detector,
    stacks: &mut Stacks,
    health: Option<&mut StackHealth>,
    ev: &RawEvent,
) -> Vec<Finding> {
    let summary = stacks.summary(&ev.stack);
    if let Some(h) = health {
        h.note(ev.stack.len(), summary.reached_loop, ev.truncated);
    }
    detector.feed_summarized(ev, summary, || {
        stacks.call_frames(&ev.stack, ev.call.as_ref())
    })
}

/// What a session tells its observer (the live view) as it goes.
#[derive(Debug)]
pub enum Update<'a> {
    /// A finding, as it is detected.
    Finding(&'a Finding),
    /// The status of stacks (source, share cut short), after each drain.
    Stacks(&'a str),
    /// Events the kernel could not queue so far.
    Lost(u64),
    /// The target process is gone.
    TargetExited,
    /// How the workers were found.
    Discovery(&'a str),
    /// Every watched worker (after discovery and each rediscovery).
    Workers(&'a [u32]),
    /// Continuous mode: the report of the window that just ended (its
    /// findings are gone from the session).
    Window(&'a Report),
}

/// The state of an attached session.
struct Attached {
    probe: Probe,
    watched: Watched,
    stacks: Stacks,
    detector: Detector,
    prep: StackPrep,
    health: StackHealth,
    findings: Vec<Finding>,
    latency: Vec<u64>,
    app: AppCode,
    /// The target's name, read at the start (kept when it exits).
    comm: String,
    /// Culprits of CPU holders in the target, until their wait's finding.
    holders: HolderCulprits,
    /// How task CPU time is measured.
    poll_timing: PollTiming,
    /// Whether events carry task ids.
    task_ids: TaskTracking,
}

/// The culprits on the stacks of the target's threads that held a waiting
/// worker's CPU, by (worker, start of the wait), joined to the wait's
/// finding whichever of the two records arrives first (in copy mode a
/// wait after a sleep is sent at the worker's syscall exit, after its
/// holder's stack).
#[derive(Default)]
struct HolderCulprits {
    pending: BTreeMap<(u32, u64), String>,
}

impl HolderCulprits {
    /// Waits whose holder record never met its finding are not kept for
    /// ever.
    const MAX_PENDING: usize = 4096;

    /// A holder's culprit arrived: give it to its finding among the last
    /// ones, or keep it for the finding to come.
    fn arrived(&mut self, key: (u32, u64), culprit: String, findings: &mut [Finding]) {
        let recent = findings.iter_mut().rev().take(256);
        match recent.into_iter().find(|f| (f.tid, f.start_ns) == key) {
            Some(f) => Self::give(f, culprit),
            None => {
                if self.pending.len() >= Self::MAX_PENDING {
                    self.pending.clear();
                }
                self.pending.insert(key, culprit);
            }
        }
    }

    /// A finding arrived: give it the culprit that came before it.
    fn claim(&mut self, f: &mut Finding) {
        if let Some(c) = self.pending.remove(&(f.tid, f.start_ns)) {
            Self::give(f, c);
        }
    }

    fn give(f: &mut Finding, culprit: String) {
        if let Some(h) = f.holder.as_mut().filter(|h| h.same_process) {
            h.culprit = Some(culprit);
        }
    }
}

/// The program's own crates: `main`'s crate in the executable (or in the
/// unstripped copy given), and the named ones.
pub fn app_code(opts: &Options) -> AppCode {
    let exe = opts
        .target_binary
        .clone()
        .or_else(|| crate::symbols::maps::exe_path(&opts.proc_root, opts.pid).ok());
    match exe {
        Some(path) => AppCode::of_executable(&path, &opts.app_crates),
        None => AppCode::named(opts.app_crates.iter().cloned()),
    }
}

/// Exact polls: finds the instances of Tokio's task poll in the target
/// (or in the unstripped copy given), attaches the uprobes to the running
/// executable and lets the detector name long polls.
fn time_polls(
    opts: &Options,
    probe: &mut Probe,
    detector: &mut Detector,
) -> Result<PollTiming, HudError> {
    let exe = crate::symbols::maps::exe_path(&opts.proc_root, opts.pid)
        .map_err(|_| DiscoveryError::NoSuchPid(opts.pid))?;
    let sites = crate::polls::find(opts.target_binary.as_deref().unwrap_or(&exe))?;
    let exe_maps: Vec<_> = crate::symbols::maps::read_code_mappings(&opts.proc_root, opts.pid)
        .map_err(|_| DiscoveryError::NoSuchPid(opts.pid))?
        .into_iter()
        .filter(|m| Path::new(&m.path) == exe)
        .collect();
    let attach_to = opts.proc_root.join(format!("{}/exe", opts.pid));
    probe.time_polls(&attach_to, &sites, opts.pid)?;
    detector.time_polls(RuntimeSites::place(&sites, &exe_maps));
    Ok(PollTiming {
        method: PollMethod::Exact,
        instances: sites.len(),
    })
}

/// Task ids: has the programs read each worker's current task id from
/// its thread-local storage, or attaches the uprobe on Tokio's
/// `set_current_task_id` (see [`crate::task_ids`]). A target without the
/// symbol is watched all the same, without task ids, and says so once
/// (a warning and the report).
fn track_tasks(opts: &Options, probe: &mut Probe, debug_file: Option<PathBuf>) -> TaskTracking {
    if !opts.task_ids {
        return TaskTracking {
            reason: Some("--no-task-ids".into()),
            ..TaskTracking::default()
        };
    }
    let attach_to = opts.proc_root.join(format!("{}/exe", opts.pid));
    let others: Vec<PathBuf> = opts
        .target_binary
        .iter()
        .cloned()
        .chain(debug_file)
        .collect();
    let found = crate::task_ids::find(&attach_to, &others)
        .map_err(|e| e.to_string())
        .and_then(|method| {
            let attached = match &method {
                Method::Tls { tp_offset } => probe.read_task_ids(*tp_offset).map(|()| 0),
                Method::Uprobe { offsets } => probe
                    .track_tasks(&attach_to, offsets, opts.pid)
                    .map(|()| offsets.len()),
            };
            attached
                .map(|n| (method.label(), n))
                .map_err(|e| e.to_string())
        });
    match found {
        Ok((method, instances)) => TaskTracking {
            tracked: true,
            method: Some(method.to_string()),
            instances,
            reason: None,
        },
        Err(why) => {
            log::warn!("hud: findings carry no task ids: {why}");
            TaskTracking {
                reason: Some(why),
                ..TaskTracking::default()
            }
        }
    }
}

/// Runs one step of attaching, and logs how long it took (`-vv`).
fn timed<T>(step: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    log::debug!(
        "hud: {step}: {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    out
}

/// The target's symbols: from `--debug-file`, or its executable with the
/// debug file found by build-id or debuglink (`-v` says which).
fn load_symbols(opts: &Options) -> Result<Symbols, HudError> {
    let mut symbols = Symbols::new(&opts.proc_root, opts.pid);
    match &opts.target_binary {
        Some(binary) => symbols.use_target_binary(binary)?,
        None => {
            let dirs: Vec<PathBuf> = DEBUG_DIRS.iter().map(PathBuf::from).collect();
            symbols.find_debug_file(&dirs);
        }
    }
    match symbols.debug_file() {
        Some((path, by)) => log::info!("hud: symbols from {} ({})", path.display(), by.label()),
        None if symbols.executable_stripped() => log::info!(
            "hud: the executable is stripped and no debug file was found (searched {})",
            DEBUG_DIRS.join(", ")
        ),
        None => log::info!("hud: symbols from the executable"),
    }
    Ok(symbols)
}

impl Attached {
    /// Attaches, then discovers the workers (by name, by their stacks,
    /// or as the largest thread group) and watches them.
    fn start(opts: &Options) -> Result<Self, HudError> {
        let mut symbols = timed("reading the target's symbols", || load_symbols(opts))?;
        let all = threads(&opts.proc_root, opts.pid)?;
        let mut prep = timed("choosing the unwinder", || {
            StackPrep::new(&opts.proc_root, opts.pid, opts.unwind)
        });
        log::info!("hud: stacks by {}: {}", prep.source.label(), prep.reason);
        let mut probe = timed("loading and attaching the BPF programs", || {
            Probe::attach(opts.pid, opts.threshold_ns, opts.frequency, prep.source)
        })?;
        // Loading symbols and debug info up front keeps that work out of the
        // measured part of a target's life.
        let debug_file = symbols.debug_file().map(|(p, _)| p.to_path_buf());
        let mut stacks = timed("loading debug info", || {
            symbols.prewarm();
            Stacks::new(symbols)
        });
        let found = timed("discovery", || {
            discover(opts, &all, &mut probe, &mut prep, &mut stacks)
        })?;
        let mut detector = Detector::new(opts.frequency, opts.pid);
        if stacks.symbols().executable_stripped() {
            // No stack can be checked: a guess makes no finding.
            detector.thread_level_only();
        }
        // The workers found by their stacks are workers from the start;
        // those taken by name are, until their stacks say otherwise.
        detector
            .roles
            .begin(found.method.by_names(), &found.flavors);
        let mut watched = Watched::new(found.method);
        watched.add(opts, &all, &found.tids, &mut probe)?;
        watched.know(&all);
        // Task ids before exact polls: a poll whose entry the poll uprobe
        // sees then has its task's id set under the task-id uprobe too,
        // never only the parent's id restored at its end.
        let task_ids = timed("attaching the task-id uprobe", || {
            track_tasks(opts, &mut probe, debug_file)
        });
        let poll_timing = match opts.exact_polls {
            true => time_polls(opts, &mut probe, &mut detector)?,
            false => PollTiming::default(),
        };
        Ok(Attached {
            task_ids,
            probe,
            watched,
            stacks,
            detector,
            poll_timing,
            holders: HolderCulprits::default(),
            prep,
            health: StackHealth::default(),
            findings: Vec::new(),
            latency: Vec::new(),
            app: app_code(opts),
            comm: std::fs::read_to_string(opts.proc_root.join(format!("{}/comm", opts.pid)))
                .map(|c| c.trim().to_string())
                .unwrap_or_default(),
        })
    }

    /// The workers, as the live view, the report and its JSON list them:
    /// the watched threads seen running a runtime's tasks, and any other
    /// with a finding (each finding is a worker's). Only when the workers
    /// were taken by name and no stack has shown a loop yet (a stripped
    /// executable) are they the watched threads not seen in the blocking
    /// pool.
    fn worker_tids(&self) -> Vec<u32> {
        let roles = &self.detector.roles;
        let by_names = self.watched.method.by_names() && roles.workers().is_empty();
        let tids = self.watched.tids().into_iter();
        tids.filter(|t| roles.listed(*t) || (by_names && !roles.only_pool(*t)))
            .collect()
    }

    /// Takes every queued event through unwinding and detection.
    fn drain(&mut self, on_update: &mut impl FnMut(Update<'_>)) {
        let mut events = self.probe.drain();
        let whole: Vec<bool> = events.iter_mut().map(|ev| self.prep.prepare(ev)).collect();
        for ev in &mut events {
            self.stacks.cut_unmapped(ev);
        }
        self.stacks.prefetch(events.iter().flat_map(|e| &e.stack));
        for (ev, whole) in events.into_iter().zip(whole) {
            let interval = matches!(ev.kind, Kind::Blocked | Kind::RunQueue | Kind::Holder);
            if interval && self.watched.began_unwatched(ev.tid, ev.start_ns) {
                self.detector.tally.before_watch += 1;
                continue;
            }
            // A sample of a thread discovery sampled and did not keep (still
            // queued, or taken while the filter was being narrowed) is no
            // worker's.
            if ev.kind == Kind::Sample && self.watched.began_unwatched(ev.tid, ev.start_ns) {
                continue;
            }
            if ev.kind == Kind::Holder {
                let frames = self.stacks.frames(&ev.stack);
                let culprit = crate::report::holder_culprit(&frames, &self.app);
                self.holders
                    .arrived((ev.tid, ev.start_ns), culprit, &mut self.findings);
                continue;
            }
            // A long poll carries no stack of its own.
            let health = (whole && ev.kind != Kind::Poll).then_some(&mut self.health);
            let found = feed(&mut self.detector, &mut self.stacks, health, &ev);
            for mut f in found {
                self.holders.claim(&mut f);
                self.latency
                    .push(monotonic_ns().saturating_sub(f.start_ns + f.duration_ns));
                on_update(Update::Finding(&f));
                self.findings.push(f);
            }
        }
        on_update(Update::Stacks(&self.prep.status(&self.health)));
        on_update(Update::Lost(self.probe.lost_events()));
    }
}

/// Runs a session; `on_update` sees each finding as it is detected and
/// the session's status as it changes.
pub fn run(
    opts: &Options,
    stop: &AtomicBool,
    mut on_update: impl FnMut(Update<'_>),
) -> Result<Session, HudError> {
    let mut s = Attached::start(opts)?;
    on_update(Update::Discovery(&s.watched.method.to_string()));
    on_update(Update::Workers(&s.worker_tids()));
    let started = Instant::now();
    let mut window_start = Instant::now();
    let mut last_refresh = Instant::now();
    let mut target_exited = false;
    loop {
        std::thread::sleep(POLL);
        s.drain(&mut on_update);
        if opts.rotate.is_some_and(|w| window_start.elapsed() >= w) {
            let findings = std::mem::take(&mut s.findings);
            let elapsed = window_start.elapsed().as_secs_f64();
            let report = build_report(opts, &mut s, &findings, elapsed, false);
            on_update(Update::Window(&report));
            s.latency.clear();
            // The window's report is out: the workers that exited in it
            // are let go too.
            if let Ok(all) = threads(&opts.proc_root, opts.pid) {
                let _ = s.watched.forget_exited(&all, &mut s.probe, |_| false);
            }
            window_start = Instant::now();
        }
        if stop.load(Ordering::Relaxed) || opts.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if last_refresh.elapsed() >= REFRESH {
            s.watched.read_cpu(opts);
            if !opts.proc_root.join(opts.pid.to_string()).exists() {
                target_exited = true;
                on_update(Update::TargetExited);
                break;
            }
            // Threads that appear later (a growing runtime, a pool, a
            // runtime started late) join the filter; newcomers that ran
            // no task loop on probation leave it.
            let _ = s.watched.refresh(opts, &mut s.probe, &s.detector.roles);
            on_update(Update::Workers(&s.worker_tids()));
            last_refresh = Instant::now();
        }
    }
    s.watched.read_cpu(opts);
    let mut findings = std::mem::take(&mut s.findings);
    // Each finding took its thread's role at the time it happened (a
    // worker that later joined the pool keeps its findings); these are the
    // cut stacks of threads that never showed a role.
    findings.extend(s.detector.flush());
    // In continuous mode the last report covers the last window only.
    let from = if opts.rotate.is_some() {
        window_start
    } else {
        started
    };
    let elapsed = from.elapsed().as_secs_f64();
    let report = build_report(opts, &mut s, &findings, elapsed, target_exited);
    Ok(Session {
        report,
        findings,
        detection_latency_ns: s.latency,
        probes: AttachedProbes { _probe: s.probe },
    })
}
