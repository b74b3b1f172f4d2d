//! The headless report: findings grouped into blockers (category, culprit
//! function, file:line), per-worker utilization and event counts,
//! run-queue statistics, the discovery method and lost events.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::classify::{user_frames, Flavor};
use crate::culprit::AppCode;
use crate::detect::{Category, Finding, Tally};
use crate::health::StackReport;
use crate::symbols::Frame;

mod tasks;
mod text;
mod withheld;
pub use tasks::{task_cell, TaskRow, TaskTracking, TOP_TASKS};
pub use text::render;
#[cfg(test)]
pub(crate) use text::text;
pub use withheld::{without_symbols, Withheld};

/// Findings of one culprit: one row per (category, culprit function),
/// whatever file:line and library leaf each finding had.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blocker {
    /// The category.
    pub category: Category,
    /// The culprit function: the innermost frame of the program's own
    /// code (see [`crate::culprit`]), `[runtime]` when the stack held only
    /// the runtime.
    pub function: String,
    /// Its most frequent `file:line`, when debug info has it.
    pub location: Option<String>,
    /// Every `file:line` of the culprit seen, with how many findings.
    #[serde(default)]
    pub locations: BTreeMap<String, u64>,
    /// The way from the culprit into the code it called, most frequent
    /// first (`rusqlite … → sqlite3VdbeExec`), with how many findings.
    #[serde(default)]
    pub below: BTreeMap<String, u64>,
    /// Program frames of the sample stack, innermost first.
    pub user_frames: Vec<String>,
    /// How many intervals.
    pub count: u64,
    /// Sum of their lengths, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// Intervals per worker tid.
    pub workers: BTreeMap<u32, u64>,
    /// Intervals per kind of runtime of their workers (absent when no
    /// worker showed its runtime).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runtimes: BTreeMap<Flavor, u64>,
    /// One full stack (function and location per frame).
    pub sample_stack: Vec<Frame>,
    /// The Tokio tasks its findings ran in, most time first (at most
    /// [`TOP_TASKS`]; empty when task ids were not tracked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskRow>,
    /// How many distinct tasks its findings ran in.
    #[serde(default)]
    pub task_count: u64,
    /// Blocking calls: the system calls its workers slept in, with what
    /// their descriptor was (`writev on a socket`), and how many findings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub syscalls: BTreeMap<String, u64>,
}

impl Blocker {
    /// The system call most of its sleeps were in, if any.
    pub fn main_syscall(&self) -> Option<&str> {
        self.syscalls
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(c, _)| c.as_str())
    }

    /// The most frequent way below the culprit, if any.
    pub fn main_path_below(&self) -> Option<&str> {
        self.below
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(p, _)| p.as_str())
    }
}

/// One worker thread's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerStats {
    /// Thread id.
    pub tid: u32,
    /// Thread name.
    pub comm: String,
    /// The kind of runtime loop it ran tasks in (absent when none of its
    /// stacks showed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Flavor>,
    /// On-CPU time during the session, ns (from /proc schedstat).
    pub cpu_ns: u64,
    /// `cpu_ns` over the session's length.
    pub utilization: f64,
    /// Findings on this worker, by category.
    pub findings: BTreeMap<Category, u64>,
}

/// Run-queue delays above the threshold.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunQueueStats {
    /// How many.
    pub count: u64,
    /// Total, ns.
    pub total_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// What held the CPU the workers waited for, most waited-on first.
    #[serde(default)]
    pub holders: Vec<HolderRow>,
}

/// The waits behind one holder: a task that ran just before a waiting
/// worker got its CPU back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HolderRow {
    /// Its thread name.
    pub comm: String,
    /// It is a thread of the target.
    pub same_process: bool,
    /// It is a thread of hud itself: hud's own cost, not another process.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hud_itself: bool,
    /// For a thread of the target, the culprit on its stack.
    pub culprit: Option<String>,
    /// Its thread ids.
    pub tids: Vec<u32>,
    /// Waits it ended.
    pub count: u64,
    /// Their total, ns.
    pub total_ns: u64,
}

/// How task code's CPU time was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PollMethod {
    /// cpu-clock samples: CPU time per culprit, no poll lengths.
    #[default]
    Sampled,
    /// uprobes on every instance of Tokio's task poll (`--exact-polls`):
    /// long polls with their real lengths, besides the samples.
    Exact,
}

/// The report's word on poll timing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollTiming {
    /// The method.
    pub method: PollMethod,
    /// Exact: how many instances of `raw::poll` were probed.
    pub instances: usize,
}

/// Everything a headless session reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Target pid.
    pub pid: u32,
    /// Target comm.
    pub comm: String,
    /// How the workers were found.
    pub discovery: String,
    /// Threshold, ns.
    pub threshold_ns: u64,
    /// Sampling frequency, Hz.
    pub frequency_hz: u64,
    /// Session length, s.
    pub duration_s: f64,
    /// True if the target exited during the session.
    pub target_exited: bool,
    /// The signal that ended the session (`SIGINT`, `SIGHUP`, ...), when
    /// one did: the report holds what was seen until then.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub interrupted_by: Option<String>,
    /// Blockers, largest total first.
    pub blockers: Vec<Blocker>,
    /// Time in Tokio's `block_in_place` (sleeps over the threshold and
    /// sampled CPU), per culprit: no blocker, since the worker handed its
    /// core to another thread first, but time a request waited.
    #[serde(default)]
    pub block_in_place: Vec<Blocker>,
    /// Workers.
    pub workers: Vec<WorkerStats>,
    /// Run-queue delays.
    pub run_queue: RunQueueStats,
    /// What the detector saw and set aside.
    pub events: Tally,
    /// Events lost in the kernel (ring buffer full).
    pub lost_events: u64,
    /// Set when the binary has no debug info: how to get file:line.
    pub symbol_hint: Option<String>,
    /// The executable's separate debug info in use, and how it was found
    /// (`--debug-file`, its build-id path, its `.gnu_debuglink`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_file: Option<String>,
    /// How stacks were taken and how many were cut short.
    #[serde(default)]
    pub stacks: StackReport,
    /// How task code's CPU time was measured.
    #[serde(default)]
    pub poll_timing: PollTiming,
    /// The crates taken as the program's own code (culprits are their
    /// innermost frames).
    #[serde(default)]
    pub app_crates: Vec<String>,
    /// Whether findings carry the Tokio task they ran in.
    #[serde(default)]
    pub task_ids: TaskTracking,
    /// The kinds of finding this session could not give, and why (an
    /// executable without symbols: only thread-level facts are given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<Withheld>,
}

/// The version of the report's JSON layout (2: `stacks` added; 3: the
/// `cpu_bound_poll` category became `task_cpu_sampled`, blockers are one
/// per culprit function with `locations` and `below`, `tool` added).
impl runq_common::json::JsonDocument for Report {
    const TOOL: &'static str = "runq hud";
    const SCHEMA_VERSION: u32 = 3;
}

/// The culprit on the stack of a thread that held a waiting worker's
/// CPU (any thread of the target: a worker, the blocking pool, a thread
/// of its own): the program's function, else the leaf, marked as such.
pub fn holder_culprit(stack: &[Frame], app: &AppCode) -> String {
    match (app.culprit_index(stack), stack.first()) {
        (Some(i), _) => stack[i].function.to_string(),
        (None, Some(leaf)) => format!("[no program frame, at {}]", leaf.function),
        (None, None) => "[no stack]".to_string(),
    }
}

/// Groups findings into blockers, naming each by `app`'s culprit rule.
pub fn group(findings: &[Finding], app: &AppCode) -> Vec<Blocker> {
    let mut by_key: BTreeMap<(Category, String), (Blocker, tasks::TaskTally)> = BTreeMap::new();
    for f in findings {
        let (idx, function) = row_of(&f.stack, app);
        let culprit = idx.map(|i| &f.stack[i]);
        let (b, tasks) = by_key
            .entry((f.category, function.clone()))
            .or_insert_with(|| {
                let b = Blocker {
                    category: f.category,
                    function,
                    location: None,
                    locations: BTreeMap::new(),
                    below: BTreeMap::new(),
                    user_frames: user_frames(&f.stack)
                        .iter()
                        .map(|u| u.function.to_string())
                        .collect(),
                    count: 0,
                    total_ns: 0,
                    max_ns: 0,
                    workers: BTreeMap::new(),
                    runtimes: BTreeMap::new(),
                    sample_stack: f.stack.to_vec(),
                    tasks: Vec::new(),
                    task_count: 0,
                    syscalls: BTreeMap::new(),
                };
                (b, tasks::TaskTally::default())
            });
        tasks.add(f);
        if let Some(loc) = culprit.and_then(Frame::location) {
            *b.locations.entry(loc).or_default() += 1;
        }
        if let Some(path) = idx.and_then(|i| app.path_below(&f.stack, i)) {
            *b.below.entry(path).or_default() += 1;
        }
        if let Some(call) = &f.call {
            *b.syscalls.entry(call.label()).or_default() += 1;
        }
        b.count += 1;
        b.total_ns += f.duration_ns;
        b.max_ns = b.max_ns.max(f.duration_ns);
        *b.workers.entry(f.tid).or_default() += 1;
    }
    let mut out: Vec<Blocker> = by_key
        .into_values()
        .map(|(mut b, tasks)| {
            tasks.finish(&mut b);
            b
        })
        .collect();
    for b in &mut out {
        b.location = b
            .locations
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(l, _)| l.clone());
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.total_ns));
    out
}

impl Blocker {
    /// The runtime most of its intervals ran in.
    pub fn main_runtime(&self) -> Option<Flavor> {
        self.runtimes
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(f, _)| *f)
    }
}

/// Counts each row's intervals per runtime of their workers, and orders
/// the rows by runtime (multi-thread first), then by total, when the
/// workers ran more than one kind of runtime.
pub fn group_by_runtime(rows: &mut [Blocker], flavors: &BTreeMap<u32, Flavor>) {
    for b in rows.iter_mut() {
        for (tid, n) in &b.workers {
            if let Some(f) = flavors.get(tid) {
                *b.runtimes.entry(*f).or_default() += n;
            }
        }
    }
    let kinds: std::collections::BTreeSet<Flavor> = flavors.values().copied().collect();
    if kinds.len() > 1 {
        rows.sort_by_key(|b| (b.main_runtime(), std::cmp::Reverse(b.total_ns)));
    }
}

/// The culprit of a finding's `stack` by `app`'s rule (its index, when a
/// frame is one) and the name of the row it counts toward: the report's
/// rows and the trace's events are named by this one rule.
pub fn row_of(stack: &[Frame], app: &AppCode) -> (Option<usize>, String) {
    let idx = app.culprit_index(stack);
    let name = idx.map_or_else(|| no_culprit(stack), |i| stack[i].function.to_string());
    (idx, name)
}

/// The name of a row whose stack holds no program frame: `[runtime]` when
/// the stack reaches Tokio's loops (it really is the runtime), otherwise
/// the stack was cut short (deeper than the copy, or a run-queue victim's
/// that holds only the preempted leaf), and the row says so with the
/// deepest frame known (the last one unwound).
fn no_culprit(stack: &[Frame]) -> String {
    let whole = stack
        .iter()
        .map(crate::classify::class_of)
        .any(|c| c.worker_loop || c.pool_loop);
    // As `place_of` decides: std code right under the frame that polls a
    // task's future is that future's.
    let classes: Vec<_> = stack.iter().map(crate::classify::class_of).collect();
    let first_tokio = classes.iter().position(|c| c.tokio);
    let inlined = first_tokio.is_some_and(|i| i > 0 && classes[i].task_poll);
    match stack.last() {
        // Not one frame was left (its first address was in no mapping).
        None => "[stack cut short]".to_string(),
        Some(deepest) if !whole => format!("[stack cut short at {}]", deepest.function),
        _ if inlined => match crate::classify::inlined_task(stack) {
            Some(task) => format!("{task} (inlined into Tokio's poll)"),
            None => "[a task's code, inlined into Tokio's poll]".to_string(),
        },
        _ => "[runtime]".to_string(),
    }
}

/// Run-queue statistics of the findings, with the CPU's holders totalled
/// per (name, process, culprit).
pub fn run_queue_stats(findings: &[Finding]) -> RunQueueStats {
    let mut stats = RunQueueStats::default();
    let mut holders: BTreeMap<(String, bool, bool, Option<String>), HolderRow> = BTreeMap::new();
    for f in findings
        .iter()
        .filter(|f| f.category == Category::RunQueueDelay)
    {
        stats.count += 1;
        stats.total_ns += f.duration_ns;
        stats.max_ns = stats.max_ns.max(f.duration_ns);
        let Some(h) = &f.holder else { continue };
        let key = (
            h.comm.clone(),
            h.same_process,
            h.hud_itself,
            h.culprit.clone(),
        );
        let row = holders.entry(key).or_insert_with(|| HolderRow {
            comm: h.comm.clone(),
            same_process: h.same_process,
            hud_itself: h.hud_itself,
            culprit: h.culprit.clone(),
            tids: Vec::new(),
            count: 0,
            total_ns: 0,
        });
        if !row.tids.contains(&h.tid) {
            row.tids.push(h.tid);
        }
        row.count += 1;
        row.total_ns += f.duration_ns;
    }
    stats.holders = holders.into_values().collect();
    stats.holders.sort_by_key(|h| std::cmp::Reverse(h.total_ns));
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::fixtures::frame;

    fn finding(tid: u32, name: &str, ms: u64) -> Finding {
        Finding {
            category: Category::BlockingCall,
            tid,
            start_ns: 0,
            duration_ns: ms * 1_000_000,
            stack: vec![frame("std::thread::sleep"), frame(name)].into(),
            holder: None,
            task_id: None,
            call: None,
        }
    }

    #[test]
    fn blockers_are_grouped_by_the_runtime_of_their_workers() {
        let fs = [
            finding(1, "app::render", 30),
            finding(2, "app::render", 30),
            finding(9, "app::audit", 90),
        ];
        let mut rows = group(&fs, &AppCode::default());
        assert_eq!(rows[0].function, "app::audit", "largest first");
        let flavors = BTreeMap::from([
            (1, Flavor::MultiThread),
            (2, Flavor::MultiThread),
            (9, Flavor::CurrentThread),
        ]);
        group_by_runtime(&mut rows, &flavors);
        assert_eq!(rows[0].function, "app::render", "multi-thread first");
        assert_eq!(rows[0].runtimes, BTreeMap::from([(Flavor::MultiThread, 2)]));
        assert_eq!(rows[1].main_runtime(), Some(Flavor::CurrentThread));
        let cell = text::culprit_cell(&rows[1]);
        assert!(cell.starts_with("[current_thread] app::audit"), "{cell}");
    }

    #[test]
    fn a_blocker_names_the_call_its_workers_slept_in_once() {
        use crate::sleep_call::SleepCall;
        let mut socket = finding(1, "app::fetch", 30);
        let libc = Frame {
            file: None,
            module: Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into()),
            ..frame("writev")
        };
        let alias = Frame {
            function: "<&std::net::tcp::TcpStream as std::io::Write>::write_vectored".into(),
            ..frame("std::io::Write::write_vectored")
        };
        socket.stack = vec![libc, alias, frame("app::fetch")].into();
        socket.call = SleepCall::from_record(20, 5, 0o14, 2 << 16 | 1);
        let mut futex = finding(2, "app::fetch", 30);
        futex.call = SleepCall::from_record(202, -1, 0, 0);
        let rows = group(&[socket.clone(), socket, futex], &AppCode::default());
        let b = &rows[0];
        assert_eq!(
            b.syscalls,
            BTreeMap::from([("writev on a TCP socket".into(), 2), ("futex".into(), 1)])
        );
        let cell = text::culprit_cell(b);
        assert!(cell.ends_with("→ std … → writev on a TCP socket"), "{cell}");
        let mut sleep = finding(3, "app::wait", 30);
        sleep.call = SleepCall::from_record(230, -1, 0, 0);
        let cell = text::culprit_cell(&group(&[sleep], &AppCode::default())[0]);
        assert!(
            cell.ends_with("→ std::thread::sleep in clock_nanosleep"),
            "{cell}"
        );
    }

    #[test]
    fn a_stack_cut_to_nothing_is_said_to_be_cut_short() {
        assert_eq!(no_culprit(&[]), "[stack cut short]");
    }
}
