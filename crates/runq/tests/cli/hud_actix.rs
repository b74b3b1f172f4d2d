//! `runq hud` end to end (root) on runq-demo-actix, an actix-web 4
//! service: three HTTP workers, each an arbiter thread
//! (`actix-rt|system:0|arbiter:N`) running its own `current_thread`
//! runtime, the actix system's runtime on the main thread, and the
//! `web::block` pools' threads under Tokio's default name
//! (`tokio-rt-worker`). hud takes the runtimes' threads for workers, by
//! their stacks (the arbiters always, the system's mostly idle thread
//! when it saw its loop), in the headless report, its export and the
//! live view's; no pool thread is a worker or carries a finding; and when
//! every handler offloads its work (`calm`), `--exact-polls` reports no
//! long poll and nothing the pool ran.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::Read;
use std::process::Command;

use serde_json::Value;

use super::hud::DEMO_LIFETIME;
use super::hud::{blockers, demo_bin, hud_then, mentions, runq_bin, start_command, KillOnDrop};

/// The parts of a request the demo's handler runs (on the worker, or
/// through `web::block` when calm).
const PARTS: [&str; 4] = [
    "render_page",
    "compress_body",
    "record_request",
    "run_child",
];

/// The threads of `pid` whose comm is `comm`.
fn threads_named(pid: u32, comm: &str) -> BTreeSet<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    dir.filter_map(|e| {
        let e = e.ok()?;
        let name = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (name.trim() == comm).then(|| e.file_name().to_str()?.parse().ok())?
    })
    .collect()
}

/// The demo's runtime threads and its pool threads, read from /proc.
struct Truth {
    /// The arbiters and, in `late`, the late system's thread: runtimes at
    /// work, each a worker.
    workers: BTreeSet<u64>,
    /// The main thread: the actix system's runtime, a worker too, but one
    /// that wakes a few times a session, so that hud may not see its loop.
    system: u64,
    /// The blocking pools' threads.
    pool: BTreeSet<u64>,
}

impl Truth {
    fn read(pid: u32) -> Truth {
        let mut workers = threads_named(pid, "actix-rt|system");
        workers.extend(threads_named(pid, "late-rt"));
        let pool = threads_named(pid, "tokio-rt-worker");
        let system = u64::from(pid);
        Truth {
            workers,
            system,
            pool,
        }
    }
}

/// Starts the demo in `mode`; returns it and its pid.
fn start_demo(mode: &str) -> (KillOnDrop, u32) {
    let mut demo = Command::new(demo_bin("runq-demo-actix"));
    demo.args([DEMO_LIFETIME.to_string().as_str(), mode]);
    let (child, pid) = start_command(demo);
    (KillOnDrop(child), pid)
}

/// A headless hud session of `secs` on the demo in `mode`; returns the
/// report, the export and the threads as they were at its end.
fn session(mode: &str, secs: u32, extra: &[&OsStr]) -> (Value, Value, Truth) {
    let (mut demo, pid) = start_demo(mode);
    let mut truth = None;
    let (report, trace) = hud_then(&runq_bin(), pid, secs, extra, || {
        truth = Some(Truth::read(pid));
        drop(demo.0.kill());
    });
    (report, trace, truth.unwrap())
}

/// The workers of `report` are exactly the truth's (`n` threads), and
/// perhaps the system's thread, each a `current_thread` runtime's; none is
/// a pool thread, and no finding of the export is on a thread that is no
/// worker.
fn judge_workers(report: &Value, trace: &Value, n: usize, truth: &Truth) {
    assert_eq!(
        truth.workers.len(),
        n,
        "the demo's runtimes: {:?}",
        truth.workers
    );
    let listed = report["workers"].as_array().unwrap();
    let mut tids: BTreeSet<u64> = listed.iter().map(|w| w["tid"].as_u64().unwrap()).collect();
    tids.remove(&truth.system);
    assert_eq!(tids, truth.workers, "pool {:?}: {report:#}", truth.pool);
    for w in listed {
        assert_eq!(w["runtime"], "current_thread", "{w:#}");
    }
    let events = trace["traceEvents"].as_array().unwrap();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let tid = e["tid"].as_u64().unwrap();
        let worker = truth.workers.contains(&tid) || tid == truth.system;
        assert!(worker, "a finding off the workers: {e:#}");
    }
    assert_eq!(trace["runq_hud"]["workers"], report["workers"]);
}

/// Mean time per finding of the blocker named `name`, ms.
fn mean_ms(b: &Value) -> f64 {
    b["total_ns"].as_f64().unwrap() / b["count"].as_f64().unwrap() / 1e6
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn actix_workers_are_its_runtimes_threads_and_its_blockers_are_named() {
    let (report, trace, truth) = session("blocking", 5, &[]);
    judge_workers(&report, &trace, 3, &truth);
    assert!(
        report["discovery"].as_str().unwrap().contains("stacks"),
        "{report:#}"
    );
    let calls = blockers(&report, "blocking_call");
    let render = calls.iter().find(|b| {
        b["user_frames"][0]
            .as_str()
            .is_some_and(|f| f.ends_with("render_page"))
    });
    let render = render.unwrap_or_else(|| panic!("the render is no blocking call: {report:#}"));
    // A 25 ms sleep each time.
    assert!((12.5..=50.0).contains(&mean_ms(render)), "{render:#}");
    let sampled = blockers(&report, "task_cpu_sampled");
    assert!(
        sampled.iter().any(|b| mentions(b, "compress_body")),
        "zstd on the worker was not sampled: {report:#}"
    );
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn an_actix_service_that_offloads_its_work_has_no_long_poll_and_no_blocker() {
    // 20 ms: a poll kept 5 ms on its CPU by interrupts or a stolen vCPU
    // on a busy host is no finding of this demo's, while a pool thread
    // taken for a worker would still show its 25 ms render.
    let args = ["--exact-polls", "--threshold", "20ms"].map(OsStr::new);
    let (report, trace, truth) = session("calm", 5, &args);
    judge_workers(&report, &trace, 3, &truth);
    assert!(
        truth.pool.len() >= 3,
        "the handlers used no pool: {:?}",
        truth.pool
    );
    assert_eq!(report["poll_timing"]["method"], "exact", "{report:#}");
    assert!(blockers(&report, "long_poll").is_empty(), "{report:#}");
    assert!(blockers(&report, "blocking_call").is_empty(), "{report:#}");
    for b in report["blockers"].as_array().unwrap() {
        for part in PARTS {
            assert!(!mentions(b, part), "offloaded work reported: {b:#}");
        }
    }
}

/// A second actix system started 3 s after the demo printed its pid, on
/// a thread of a name discovery never saw (`late-rt`): its loop makes it
/// a worker, and its blocker is named.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn an_actix_system_started_late_under_a_name_of_its_own_is_found() {
    let (report, trace, truth) = session("late", 7, &[]);
    judge_workers(&report, &trace, 4, &truth);
    let late = report["workers"].as_array().unwrap();
    let late = late.iter().find(|w| w["comm"] == "late-rt");
    let late = late.unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        late["findings"]["blocking_call"].as_u64() > Some(0),
        "{late:#}"
    );
}

fn tmux(args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux (apt-get install tmux)")
}

/// The live view on the blocking demo, quit after 6 s: its export lists
/// the same workers, and no finding on a pool thread.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn the_live_view_on_actix_lists_only_its_runtimes_threads() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: needs tmux");
        return;
    }
    let (mut demo, pid) = start_demo("blocking");
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("live.json");
    let session = format!("runq-hud-actix-{}", std::process::id());
    let cmd = format!(
        "{} hud --pid {pid} --output {}; echo HUD-EXIT=$?; sleep 30",
        runq_bin().display(),
        export.display()
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    assert!(started.status.success(), "{started:?}");
    std::thread::sleep(std::time::Duration::from_secs(6));
    tmux(&["send-keys", "-t", &session, "q"]);
    let mut screen = String::new();
    for _ in 0..80 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let out = tmux(&["capture-pane", "-p", "-t", &session]).stdout;
        screen = String::from_utf8_lossy(&out).into_owned();
        if screen.contains("HUD-EXIT=") {
            break;
        }
    }
    let truth = Truth::read(pid);
    tmux(&["kill-session", "-t", &session]);
    drop(demo.0.kill());
    assert!(screen.contains("HUD-EXIT=0"), "{screen}");
    let mut text = String::new();
    std::fs::File::open(&export)
        .and_then(|mut f| f.read_to_string(&mut text))
        .unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap();
    let report = &trace["runq_hud"];
    judge_workers(report, &trace, 3, &truth);
    assert!(!blockers(report, "blocking_call").is_empty(), "{report:#}");
}
