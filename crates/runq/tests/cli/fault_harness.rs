//! The fault harness: each long command, signalled at each phase with
//! each of SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGKILL. After each cell:
//! the exit is 128+N (or death by N where the signal beat the handler, and
//! always for SIGKILL), the report is there when the run was under way,
//! and nothing of that runq remains: no process of its process group, no
//! tracefs instance, no run cgroup (after a SIGKILL, `runq clean` finds
//! and removes them), no file in its TMPDIR.
//!
//! A phase is reached by a line runq writes with `-v` (the run's capacity
//! line before the first fork, the host monitor's start, the collect line,
//! the recorder's read) or by a delay; where the signal lands a few
//! milliseconds later, the same assertions hold.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::common::{group_members, run_dirs_of, runq, signal};

/// A word a cell's arguments may hold: each cell puts a token of its own
/// there, so that a process its runq starts in a process group of its own
/// (collatz's profiler) and leaves behind is found by its command line.
const TOKEN: &str = "@TOKEN@";

/// The next cell's token.
static CELLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The signals of every cell.
const SIGNALS: [(i32, &str); 5] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGKILL, "SIGKILL"),
];

/// Where in a command's life the signal is sent.
#[derive(Debug, Clone, Copy)]
struct Phase {
    /// Its name in the matrix.
    name: &'static str,
    /// The line (on stdout or stderr) that marks it; `None`: from the start.
    marker: Option<&'static str>,
    /// How long after the marker.
    delay: Duration,
    /// Whether the command has a report to show by then.
    reports: bool,
}

const fn phase(name: &'static str, marker: Option<&'static str>, ms: u64, reports: bool) -> Phase {
    Phase {
        name,
        marker,
        delay: Duration::from_millis(ms),
        reports,
    }
}

/// One cell's outcome: what went wrong, if anything.
struct Cell {
    command: &'static str,
    phase: &'static str,
    signal: &'static str,
    finding: Option<String>,
    /// runq had ended before the signal was sent (a loaded host read its
    /// marker late, after a short phase was over): the cell tried nothing.
    missed: bool,
}

/// Runs `args` (runq's arguments, `-v` first) in a process group of its
/// own and a fresh TMPDIR, signals it at `phase`, and checks the end.
fn cell(
    command: &'static str,
    args: &[String],
    phase: Phase,
    (sig, sig_name): (i32, &'static str),
    report_mark: &str,
) -> Cell {
    let tmp = tempfile::tempdir().unwrap();
    let n = CELLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let token = format!("runq-fault-harness-{}-{n}", std::process::id());
    let mut cmd = runq();
    cmd.args(args.iter().map(|a| a.replace(TOKEN, &token)))
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // As from a terminal: a suite started in the background (`nohup`, a
    // shell's `&`) passes SIGINT, SIGQUIT and SIGHUP on ignored, and a
    // signal before runq's handlers would be lost, not refused.
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    };
    let mut child = cmd.spawn().expect("spawn runq");
    let pid = child.id();
    let (tx, rx) = mpsc::channel::<String>();
    let readers = [
        stream_lines(child.stdout.take().unwrap(), tx.clone()),
        stream_lines(child.stderr.take().unwrap(), tx),
    ];
    let mut seen = String::new();
    if let Some(marker) = phase.marker {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !seen.contains(marker) && Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
                seen.push_str(&line);
            }
        }
    }
    std::thread::sleep(phase.delay);
    // Reaped by the look: its pid may be another process's now.
    let missed = child.try_wait().is_ok_and(|s| s.is_some());
    if !missed {
        signal(pid as i32, sig);
    }
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    for r in readers {
        let _ = r.join();
    }
    seen.extend(rx.try_iter());
    let mut findings = Vec::new();
    match status {
        None => {
            findings.push("still running 30 s after the signal".into());
            signal(-(pid as i32), libc::SIGKILL);
            let _ = child.wait();
        }
        Some(s) => {
            let by_code = s.code() == Some(128 + sig) && sig != libc::SIGKILL;
            let by_signal =
                s.signal() == Some(sig) && (phase.marker.is_none() || sig == libc::SIGKILL);
            if !by_code && !by_signal {
                findings.push(format!("ended {s}, not 128+{sig}"));
            }
            if phase.reports && sig != libc::SIGKILL && !seen.contains(report_mark) {
                findings.push(format!("no report ({report_mark:?} missing)"));
            }
        }
    }
    findings.extend(leftovers(pid, tmp.path(), sig == libc::SIGKILL, &token));
    Cell {
        command,
        phase: phase.name,
        signal: sig_name,
        finding: (!findings.is_empty()).then(|| findings.join("; ")),
        missed,
    }
}

/// [`cell`], tried again (three tries in all) while runq ended before
/// the signal reached it.
fn cell_tried(
    command: &'static str,
    args: &[String],
    phase: Phase,
    sig: (i32, &'static str),
    report_mark: &str,
) -> Cell {
    let mut c = cell(command, args, phase, sig, report_mark);
    for _ in 1..3 {
        if !c.missed {
            break;
        }
        c = cell(command, args, phase, sig, report_mark);
    }
    if c.missed {
        c.finding = Some("ended before the signal, 3 tries".into());
    }
    c
}

/// Sends each line of `stream` to `tx`, on a thread.
fn stream_lines(
    stream: impl Read + Send + 'static,
    tx: mpsc::Sender<String>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line + "\n").is_err() {
                return;
            }
        }
    })
}

fn wait_bounded(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// What runq `pid` left: live processes of its group, tracefs instances,
/// run cgroups (removed by `runq clean` after a SIGKILL, and said so when
/// it could not), files in its TMPDIR.
fn leftovers(pid: u32, tmp: &Path, killed: bool, token: &str) -> Vec<String> {
    let mut found = Vec::new();
    let settled = Instant::now() + Duration::from_secs(5);
    let mut group = group_members(pid);
    let mut instances = instances_of(pid);
    while (!group.is_empty() || !instances.is_empty()) && Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(50));
        group = group_members(pid);
        instances = instances_of(pid);
    }
    if !group.is_empty() {
        found.push(format!("processes left: {group:?}"));
        signal(-(pid as i32), libc::SIGKILL);
    }
    let tagged = tagged_processes(token);
    if !tagged.is_empty() {
        found.push(format!("processes of its own group left: {tagged:?}"));
        for p in tagged {
            signal(-(p as i32), libc::SIGKILL);
        }
    }
    if !instances.is_empty() {
        found.push(format!("tracefs instances left: {instances:?}"));
    }
    if killed && !run_dirs_of(pid).is_empty() {
        let out = runq().arg("clean").output().unwrap();
        if !out.status.success() {
            found.push(format!(
                "runq clean: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let dirs = run_dirs_of(pid);
    if !dirs.is_empty() {
        found.push(format!("cgroups left: {dirs:?}"));
    }
    // A FAIL's evidence trace is an output the report names, not a
    // leftover (a run the signal met while it wrote its report FAILs
    // when the busy host's wakeups miss their bound).
    let files: Vec<PathBuf> = std::fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("runq-evidence-"))
                })
                .collect()
        })
        .unwrap_or_default();
    if !files.is_empty() {
        found.push(format!("temporary files left: {files:?}"));
    }
    found
}

/// Live processes whose command line holds `token`.
fn tagged_processes(token: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
                && super::common::alive(*p as i32)
        })
        .collect()
}

/// The tracefs instances runq `pid` made.
fn instances_of(pid: u32) -> Vec<String> {
    let prefix = format!("runq-{pid}-");
    [
        "/sys/kernel/tracing/instances",
        "/sys/kernel/debug/tracing/instances",
    ]
    .iter()
    .filter_map(|d| std::fs::read_dir(d).ok())
    .flat_map(|d| d.flatten())
    .map(|e| e.file_name().to_string_lossy().into_owned())
    .filter(|n| n.starts_with(&prefix))
    .collect()
}

/// Runs every phase × signal of one command; prints the matrix and fails
/// on any finding.
fn matrix(command: &'static str, args: &[String], phases: &[Phase], report_mark: &str) {
    // One matrix at a time, and none beside the tests that starve a CPU
    // on purpose (the harness's runs would be the load they measure).
    let _alone = super::evidence::STARVATION
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut cells = Vec::new();
    for &p in phases {
        for &s in &SIGNALS {
            cells.push(cell_tried(command, args, p, s, report_mark));
        }
    }
    let mut table = String::new();
    for c in &cells {
        let verdict = c.finding.as_deref().unwrap_or("ok");
        table.push_str(&format!(
            "{} | {} | {} | {verdict}\n",
            c.command, c.phase, c.signal
        ));
    }
    eprintln!("fault harness:\n{table}");
    let bad: Vec<&Cell> = cells.iter().filter(|c| c.finding.is_some()).collect();
    assert!(
        bad.is_empty(),
        "{} of {} cells failed:\n{table}",
        bad.len(),
        cells.len()
    );
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn run_ends_one_way_at_every_phase() {
    let args = strings(&[
        "-v",
        "run",
        "--work-type",
        "Bursty",
        "--param",
        "burst_ms=1",
        "--workers",
        "24",
        "--duration",
        "2s",
        "--flight-recorder=2",
        "--cgroup",
        "harness/a",
    ]);
    let phases = [
        phase("before start", None, 0, false),
        phase("spawning", Some("workers in 1 groups"), 0, false),
        phase("running", Some("host monitor: sampling"), 300, true),
        phase("collecting", Some("collect: stopping"), 0, true),
        phase("writing", Some("recorder: 24 workers"), 0, true),
    ];
    matrix("run", &args, &phases, "verdict:");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn ctprof_record_ends_one_way_at_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec");
    let args = strings(&[
        "ctprof",
        "record",
        "--interval",
        "200ms",
        "--count",
        "50",
        "--output",
        out.to_str().unwrap(),
    ]);
    let phases = [
        phase("before start", None, 0, false),
        phase("recording", Some("wrote "), 300, true),
    ];
    matrix("ctprof record", &args, &phases, "snapshots (");
}

#[test]
fn collatz_sweep_ends_one_way_at_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let args = strings(&[
        "collatz",
        "sweep",
        "--max-procs",
        "2",
        "--repeat",
        "20",
        "--outer",
        "3",
        "--inner",
        "20000",
        "--profiler",
        &format!("sleep 600; : {{pid}} {TOKEN}"),
        "--settle",
        "100ms",
        "--output",
        dir.path().join("sweep").to_str().unwrap(),
    ]);
    let phases = [
        phase("before start", None, 0, false),
        phase("sweeping", None, 700, false),
    ];
    matrix("collatz sweep", &args, &phases, "");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn hud_ends_one_way_at_every_phase() {
    let demo = super::hud::demo_bin("runq-demo-tokio");
    let mut target = Command::new(demo)
        .arg("120")
        .stdout(Stdio::null())
        .spawn()
        .expect("start the demo");
    let pid = target.id().to_string();
    std::thread::sleep(Duration::from_millis(300));
    let args = strings(&["hud", "--pid", &pid, "--headless", "--duration", "20"]);
    let phases = [
        phase("attaching", None, 100, false),
        phase("watching", None, 2500, true),
    ];
    matrix("hud", &args, &phases, "hud: pid");
    let metrics = tempfile::tempdir().unwrap();
    let file = metrics.path().join("hud.prom");
    let serve = strings(&[
        "hud",
        "--serve",
        "runq-demo-tokio",
        "--window",
        "1s",
        "--metrics-file",
        file.to_str().unwrap(),
    ]);
    let phases = [
        phase("starting", None, 100, false),
        phase("serving", Some("hud --serve: watching"), 1500, false),
    ];
    matrix("hud --serve", &serve, &phases, "");
    let _ = target.kill();
    let _ = target.wait();
}
