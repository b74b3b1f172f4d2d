//! The session's report: its workers, blockers and symbols.

use std::collections::{BTreeMap, BTreeSet};

use super::{Attached, Options};
use crate::detect::{Category, Finding, Tally};
use crate::report::{
    group, group_by_runtime, run_queue_stats, without_symbols, Report, TaskTracking, WorkerStats,
};

fn worker_stats(s: &Attached, findings: &[Finding], elapsed: f64) -> Vec<WorkerStats> {
    // A worker is a thread whose stacks showed a runtime's task loop at
    // some point: the blocking pool shares the workers' name, and a thread
    // moves between the two (block_in_place). The live view lists the
    // same threads (`Attached::worker_tids`).
    let shown = s.detector.roles.workers();
    let workers = s.worker_tids();
    s.watched
        .comms
        .iter()
        .filter(|(tid, _)| workers.contains(tid))
        .map(|(tid, comm)| {
            let cpu = s.watched.cpu_last[tid].saturating_sub(s.watched.cpu_start[tid]);
            let mut by_cat = BTreeMap::new();
            for f in findings.iter().filter(|f| f.tid == *tid) {
                *by_cat.entry(f.category).or_insert(0) += 1;
            }
            WorkerStats {
                tid: *tid,
                comm: comm.clone(),
                runtime: shown.get(tid).copied(),
                cpu_ns: cpu,
                utilization: cpu as f64 / 1e9 / elapsed.max(1e-9),
                findings: by_cat,
            }
        })
        .collect()
}

/// What the report says about the target's symbols, when they fall
/// short: a stripped executable (and how to give hud its symbols), or no
/// debug info (no file:line).
fn symbol_hint(opts: &Options, s: &Attached, seen: &BTreeSet<u32>) -> Option<String> {
    let symbols = s.stacks.symbols();
    if symbols.executable_stripped() {
        let exe = crate::symbols::maps::exe_path(&opts.proc_root, opts.pid)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        return Some(format!(
            "{exe} is stripped (no symbol table, no debug info) and no separate debug info was \
             found (not at its build-id path under /usr/lib/debug/.build-id/, nor by a \
             .gnu_debuglink): its functions show as offsets, its workers are known by name \
             only (Tokio's blocking pool may share their name) and only thread-level facts are \
             reported; pass --debug-file with the file `objcopy --only-keep-debug` made (or an \
             unstripped copy), or install it at that build-id path"
        ));
    }
    (!symbols.debug_info_seen() && !seen.is_empty()).then(|| {
        "the target has no debug info, so blockers have no file:line: build it with \
         `debug = \"line-tables-only\"` (or pass --debug-file with its debug file or an \
         unstripped copy)"
            .to_string()
    })
}

/// Findings in tasks after which, when not one carried a task id, the
/// probed function is taken to be off the poll path.
const TASKLESS_FINDINGS: usize = 20;

/// Whether the findings carry task ids: when the uprobe is attached but
/// many findings came and none had an id, the build inlined Tokio's
/// setting of the current task into its poll (cargo's release profile
/// does: the out-of-line instances run only as a task's guard is dropped),
/// and the report says so rather than claiming tasks it cannot see.
fn task_tracking(attached: &TaskTracking, findings: &[Finding]) -> TaskTracking {
    let tagged = findings.iter().any(|f| f.task_id.is_some());
    if !attached.tracked || tagged || findings.len() < TASKLESS_FINDINGS {
        return attached.clone();
    }
    TaskTracking {
        tracked: false,
        method: attached.method.clone(),
        instances: attached.instances,
        reason: Some(format!(
            "{} findings and not one in a task: the probed {} is not on this build's poll path \
             (inlined into Tokio's poll, as optimized builds do)",
            findings.len(),
            crate::task_ids::SET_TASK_FN
        )),
    }
}

pub(super) fn build_report(
    opts: &Options,
    s: &mut Attached,
    findings: &[Finding],
    elapsed: f64,
    target_exited: bool,
) -> Report {
    let comm = s.comm.clone();
    let (mut block_in_place, mut blockers): (Vec<_>, Vec<_>) = group(findings, &s.app)
        .into_iter()
        .partition(|b| b.category == Category::BlockInPlace);
    let flavors = s.detector.roles.workers();
    group_by_runtime(&mut blockers, flavors);
    group_by_runtime(&mut block_in_place, flavors);
    let seen_tids: BTreeSet<u32> = findings.iter().map(|f| f.tid).collect();
    let mut stacks = s.prep.report(&s.health, elapsed);
    if s.stacks.symbols().executable_stripped() && stacks.warning.is_some() {
        // Rebuilding with frame pointers would not help: without symbols
        // no stack can show Tokio's loops.
        stacks.warning = Some(format!(
            "stacks stop before a Tokio loop in {:.0}% of events: the executable is stripped, \
             so hud cannot recognise the runtime's frames: give it its symbols (see the note)",
            s.health.short_share() * 100.0
        ));
    }
    // The kernel's own count covers copies the ring buffer dropped too.
    stacks.bytes_copied_per_s = s.probe.bytes_copied() as f64 / elapsed.max(1e-9);
    Report {
        pid: opts.pid,
        comm,
        discovery: match s.detector.is_thread_level() && s.watched.method.by_names() {
            true => format!("{} (not checked: no symbols)", s.watched.method),
            false => s.watched.method.to_string(),
        },
        threshold_ns: opts.threshold_ns,
        frequency_hz: opts.frequency,
        duration_s: elapsed,
        target_exited,
        interrupted_by: runq_kernel::signal::received_signal().map(signal_name),
        blockers,
        block_in_place,
        workers: worker_stats(s, findings, elapsed),
        run_queue: run_queue_stats(findings),
        events: Tally {
            untimed_polls: s.probe.polls_untimed(),
            ..s.detector.tally
        },
        lost_events: s.probe.lost_events(),
        symbol_hint: symbol_hint(opts, s, &seen_tids),
        debug_file: s
            .stacks
            .symbols()
            .debug_file()
            .map(|(p, by)| format!("{} (by {})", p.display(), by.label())),
        stacks,
        poll_timing: s.poll_timing,
        app_crates: s.app.crates(),
        task_ids: task_tracking(&s.task_ids, findings),
        withheld: match s.detector.is_thread_level() {
            true => without_symbols(&s.detector.tally),
            false => Vec::new(),
        },
    }
}

/// The name of an ending signal, as the report shows it.
fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        other => format!("signal {other}"),
    }
}
