//! `runq hud` end to end (root), on the demo programs of runq-demo: it
//! finds each known blocker with its category and file:line and none of
//! the spawn_blocking twins, both in the workspace's frame-pointer build
//! and in a build with cargo's defaults (no frame pointers); attached to
//! the control it finds no blocker; with tracefs unmounted it mounts it
//! and works.
//!
//! Each test runs its own demo and sessions, side by side with the others
//! (and with the other commands' tests): the test that needs tracefs
//! missing runs hud in a mount namespace of its own, and the run-queue
//! test's hog is a plain `yes` pinned beside its service.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The demo `bin` built without frame pointers (cargo's default for
/// them; the workspace forces them in .cargo/config.toml), shared by the
/// tests through runq-testkit.
fn demo_without_frame_pointers(bin: &str) -> PathBuf {
    runq_testkit::demos_without_frame_pointers().join(bin)
}

/// The runq binary under test.
pub(super) fn runq_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_runq"))
}

/// The demo program `name` of runq-demo, as the workspace builds it.
pub(super) fn demo_bin(name: &str) -> PathBuf {
    runq_testkit::demo_bin(name)
}

/// A child killed and reaped when the test ends, even by a panic (a CPU
/// hog left behind would load every later test).
pub(super) struct KillOnDrop(pub(super) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long a demo runs: long enough for every hud session of a test on a
/// loaded host (each test kills its demo when it ends).
pub(super) const DEMO_LIFETIME: u32 = 60;

/// Starts a demo binary for `secs` seconds; returns it and its pid.
fn start(exe: impl AsRef<OsStr>, secs: u32) -> (Child, u32) {
    let mut demo = Command::new(exe);
    demo.arg(secs.to_string());
    start_command(demo)
}

/// Starts `cmd` (a demo, perhaps under a wrapper); returns it and the pid
/// the demo prints first.
pub(super) fn start_command(mut cmd: Command) -> (Child, u32) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("start the demo");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = line.trim().parse().expect("the demo prints its pid");
    (child, pid)
}

/// Runs `runq hud` headless on `pid`; returns the JSON report and export,
/// and checks that replaying the export gives the same report and that the
/// folded export names the blockers.
pub(super) fn hud(runq: &Path, pid: u32, secs: u32, extra: &[&OsStr]) -> (Value, Value) {
    hud_then(runq, pid, secs, extra, || {})
}

/// [`hud`], calling `reported` as soon as the report is out, while hud is
/// still detaching its probes (about 3 s with `--exact-polls`).
pub(super) fn hud_then(
    runq: &Path,
    pid: u32,
    secs: u32,
    extra: &[&OsStr],
    reported: impl FnOnce(),
) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("hud.json");
    let folded = dir.path().join("hud.folded");
    let mut child = Command::new(runq)
        .args(["hud", "--pid", &pid.to_string(), "--headless", "--json"])
        .args(["--duration", &format!("{secs}s"), "--output"])
        .arg(&export)
        .arg("--output-folded")
        .arg(&folded)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first JSON value is whole once its last byte is read, before EOF.
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let report = serde_json::Deserializer::from_reader(stdout)
        .into_iter::<Value>()
        .next();
    reported();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "runq hud: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report.expect("a report").expect("report JSON");
    runq_testkit::assert_matches_schema("hud", &report);
    let trace =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).expect("export JSON");
    (report, trace)
}

pub(super) fn blockers<'a>(report: &'a Value, category: &str) -> Vec<&'a Value> {
    report["blockers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["category"] == category)
        .collect()
}

pub(super) fn mentions(b: &Value, name: &str) -> bool {
    b["user_frames"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().unwrap_or("").contains(name))
}

/// hud on a demo binary names the four blockers in their categories and
/// none of the spawn_blocking twins; returns the report.
fn names_the_demo_blockers(runq: &Path, demo: impl AsRef<OsStr>) -> Value {
    let (mut demo, pid) = start(demo, DEMO_LIFETIME);
    let (report, trace) = hud(runq, pid, 4, &[]);
    let _ = demo.kill();
    let _ = demo.wait();

    let calls = blockers(&report, "blocking_call");
    for (name, what) in [
        ("demo_thread_sleep", "thread sleep"),
        ("demo_file_read", "synchronous file read"),
        ("demo_mutex_lock", "contended mutex"),
    ] {
        let b = calls.iter().find(|b| mentions(b, name));
        let b = b.unwrap_or_else(|| panic!("no blocking call for the {what}: {report:#}"));
        let frames = b["sample_stack"].as_array().unwrap();
        let located = frames.iter().any(|f| {
            f["function"].as_str().unwrap_or("").contains(name)
                && f["file"].as_str().is_some_and(|p| p.ends_with("lib.rs"))
        });
        assert!(located, "{name} has no file:line: {b:#}");
    }
    // The spinning task is named: by its sampled CPU, or, when a busy
    // host kept it off the CPU (no sample at all), by its run-queue waits.
    let polls = blockers(&report, "task_cpu_sampled");
    let waits = blockers(&report, "run_queue_delay");
    assert!(
        polls
            .iter()
            .chain(waits.iter())
            .any(|b| mentions(b, "demo_cpu_spin")),
        "the spinning task is not named: {report:#}"
    );
    for b in calls.iter().chain(polls.iter()) {
        assert!(
            !mentions(b, "twin_"),
            "a spawn_blocking twin was reported: {b:#}"
        );
    }
    assert_eq!(report["lost_events"], 0);
    assert!(report["stacks"]["warning"].is_null(), "{report:#}");
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["dur"].as_f64().unwrap() >= 5000.0));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "thread_name"));
    report
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn hud_names_the_demo_blockers_and_not_the_twins() {
    let runq = runq_bin();
    let report = names_the_demo_blockers(&runq, demo_bin("runq-demo-tokio"));
    assert_eq!(report["stacks"]["source"], "frame_pointers", "{report:#}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn without_frame_pointers_hud_unwinds_copied_stacks_by_dwarf() {
    let runq = runq_bin();
    let demo = demo_without_frame_pointers("runq-demo-tokio");
    let report = names_the_demo_blockers(&runq, demo.to_str().unwrap());
    let stacks = &report["stacks"];
    assert_eq!(stacks["source"], "dwarf", "{report:#}");
    assert!(
        stacks["unwind"]["complete"].as_u64().unwrap() > 0,
        "{stacks:#}"
    );
    assert!(
        stacks["bytes_copied_per_s"].as_f64().unwrap() > 0.0,
        "{stacks:#}"
    );
    let objects = stacks["objects"].as_array().unwrap();
    assert!(
        objects
            .iter()
            .any(|o| o["path"].as_str().unwrap().ends_with("runq-demo-tokio")
                && o["method"] == "dwarf_cfi"),
        "{stacks:#}"
    );
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn forcing_frame_pointers_on_a_binary_without_them_warns() {
    let runq = runq_bin();
    let demo = demo_without_frame_pointers("runq-demo-tokio");
    let (mut child, pid) = start(demo.to_str().unwrap(), DEMO_LIFETIME);
    let (report, _) = hud(&runq, pid, 3, &["--unwind".as_ref(), "fp".as_ref()]);
    let _ = child.kill();
    let _ = child.wait();
    let warning = report["stacks"]["warning"]
        .as_str()
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!(warning.contains("no frame pointers"), "{warning}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_runtime_with_a_custom_name_is_found_by_its_stacks_or_its_prefix() {
    let runq = runq_bin();
    let (mut demo, pid) = start(demo_bin("runq-demo-named"), DEMO_LIFETIME);
    let (by_stacks, _) = hud(&runq, pid, 3, &[]);
    let (by_prefix, _) = hud(&runq, pid, 2, &["--workers".as_ref(), "svc".as_ref()]);
    let _ = demo.kill();
    let _ = demo.wait();
    let discovery = by_stacks["discovery"].as_str().unwrap();
    assert!(
        discovery.contains("stacks") && discovery.contains("svc"),
        "{by_stacks:#}"
    );
    for w in by_stacks["workers"].as_array().unwrap() {
        assert_eq!(w["comm"], "svc", "a pool-N thread was taken: {by_stacks:#}");
    }
    assert!(by_prefix["discovery"].as_str().unwrap().contains("prefix"));
    for report in [&by_stacks, &by_prefix] {
        let calls = blockers(report, "blocking_call");
        assert!(
            calls.iter().any(|b| mentions(b, "demo_thread_sleep")),
            "{report:#}"
        );
        assert!(
            !calls.iter().any(|b| mentions(b, "twin_")),
            "the blocking pool was taken for workers: {report:#}"
        );
    }
}

/// True when `path` is a mounted tracefs.
fn tracefs_at(path: &str) -> bool {
    Path::new(path).join("events").is_dir()
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn hud_mounts_tracefs_when_it_is_missing() {
    use std::os::unix::process::CommandExt;
    const TRACING: &str = "/sys/kernel/tracing";
    let runq = runq_bin();
    if tracefs_at("/sys/kernel/debug/tracing") {
        eprintln!("skipped: tracefs is also mounted under debugfs, so it cannot be made missing");
        return;
    }
    let (mut control, pid) = start(demo_bin("runq-demo-control"), DEMO_LIFETIME);
    // hud runs in a mount namespace of its own where tracefs is not
    // mounted, so the sessions of the other tests keep theirs.
    let script = format!(
        "test -d {TRACING}/events && exit 97
         {} hud --pid {pid} --headless --json --duration 1s || exit
         test -d {TRACING}/events && echo tracefs-mounted >&2",
        runq.display()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script]);
    // SAFETY: only syscalls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let root = c"/";
            let tracing = c"/sys/kernel/tracing";
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // Not mounted (EINVAL) is what the test wants.
            libc::umount2(tracing.as_ptr(), libc::MNT_DETACH);
            Ok(())
        });
    }
    let out = cmd.output().expect("sh in a mount namespace");
    let _ = control.kill();
    let _ = control.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(97), "tracefs still mounted: {err}");
    assert!(out.status.success(), "runq hud: {err}");
    assert!(
        err.contains("tracefs-mounted"),
        "hud did not mount tracefs: {err}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    assert!(report["events"].is_object(), "{report:#}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn hud_finds_nothing_in_the_control() {
    let runq = runq_bin();
    let (mut control, pid) = start(demo_bin("runq-demo-control"), DEMO_LIFETIME);
    let (report, _) = hud(&runq, pid, 3, &[]);
    let _ = control.kill();
    let _ = control.wait();
    assert!(blockers(&report, "blocking_call").is_empty(), "{report:#}");
    assert!(
        report["events"]["samples"].as_u64().unwrap() > 0
            || report["events"]["idle_parks"].as_u64().unwrap() > 0,
        "hud saw the control's workers: {report:#}"
    );
}

/// True when the blocking call `name` is reported with a lib.rs line.
fn located(report: &Value, name: &str) -> bool {
    blockers(report, "blocking_call").iter().any(|b| {
        b["sample_stack"].as_array().unwrap().iter().any(|f| {
            f["function"].as_str().unwrap_or("").contains(name)
                && f["file"].as_str().is_some_and(|p| p.ends_with("lib.rs"))
        })
    })
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn an_unstripped_copy_gives_a_stripped_target_its_lines() {
    let runq = runq_bin();
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("runq-demo-tokio");
    let unstripped = demo_bin("runq-demo-tokio");
    let strip = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(&unstripped)
        .status();
    if !strip.is_ok_and(|s| s.success()) {
        eprintln!("skipped: needs strip (binutils)");
        return;
    }
    let (mut demo, pid) = start(stripped.to_str().unwrap(), DEMO_LIFETIME);
    let (plain, _) = hud(&runq, pid, 3, &[]);
    let (with_target, _) = hud(
        &runq,
        pid,
        3,
        &["--debug-file".as_ref(), unstripped.as_ref()],
    );
    let wrong = Command::new(&runq)
        .args([
            "hud",
            "--pid",
            &pid.to_string(),
            "--headless",
            "--duration",
            "1s",
        ])
        .arg("--debug-file")
        .arg(demo_bin("runq-demo-control"))
        .output()
        .unwrap();
    let _ = demo.kill();
    let _ = demo.wait();
    assert!(!located(&plain, "demo_thread_sleep"), "{plain:#}");
    assert!(plain["symbol_hint"].is_string(), "{plain:#}");
    assert!(
        located(&with_target, "demo_thread_sleep"),
        "{with_target:#}"
    );
    assert_eq!(wrong.status.code(), Some(2));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(err.contains("build ID"), "{err}");
}

fn tmux(args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux (apt-get install tmux)")
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn the_live_view_shows_the_blocker_and_quits_cleanly() {
    let runq = runq_bin();
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: needs tmux");
        return;
    }
    let (mut demo, pid) = start(demo_bin("runq-demo-tokio"), DEMO_LIFETIME);
    let session = format!("runq-hud-e2e-{}", std::process::id());
    let cmd = format!(
        "{} hud --pid {pid}; echo HUD-EXIT=$?; sleep 30",
        runq.display()
    );
    let ok = tmux(&[
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
    assert!(
        ok.status.success(),
        "tmux: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let capture = || {
        String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &session]).stdout).into_owned()
    };
    let mut screen = String::new();
    for _ in 0..40 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        screen = capture();
        if screen.contains("demo_thread_sleep") {
            break;
        }
    }
    let shown = screen.contains("demo_thread_sleep")
        && screen.contains("Hotspots")
        && screen.contains("Status");
    tmux(&["send-keys", "-t", &session, "q"]);
    let mut after = String::new();
    for _ in 0..40 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        after = capture();
        if after.contains("HUD-EXIT=") {
            break;
        }
    }
    tmux(&["kill-session", "-t", &session]);
    let _ = demo.kill();
    let _ = demo.wait();
    assert!(shown, "the live view did not show the blocker:\n{screen}");
    assert!(
        after.contains("HUD-EXIT=0"),
        "q did not quit cleanly:\n{after}"
    );
    assert!(
        !after.contains("Hotspots (by"),
        "the terminal was not restored:\n{after}"
    );
}

/// A service hud has never seen, built with cargo's defaults (no frame
/// pointers, no debug info), blocking inside a static C library, the
/// system's stripped libz, a waited child and a parking_lot mutex: every
/// blocker is named by the service's own function, in its category, with
/// no placeholder, and its cooperative tasks claim no poll length.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_service_built_with_cargo_defaults_is_blamed_on_its_own_functions() {
    let runq = runq_bin();
    let service = runq_testkit::demo_with_cargo_defaults("runq-demo-service");
    let (mut child, pid) = start(service.to_str().unwrap(), DEMO_LIFETIME);
    let (report, _) = hud(&runq, pid, 5, &[]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        report["app_crates"],
        serde_json::json!(["runq_demo_service"]),
        "{report:#}"
    );
    // The contended parking_lot mutex spins with sched_yield before it
    // parks: on a loaded host its waiters spend that time in the run queue
    // (run_queue_delay, under the same function) more than parked.
    for (categories, name) in [
        (
            &["task_cpu_sampled"][..],
            "runq_demo_service::compress_orders",
        ),
        (&["task_cpu_sampled"], "runq_demo_service::checksum_archive"),
        (&["blocking_call"], "runq_demo_service::render_invoice"),
        (
            &["blocking_call", "run_queue_delay"],
            "runq_demo_service::update_ledger",
        ),
    ] {
        let found = categories
            .iter()
            .any(|c| blockers(&report, c).iter().any(|b| b["function"] == name));
        assert!(found, "{name} not named in {categories:?}: {report:#}");
    }
    // Blocked and CPU time is never under a placeholder.
    for category in ["blocking_call", "task_cpu_sampled"] {
        for b in blockers(&report, category) {
            let f = b["function"].as_str().unwrap();
            assert!(!f.starts_with('['), "placeholder: {b:#}");
        }
    }
    let libz = blockers(&report, "task_cpu_sampled")
        .into_iter()
        .find(|b| b["function"] == "runq_demo_service::checksum_archive")
        .unwrap();
    let below = libz["below"].as_object().unwrap();
    assert!(below.keys().any(|p| p.contains("libz.so")), "{libz:#}");
    assert_eq!(
        report["workers"].as_array().unwrap().len(),
        2,
        "pool threads share the name"
    );
}

/// `--exact-polls` on the service built with cargo's defaults: the two
/// 30 ms CPU-bound handlers are long polls, named by their own functions;
/// the cooperative tasks (1 ms polls and a yield, more tasks than
/// workers) never are, and neither are the sleeping handlers (their polls
/// are off CPU, which a poll's length leaves out).
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn exact_polls_time_the_long_polls_and_never_the_cooperative_ones() {
    let runq = runq_bin();
    let service = runq_testkit::demo_with_cargo_defaults("runq-demo-service");
    let (child, pid) = start(service.to_str().unwrap(), DEMO_LIFETIME);
    let mut child = KillOnDrop(child);
    // The service stops once the report is out, not after the detach.
    let stop = || drop(child.0.kill());
    let (report, _) = hud_then(&runq, pid, 5, &[OsStr::new("--exact-polls")], stop);
    assert_eq!(report["poll_timing"]["method"], "exact", "{report:#}");
    assert!(report["poll_timing"]["instances"].as_u64().unwrap() >= 1);
    let long = blockers(&report, "long_poll");
    for name in [
        "runq_demo_service::compress_orders",
        "runq_demo_service::checksum_archive",
    ] {
        assert!(
            long.iter().any(|b| b["function"] == name),
            "{name} is no long poll: {report:#}"
        );
    }
    for b in &long {
        let f = b["function"].as_str().unwrap();
        assert!(
            !f.contains("cooperative_batch") && !f.contains("render_invoice"),
            "a false long poll: {b:#}"
        );
        // A poll's length is at most its wall time: no poll of the
        // service's handlers runs much past its 30 ms.
        assert!(b["max_ns"].as_u64().unwrap() < 1_000_000_000, "{b:#}");
    }
}

/// `--exact-polls` on runq-demo-busy, whose every poll is 1 ms of work and
/// a yield (thousands of polls a second): no long poll, but for a rare
/// stall of a worker that no context switch explains (on this VM, one or
/// two of about 10 ms in some sessions; the vCPU's own preemption by the
/// host is invisible to the guest).
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn exact_polls_find_no_long_poll_in_cooperative_code() {
    let runq = runq_bin();
    let busy = demo_bin("runq-demo-busy");
    let mut busy = Command::new(&busy);
    busy.args([DEMO_LIFETIME.to_string().as_str(), "4"]);
    let (child, pid) = start_command(busy);
    let mut child = KillOnDrop(child);
    // The pid is printed before the runtime starts its 4 workers.
    let tasks = format!("/proc/{pid}/task");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_dir(&tasks).map_or(0, |d| d.count()) < 5 {
        assert!(std::time::Instant::now() < deadline, "no workers in {pid}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stop = || drop(child.0.kill());
    let (report, _) = hud_then(&runq, pid, 4, &[OsStr::new("--exact-polls")], stop);
    assert_eq!(report["poll_timing"]["method"], "exact");
    let long = report["events"]["long_polls"].as_u64().unwrap();
    assert!(long <= 3, "{long} false long polls: {report:#}");
}

/// The target exits mid-session: the report keeps its name and the CPU
/// figures read while it lived, and lists the two workers (the blocking
/// pool's threads share their name; on a busy host hud may start after
/// the runtime has begun to shut one down, and a worker the host starved
/// may have had no CPU while hud watched). A third thread is listed only
/// when hud saw a worker's loop on it (Tokio runs its workers on
/// blocking-pool threads; a clean-clone CI run listed one), never a
/// thread seen only in the pool.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_target_that_exits_mid_session_keeps_its_figures() {
    let runq = runq_bin();
    let (mut child, pid) = start(demo_bin("runq-demo-tokio"), 8);
    // Reaped as soon as it exits, as its parent would (a zombie still has
    // its /proc entry).
    let reaper = std::thread::spawn(move || child.wait());
    let (report, _) = hud(&runq, pid, 15, &[]);
    let _ = reaper.join();
    assert_eq!(report["target_exited"], true, "{report:#}");
    assert_eq!(report["comm"], "runq-demo-tokio", "{report:#}");
    let workers = report["workers"].as_array().unwrap();
    assert!((1..=3).contains(&workers.len()), "{report:#}");
    for w in workers {
        assert!(!w["comm"].as_str().unwrap().is_empty(), "{w:#}");
    }
    if workers.len() == 3 {
        assert!(
            workers.iter().all(|w| w["runtime"].is_string()),
            "a third thread must have shown a worker's loop: {report:#}"
        );
    }
    assert!(
        workers.iter().any(|w| w["cpu_ns"].as_u64().unwrap() > 0),
        "CPU read while it lived: {report:#}"
    );
}

/// A CPU hog shares CPU 0 with the service (built with cargo's
/// defaults): the workers' run-queue waits name the hog as the task that
/// held the CPU, and the victims carry whole stacks (copied at their
/// preemption), so their rows name the service's functions, not a leaf.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn run_queue_waits_name_the_cpu_holder_and_the_victims_function() {
    let runq = runq_bin();
    let service = runq_testkit::demo_with_cargo_defaults("runq-demo-service");
    let taskset = |args: &[&str]| {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).args(args);
        c
    };
    let (mut child, pid) = start_command(taskset(&[
        service.to_str().unwrap(),
        &DEMO_LIFETIME.to_string(),
    ]));
    let hog = KillOnDrop(
        taskset(&["yes"])
            .stdout(Stdio::null())
            .spawn()
            .expect("yes (coreutils)"),
    );
    let (report, _) = hud(&runq, pid, 4, &[]);
    drop(hog);
    let _ = child.kill();
    let _ = child.wait();
    let holders = report["run_queue"]["holders"].as_array().unwrap();
    assert!(
        holders
            .iter()
            .any(|h| h["comm"] == "yes" && h["same_process"] == false),
        "the hog is not named as the CPU's holder: {report:#}"
    );
    let waits = blockers(&report, "run_queue_delay");
    let count = |b: &&Value| b["count"].as_u64().unwrap();
    let total: u64 = waits.iter().map(count).sum();
    // A wait after a sleep whose syscall exit came after another switch
    // keeps only the frame-pointer prefix; on a busy host a few do, and
    // one of them may be long: most waits, by count, keep whole stacks.
    let cut: u64 = waits
        .iter()
        .filter(|b| {
            b["function"]
                .as_str()
                .unwrap()
                .starts_with("[stack cut short")
        })
        .map(count)
        .sum();
    assert!(
        total > 0,
        "no run-queue wait behind a hog on the same CPU: {report:#}"
    );
    assert!(cut * 2 < total, "victims' stacks cut short: {report:#}");
    assert!(
        waits.iter().any(|b| b["function"]
            .as_str()
            .unwrap()
            .starts_with("runq_demo_service::")),
        "no victim named by the service's function: {report:#}"
    );
}
