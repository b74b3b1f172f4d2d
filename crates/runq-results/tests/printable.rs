//! Names from outside runq (a group or scenario name from a file, a
//! thread's comm that any process sets with prctl, a scheduler's stderr)
//! reach the text reports with their control characters escaped: no
//! escape sequence reaches the terminal and no newline breaks a line.

use runq_kernel::task_record::TaskRecord;
use runq_results::compare::{Comparison, Differences, SavedRun};
use runq_results::evidence::ctprof::{CtprofEvidence, Presence, ThreadDeltas};
use runq_results::evidence::{flight, headline, Evidence, EvidenceReport};
use runq_results::render::{comparison, outcome, repeat_summary};
use runq_results::results::{
    CheckTally, GroupFigures, GroupSpread, HostFacts, RepeatSummary, Spread, WakePercentiles,
};
use runq_workload::{
    summarize_group, Cause, CheckResult, Op, Placement, RunOutcome, SkippedCheck, Verdict,
    WakeFigure, WorkerReport,
};
use runq_workload::{
    CheckId, HeldFor, HeldParts, Mechanism, NamedHolder, NamedTask, RecorderAccount,
};

/// Clears the screen, sets the title, rings the bell, and breaks the line.
const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\r\nevil\u{9b}31m";

/// What `HOSTILE` prints as.
const ESCAPED: &str = "\\x1b[2J\\x1b]0;pwned\\x07\\r\\nevil\\u{9b}31m";

/// No control character but the line ends, and every line that names
/// the hostile text names all of it.
fn assert_safe(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "a control character reached the text: {text:?}"
    );
    assert!(text.contains(ESCAPED), "{text}");
    for line in text.lines().filter(|l| l.contains("pwned")) {
        assert!(line.contains(ESCAPED), "one line, not split: {line:?}");
    }
}

fn check(pass: bool) -> CheckResult {
    CheckResult {
        check: CheckId::MaxGapMs,
        group: HOSTILE.into(),
        measured: 2_900.0,
        op: Op::AtMost,
        bound: 2_000.0,
        pass,
        cause: Some(Cause {
            mechanism: vec![Mechanism::Outside {
                worker: 500,
                held: HeldFor {
                    held_ns: 2_800_000_000,
                    waited_ns: 2_900_000_000,
                    holders: vec![NamedTask {
                        comm: HOSTILE.into(),
                        pid: 901,
                    }],
                    more_holders: 0,
                },
            }],
            recorder: Some(RecorderAccount {
                record: TaskRecord {
                    worker: 500,
                    ..TaskRecord::default()
                },
                group: HOSTILE.into(),
                held: HeldParts::default(),
                holders: vec![NamedHolder {
                    comm: HOSTILE.into(),
                    pid: 901,
                    whose: HOSTILE.into(),
                    held_ns: 2_800_000_000,
                    samples: 0,
                }],
            }),
            ..Cause::default()
        }),
        detail: vec![runq_workload::Detail::Host(
            runq_workload::HostDetail::RunnableWait {
                pid: 500,
                comm: HOSTILE.into(),
                waited_ms: 12.0,
                cpu: 0,
                at_ns: 0,
                waits: 1,
                mean_ns: 12_000_000,
                source: "BPF".into(),
            },
        )],
        not_judged: None,
    }
}

/// A failed run of one group named [`HOSTILE`].
fn run() -> RunOutcome {
    let reports = vec![WorkerReport {
        tid: 500,
        max_gap_ms: 2_900,
        wall_time_ns: 3_000_000_000,
        cpu_time_ns: 50_000_000,
        work_units: 10,
        ..Default::default()
    }];
    RunOutcome {
        scenario: HOSTILE.into(),
        placement: Placement::Unplaced {
            reason: "test".into(),
        },
        interrupted: false,
        spawn_ns: 0,
        run_ns: 3_000_000_000,
        collect_ns: 0,
        stale_cgroups_removed: 0,
        scheduler: None,
        scheduler_death: None,
        run_error: Some(format!("a worker named {HOSTILE} exited")),
        groups: vec![summarize_group(
            0,
            HOSTILE,
            "SpinWait",
            WakeFigure::Latency,
            &reports,
        )],
        checks: vec![check(false)],
        skipped_checks: vec![SkippedCheck {
            check: CheckId::MaxScxFallbackRate,
            group: "scheduler".into(),
            reason: HOSTILE.into(),
        }],
        series: None,
        host_load: None,
        recorded: Err("no recorder in this test".into()),
        recorder: Default::default(),
        verdict: Verdict::Fail,
        reports,
    }
}

#[test]
fn a_runs_report_its_evidence_and_first_line_escape_names() {
    let o = run();
    let text = outcome(&o, true);
    assert_safe(
        &text
            .replace("\x1b[1m", "")
            .replace("\x1b[31m", "")
            .replace("\x1b[33m", "")
            .replace("\x1b[0m", ""),
    );
    let plain = outcome(&o, false);
    assert_safe(&plain);
    let report = EvidenceReport {
        checks: vec![Evidence {
            check: "max_gap_ms".into(),
            group: HOSTILE.into(),
            summary: format!("`{HOSTILE}` 901 held CPU 0"),
            window_s: None,
            trace_file: None,
            ctprof: Some(CtprofEvidence {
                snapshots_s: [0.1, 2.9],
                threads: vec![ThreadDeltas {
                    tid: 901,
                    role: "holder".into(),
                    comm: HOSTILE.into(),
                    presence: Presence::BeforeOnly,
                    deltas: Vec::new(),
                    most_moved: None,
                }],
            }),
        }],
        ..EvidenceReport::default()
    };
    let with = flight::with_report(plain, Some(&report));
    assert_safe(&with);
    assert!(
        with.contains(&format!("holder 901 `{ESCAPED}` ended")),
        "{with}"
    );
    let lines = headline::first_lines(&o, Some(&report)).unwrap();
    for line in lines.lines() {
        assert_safe(line);
    }
    assert!(lines.lines().count() >= 2, "{lines:?}");
}

#[test]
fn the_repeats_summary_escapes_group_names() {
    let s = RepeatSummary {
        repeats: 3,
        groups: vec![GroupSpread {
            group: HOSTILE.into(),
            work_rate_per_s: Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0,
            },
            wake_p99_ns: None,
        }],
        checks: vec![CheckTally {
            group: HOSTILE.into(),
            check: "max_gap_ms".into(),
            passed: 2,
            of: 3,
        }],
    };
    assert_safe(&repeat_summary(&s));
}

/// A saved run of one group named [`HOSTILE`] on a host named so too.
fn saved(path: &str) -> SavedRun {
    let figures = GroupFigures {
        group: HOSTILE.into(),
        work_type: "PipeIo".into(),
        work_rate_per_s: 10.0,
        wake_latency_ns: WakePercentiles {
            p50: None,
            p90: None,
            p99: None,
            p99_9: None,
            samples: 0,
            total: 0,
        },
        wake_figure: WakeFigure::Latency,
        off_cpu_pct: 1.0,
        max_gap_ms: 2,
        migrations: 0,
        fairness: None,
        run_delay_pct: None,
    };
    SavedRun {
        path: path.into(),
        host: HostFacts {
            hostname: HOSTILE.into(),
            kernel_release: "6.18".into(),
            cpu_model: "x".into(),
            online_cpus: 2,
            cgroup_layout: "v2".into(),
            sched_ext: "no sched_ext".into(),
            scheduler_command: None,
            loop_clock: "tsc".into(),
        },
        scenario: serde_json::json!({}),
        scenario_name: HOSTILE.into(),
        repeats: vec![vec![figures]],
    }
}

#[test]
fn a_comparison_escapes_group_and_file_names() {
    let (a, b) = (saved(&format!("a{HOSTILE}.json")), saved("b.json"));
    let notes = Differences {
        mismatches: Vec::new(),
        notes: vec![format!("host: {HOSTILE} vs h")],
    };
    let c = Comparison::new(&a, &b, 5.0, notes).unwrap();
    assert_safe(&comparison(&c));
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains("\\u001b[2J"), "JSON keeps the name: {json}");
}
