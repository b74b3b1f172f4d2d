//! `runq hud` end to end (root) on runq-demo-tonic, a gRPC service built
//! as others build theirs: tonic over HTTP/2 on a multi-thread runtime of
//! 4 workers whose workers and blocking-pool threads share one numbered
//! name (`rpc-N`), a tonic client on a `current_thread` runtime of its
//! own (`vault-client`), and one blocker per RPC method, each in a
//! function of its own: a key derivation, a JSON parse, a regex compile
//! and name lookups on CPU; a blocking TCP round trip, an `flock` and
//! `fdatasync`, and a contended `std::sync::Mutex` off it; and
//! `spawn_blocking` work that is no blocker. Each report is held against
//! what the service measured itself, with cargo's defaults, with line
//! tables, and stripped with `--debug-file`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::hud::{blockers, mentions};
use super::hud_truth::{self, Demo, Truths};

/// How long the service runs (a session and the start, on a loaded host).
const LIFETIME: u32 = 16;
/// One hud session, s.
const SESSION: u32 = 5;
/// The service's crate, the head of its functions' names.
const CRATE: &str = "runq_demo_tonic";

/// Each RPC method's handler and its blocking part, by function name.
const METHODS: [(&str, &str); 7] = [
    ("derive_key", "derive_session_key"),
    ("load_manifest", "parse_manifest"),
    ("compile_filter", "compile_route_filter"),
    ("probe", "probe_backend"),
    ("commit", "commit_journal"),
    ("settle", "settle_ledger"),
    ("resolve", "resolve_peers"),
];
/// The blocking parts that wait off CPU: blocking calls.
const OFF_CPU: [&str; 3] = ["probe_backend", "commit_journal", "settle_ledger"];
/// The blocking parts on CPU: sampled.
const ON_CPU: [&str; 4] = [
    "derive_session_key",
    "parse_manifest",
    "compile_route_filter",
    "resolve_peers",
];
/// The work every mode runs through `spawn_blocking`.
const POOL_WORK: &str = "rebuild_index";

/// Held by each test while its service runs: one service keeps about
/// half a CPU busy, and five side by side on CI's two CPUs starved the
/// suite's timing-sensitive tests (a pinned worker got under 150 ms of a
/// 6 s run).
static ONE_SERVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`ONE_SERVICE`] (a test that failed holding it leaves it usable).
fn one_service() -> std::sync::MutexGuard<'static, ()> {
    ONE_SERVICE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The service as `cargo build --release` builds it by default.
fn cargo_defaults() -> PathBuf {
    runq_testkit::demo_with_cargo_defaults("runq-demo-tonic")
}

/// The service built with line tables (`debug = "line-tables-only"`).
fn line_tables() -> PathBuf {
    runq_testkit::demos_without_frame_pointers().join("runq-demo-tonic")
}

/// The function `f` is `krate`'s `name`, or a closure inside it.
fn is_fn(f: &str, name: &str) -> bool {
    f.starts_with(&format!("{CRATE}::"))
        && (f.ends_with(&format!("::{name}")) || f.contains(&format!("::{name}::")))
}

/// The rows of `rows` named by the service's `name` (or a closure in
/// it), merged into one (count and total summed, the longest kept).
fn merged(rows: &[&Value], name: &str) -> Option<Value> {
    let found: Vec<&&Value> = rows
        .iter()
        .filter(|b| is_fn(b["function"].as_str().unwrap_or_default(), name))
        .collect();
    let sum = |k: &str| found.iter().map(|b| b[k].as_u64().unwrap()).sum::<u64>();
    let max = found.iter().map(|b| b["max_ns"].as_u64().unwrap()).max();
    let functions: Vec<&Value> = found.iter().map(|b| &b["function"]).collect();
    max.map(|max| {
        json!({"count": sum("count"), "total_ns": sum("total_ns"), "max_ns": max,
               "functions": functions})
    })
}

/// The tids the service last printed for its runtime's two roles:
/// threads that ran handlers (workers), and pool threads that never did.
fn threads(lines: &[String]) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let last = lines.iter().rev().find(|l| l.starts_with("threads "));
    let words: Vec<&str> = last.expect("a threads line").split_whitespace().collect();
    let set = |i: usize| -> BTreeSet<u64> {
        let list = words.get(i).copied().unwrap_or_default();
        list.split(',').filter_map(|t| t.parse().ok()).collect()
    };
    let (workers, pool) = (set(2), set(4));
    let pool = pool.difference(&workers).copied().collect();
    (workers, pool)
}

/// The listed workers are the multi-thread runtime's own (every thread
/// that ran a handler when `all`, no pool thread that shares their name)
/// and the client's `current_thread` runtime. A calm service's workers
/// are parked nearly all the time: one that ran a handler or two may go
/// unseen in a short session, and is not asked for.
fn judge_workers(report: &Value, lines: &[String], all: bool) {
    let (workers, pool) = threads(lines);
    // A worker Tokio never had to wake (a quiet runtime on a loaded
    // host) ran no handler: at least one did, at most the four.
    assert!(
        (1..=4).contains(&workers.len()),
        "the demo's workers: {workers:?}"
    );
    let listed = report["workers"].as_array().unwrap();
    for w in listed {
        let tid = w["tid"].as_u64().unwrap();
        assert!(
            !pool.contains(&tid),
            "a pool thread listed: {w:#}\n{report:#}"
        );
        assert!(w["runtime"].is_string(), "listed without a loop: {w:#}");
    }
    let multi: BTreeSet<u64> = listed
        .iter()
        .filter(|w| w["runtime"] == "multi_thread")
        .map(|w| w["tid"].as_u64().unwrap())
        .collect();
    assert!(
        (!all || workers.is_subset(&multi)) && multi.len() <= 4,
        "the demo's workers {workers:?}, pool {pool:?}: {report:#}"
    );
    assert!(
        listed
            .iter()
            .any(|w| w["comm"] == "vault-client" && w["runtime"] == "current_thread"),
        "the client's current_thread runtime is not a worker: {report:#}"
    );
}

/// Every blocker named by its own function, with the service's timing;
/// no other blocking call; the pool's work never reported.
fn judge(report: &Value, truths: &Truths, lines: &[String]) {
    assert_eq!(report["stacks"]["source"], "dwarf", "{report:#}");
    judge_workers(report, lines, true);
    let calls = blockers(report, "blocking_call");
    for name in OFF_CPU {
        let b = merged(&calls, name);
        let b = b.unwrap_or_else(|| panic!("no blocking call {name}: {report:#}"));
        hud_truth::check_mean(&b, truths, name);
    }
    for name in ON_CPU {
        hud_truth::check_cpu(report, truths, CRATE, name);
    }
    let in_place = report["block_in_place"].as_array().unwrap();
    assert!(in_place.is_empty(), "{report:#}");
    for b in report["blockers"].as_array().unwrap() {
        assert!(
            !mentions(b, POOL_WORK),
            "spawn_blocking work reported: {b:#}"
        );
    }
    assert!(truths[POOL_WORK].calls > 0);
    judge_misnamed(&calls);
    judge_syscalls(&calls);
    // No row under a bare `{closure#N}` (the placeholder check): the
    // client's thread closure, inlined into the standard library's
    // thread start, is named by its full path from the frame two out.
    hud_truth::check_placeholders(report);
}

/// A blocking call of the service's own code is named by one of its
/// blockers' functions (or a closure in it): the three that wait, or one
/// on CPU that waited for the allocator's lock on a loaded host; none is
/// named by a library with one of the three on its stack. Other blocking
/// calls (the allocator's lock, in tonic's code or the service's own
/// glue) are the host's.
fn judge_misnamed(calls: &[&Value]) {
    let misnamed: Vec<&&Value> = calls
        .iter()
        .filter(|b| {
            let f = b["function"].as_str().unwrap();
            let ours = OFF_CPU.iter().chain(&ON_CPU).any(|name| is_fn(f, name));
            let theirs = !f.starts_with(&format!("{CRATE}::")) || hud_truth::waits_for_libc_lock(b);
            let carries_ours = OFF_CPU.iter().any(|name| mentions(b, name));
            !ours && (!theirs || carries_ours)
        })
        .collect();
    assert!(
        misnamed.is_empty(),
        "blocking calls misnamed: {misnamed:#?}"
    );
}

/// Each blocking call says the system call it slept in and what its
/// descriptor was: the backend probe reads a TCP socket, the journal
/// locks and syncs a file, the ledger waits on a futex; the socket's
/// frames are named as socket code, never by the file or Unix socket
/// functions the linker shares their body with.
fn judge_syscalls(calls: &[&Value]) {
    let said = |name: &str| -> Vec<String> {
        let rows = calls
            .iter()
            .filter(|b| is_fn(b["function"].as_str().unwrap(), name));
        rows.flat_map(|b| b["syscalls"].as_object().cloned().unwrap_or_default())
            .map(|(k, _)| k)
            .collect()
    };
    let probe = said("probe_backend");
    assert!(
        probe.iter().any(|c| c.ends_with(" on a TCP socket")),
        "{probe:?}"
    );
    let journal = said("commit_journal");
    assert!(
        journal.iter().any(|c| c.ends_with(" on a file")),
        "{journal:?}"
    );
    assert!(said("settle_ledger").iter().any(|c| c == "futex"));
    for b in calls
        .iter()
        .filter(|b| is_fn(b["function"].as_str().unwrap(), "probe_backend"))
    {
        for f in b["sample_stack"].as_array().unwrap() {
            let f = f["function"].as_str().unwrap();
            assert!(
                !f.contains("std::fs::File") && !f.contains("UnixDatagram"),
                "a socket call named as another type's: {f}"
            );
        }
    }
}

/// The service built as `exe`, one session with `extra`, judged.
fn session(exe: &Path, extra: &[&OsStr]) -> Value {
    let _alone = one_service();
    let demo = Demo::start(exe, LIFETIME, &[]);
    let (report, truths, lines) = demo.hud_with_lines(SESSION, extra);
    judge(&report, &truths, &lines);
    report
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn tonic_with_cargo_defaults() {
    session(&cargo_defaults(), &[]);
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn tonic_with_line_tables() {
    session(&line_tables(), &[]);
}

/// `objcopy` with `args`, false when binutils is missing or it fails.
fn objcopy(args: &[&OsStr]) -> bool {
    Command::new("objcopy")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// Stripped (`strip-all`, no debug link), its debug info in a file of
/// its own given by `--debug-file`.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn tonic_stripped_with_a_debug_file() {
    let dir = tempfile::tempdir().unwrap();
    let built = line_tables();
    let (exe, debug) = (dir.path().join("vault"), dir.path().join("vault.debug"));
    let keep = [
        "--only-keep-debug".as_ref(),
        built.as_os_str(),
        debug.as_os_str(),
    ];
    assert!(objcopy(&keep), "objcopy (binutils)");
    let strip = ["--strip-all".as_ref(), built.as_os_str(), exe.as_os_str()];
    assert!(objcopy(&strip), "objcopy --strip-all");
    let report = session(&exe, &["--debug-file".as_ref(), debug.as_ref()]);
    let found = report["debug_file"].as_str().unwrap_or_default();
    assert!(found.contains("--debug-file"), "{report:#}");
}

/// Every blocking part through `spawn_blocking`, on pool threads named
/// as the workers are: no blocking call and no `block_in_place` row, and
/// no pool thread a worker.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_calm_tonic_service_has_no_blocker() {
    let _alone = one_service();
    let demo = Demo::start(&line_tables(), LIFETIME, &["calm"]);
    let (report, truths, lines) = demo.hud_with_lines(SESSION, &[]);
    for name in OFF_CPU.iter().chain(&ON_CPU) {
        assert!(truths[*name].calls > 0, "{name} never ran");
    }
    judge_workers(&report, &lines, false);
    // Waits for glibc's allocator lock on a loaded host are the host's.
    let calls = blockers(&report, "blocking_call");
    let own = calls.iter().filter(|b| !hud_truth::waits_for_libc_lock(b));
    assert!(own.count() == 0, "{report:#}");
    let in_place = report["block_in_place"].as_array().unwrap();
    assert!(in_place.is_empty(), "{report:#}");
}

/// The method whose handler or blocker the function `f` is.
fn method_of(f: &str) -> Option<(&'static str, &'static str)> {
    METHODS
        .iter()
        .copied()
        .find(|(handler, blocker)| is_fn(f, blocker) || is_fn(f, &format!("handlers::{handler}")))
}

/// One long poll row of the multi-thread runtime: named by a method's
/// handler or blocker (or unnamed), its sampled frames that method's
/// handler's, and its length the method's call's; returns its method.
fn judge_long_poll(b: &Value, truths: &Truths) -> Option<&'static str> {
    let f = b["function"].as_str().unwrap();
    if f.starts_with("[unnamed") {
        return None;
    }
    // A poll whose samples fell outside every method's code (in tonic,
    // or in the demo's own clock) is named by that code: no method's,
    // and so no other method's either.
    let Some((handler, blocker)) = method_of(f) else {
        eprintln!("figure: a long poll named by no method: {f}");
        let handlers = METHODS
            .iter()
            .filter(|(h, _)| mentions(b, &format!("{CRATE}::handlers::{h}::")))
            .count();
        assert!(handlers <= 1, "a long poll under two handlers: {b:#}");
        return None;
    };
    // The poll's sampled frames are its own method's: no other
    // method's handler among them (a name borrowed from another poll).
    let frames: Vec<&str> = b["user_frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (other, _) in METHODS.iter().filter(|(h, _)| *h != handler) {
        let theirs = format!("{CRATE}::handlers::{other}::");
        assert!(
            !frames.iter().any(|u| u.starts_with(&theirs)),
            "a long poll of {handler} under {other}'s frames: {b:#}"
        );
    }
    let own = format!("{CRATE}::handlers::{handler}::");
    if !frames.iter().any(|u| u.starts_with(&own)) {
        eprintln!("figure: long poll {f}: its handler's frame not by its path: {frames:?}");
    }
    let (count, total) = (
        b["count"].as_u64().unwrap(),
        b["total_ns"].as_u64().unwrap(),
    );
    let part = truths[blocker];
    let truth = part.wall_ns as f64 / part.calls.max(1) as f64;
    let mean = total as f64 / count as f64;
    eprintln!(
        "figure: long poll {f}: {count} polls, {:.2} ms each; the demo's {blocker} {} calls, {:.2} ms each",
        mean / 1e6,
        part.calls,
        truth / 1e6
    );
    assert!(
        count <= part.calls + 1,
        "more long polls than calls: {count} polls of {f}, the demo's {} calls: {b:#}",
        part.calls
    );
    Some(blocker)
}

/// `--exact-polls`: every long poll of the workers names the handler
/// that ran it (or none), never another method's; no task's polls are
/// under two methods' names; each CPU-bound method has its long polls.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn exact_polls_name_each_long_poll_by_its_own_handler() {
    let _alone = one_service();
    let demo = Demo::start(&line_tables(), LIFETIME, &[]);
    let (report, truths, _) = demo.hud_with_lines(SESSION, &[OsStr::new("--exact-polls")]);
    assert_eq!(report["poll_timing"]["method"], "exact", "{report:#}");
    let mut named = BTreeSet::new();
    let mut tasks: Vec<(u64, &str)> = Vec::new();
    for b in blockers(&report, "long_poll") {
        if b["runtimes"]["multi_thread"].as_u64().unwrap_or(0) == 0 {
            eprintln!("figure: a long poll of the client: {}", b["function"]);
            continue;
        }
        let Some(blocker) = judge_long_poll(b, &truths) else {
            continue;
        };
        named.insert(blocker);
        for t in b["tasks"].as_array().unwrap() {
            tasks.push((t["id"].as_u64().unwrap(), blocker));
        }
    }
    for (id, blocker) in &tasks {
        let other = tasks.iter().find(|(i, b)| i == id && b != blocker);
        assert!(
            other.is_none(),
            "task {id} under {blocker} and {other:?}: {report:#}"
        );
    }
    // Each CPU-bound method's 20 ms calls make long polls; on a loaded
    // host one method's samples may all fall outside its own code (its
    // polls then unnamed or named by a library), never all of them.
    let missing: Vec<&str> = ON_CPU
        .iter()
        .copied()
        .filter(|n| !named.contains(n))
        .collect();
    eprintln!("figure: CPU-bound methods without a named long poll: {missing:?}");
    assert!(
        missing.len() <= 1,
        "no long poll of {missing:?}: {report:#}"
    );
}
