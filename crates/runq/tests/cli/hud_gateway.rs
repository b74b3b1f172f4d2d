//! `runq hud` end to end (root) on runq-demo-gateway, an axum service
//! (hyper 1, tower layers) under load from its own client threads: two
//! runtimes (a multi-thread one and a `current_thread` one on a thread of
//! its own), a handler that uses `block_in_place` (or, in one test, blocks
//! directly), a sleep under a stack at least 24 KiB deep, a password hash,
//! name lookups, a large file read and parse, a `std::sync::Mutex` held by
//! a plain thread, and `spawn_blocking` work; built with frame pointers,
//! with cargo's defaults, stripped with its debug info in a separate file
//! (found by `.gnu_debuglink`, by `--debug-file` and by its build-id
//! path), and stripped with no debug info at all. Each report is held
//! against the time the gateway measured itself.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::hud::{blockers, demo_bin, hud, runq_bin};
use super::hud_truth::{self, Demo, Truths};

/// How long the gateway runs: a hud session of [`SESSION`] seconds (two
/// in some tests) and the start, on a loaded host.
const LIFETIME: u32 = 16;
/// One hud session, s.
const SESSION: u32 = 5;

/// The gateway's crate, the head of its functions' names.
const CRATE: &str = "runq_demo_gateway";

fn start_gateway(exe: &Path) -> Demo {
    start_gateway_with(exe, &[])
}

/// [`start_gateway`] with more arguments after its lifetime.
fn start_gateway_with(exe: &Path, args: &[&str]) -> Demo {
    Demo::start(exe, LIFETIME, args)
}

/// The row of `rows` whose culprit is the gateway's function `name` (in
/// any of its modules).
fn row<'a>(rows: &[&'a Value], name: &str) -> Option<&'a Value> {
    hud_truth::row(rows, CRATE, name)
}

/// The total ns and count of the rows of `rows` whose culprit is the
/// gateway's function `name` or a closure inlined into it.
fn rows_total(rows: &[&Value], name: &str) -> Option<(u64, u64)> {
    hud_truth::rows_total(rows, CRATE, name)
}

/// hud's sampled CPU time of the gateway's function `name` against the
/// gateway's own.
fn check_cpu(report: &Value, truths: &Truths, name: &str) {
    hud_truth::check_cpu(report, truths, CRATE, name)
}

/// The gateway's parts that run on CPU in task code, as each build shows
/// them. Its name lookups run deep in glibc (nss, /etc/hosts parsing),
/// which keeps no frame pointers: with `--unwind auto` on the
/// frame-pointer build (glibc is taken for leaf system-call wrappers),
/// their stacks stop inside glibc and their samples are not counted.
const CPU_PARTS: [&str; 3] = ["sign_token", "import_catalog", "resolve_upstream"];

/// What the gateway was started to do, for [`judge`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Login {
    /// Its login check runs in `block_in_place`.
    InPlace,
    /// It blocks its worker directly.
    Direct,
}

/// The report names each blocker by the gateway's own function in its
/// category, with the gateway's timing; `spawn_blocking` work is no
/// finding; the `current_thread` runtime's thread is a worker.
fn judge(report: &Value, truths: &Truths, login: Login) {
    let calls = blockers(report, "blocking_call");
    for name in ["render_report_page", "flush_audit_log"] {
        let b = row(&calls, name).unwrap_or_else(|| panic!("no blocking call {name}: {report:#}"));
        hud_truth::check_mean(b, truths, name);
    }
    let audit = row(&calls, "flush_audit_log").unwrap();
    assert!(
        audit["runtimes"]["current_thread"].as_u64() > Some(0),
        "the audit blocker is not the current_thread runtime's: {audit:#}"
    );
    let copied = report["stacks"]["source"] == "dwarf";
    for name in CPU_PARTS.iter().take(if copied { 3 } else { 2 }) {
        check_cpu(report, truths, name);
    }
    let in_place: Vec<&Value> = report["block_in_place"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    judge_login(report, &calls, &in_place, truths, login);
    let everything = report["blockers"].as_array().unwrap().iter();
    for b in everything.chain(in_place.iter().copied()) {
        assert!(
            !b["function"].as_str().unwrap().contains("archive_batch"),
            "spawn_blocking work reported: {b:#}"
        );
    }
    let workers = report["workers"].as_array().unwrap();
    assert!(
        workers
            .iter()
            .any(|w| w["comm"] == "gw-audit" && w["runtime"] == "current_thread"),
        "the current_thread runtime is not a worker: {report:#}"
    );
    assert!(workers.iter().any(|w| w["runtime"] == "multi_thread"));
    // A worker is listed for running a task loop (its runtime), never for
    // its name: the blocking pool's threads carry the workers' name.
    for w in workers {
        assert!(w["runtime"].is_string(), "listed without a loop: {w:#}");
    }
    let rotations = rows_total(&calls, "rotate")
        .or_else(|| rows_total(&calls, "rotate_logs"))
        .map(|(_, count)| count)
        .or_else(|| rotation_without_debug_info(report, &calls));
    assert!(
        rotations.is_some_and(|count| count >= 5),
        "no blocking call for the log rotation: {report:#}"
    );
    hud_truth::check_placeholders(report);
}

/// The login check is a `block_in_place` row, or a blocking call when it
/// blocks its worker directly, never both.
fn judge_login(
    report: &Value,
    calls: &[&Value],
    in_place: &[&Value],
    truths: &Truths,
    login: Login,
) {
    let (found, other) = match login {
        Login::InPlace => (in_place, calls),
        Login::Direct => (calls, in_place),
    };
    let b =
        row(found, "verify_login").unwrap_or_else(|| panic!("no row for verify_login: {report:#}"));
    hud_truth::check_mean(b, truths, "verify_login");
    assert!(row(other, "verify_login").is_none(), "{report:#}");
    if login == Login::Direct {
        assert!(in_place.is_empty(), "{report:#}");
    }
}

/// A gateway built by `exe`, one session, judged.
fn gateway_session(exe: &Path, extra: &[&OsStr]) -> Value {
    let gw = start_gateway(exe);
    let (report, truths) = gw.hud(SESSION, extra);
    judge(&report, &truths, Login::InPlace);
    report
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn gateway_with_frame_pointers() {
    let report = gateway_session(&demo_bin("runq-demo-gateway"), &[]);
    assert_eq!(report["stacks"]["source"], "frame_pointers", "{report:#}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn gateway_with_cargo_defaults() {
    // The stripped tests install the line-tables build's debug file at
    // this build ID's path: this build must not find it there.
    let _own_build_id = build_id_path();
    let exe = runq_testkit::demo_with_cargo_defaults("runq-demo-gateway");
    let report = gateway_session(&exe, &[]);
    assert_eq!(report["stacks"]["source"], "dwarf", "{report:#}");
    // `rotate_logs` ends in a sleep the release build makes a tail call
    // (`jmp`): no frame of its own, so the sleep is its caller's: the
    // route's closure, or axum's handler closure where the build inlined
    // the route into it (which codegen units decide, build by build).
    let calls = blockers(&report, "blocking_call");
    let caller = rows_total(&calls, "rotate")
        .map(|(_, count)| count)
        .or_else(|| rotation_without_debug_info(&report, &calls));
    assert!(caller.is_some_and(|n| n >= 5), "{report:#}");
}

/// The route whose sleep the release build makes a tail call: the
/// blocker's name in every build with debug info.
const ROTATE_CALLER: &str = "runq_demo_gateway::handlers::rotate::{async_fn#0}::{closure#0}";

/// Without debug info, the route's future is inlined into axum's
/// generic handler closure, and the sleep's caller is that closure: the
/// symbol table's legacy mangling names it without its type parameter
/// (the route), so nothing names the route. The blocker's name then.
const ROTATE_CALLER_IN_AXUM: &str = "<F as axum::handler::Handler<(M,T1),S>>::call::{{closure}}";

/// The log rotation's calls under axum's handler closure, when hud had
/// no debug info for the gateway (no `file:line` on any frame).
fn rotation_without_debug_info(report: &Value, calls: &[&Value]) -> Option<u64> {
    let lines = report["blockers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["sample_stack"].as_array().into_iter().flatten())
        .any(|f| f["line"].is_u64());
    let b = calls
        .iter()
        .find(|b| b["function"] == ROTATE_CALLER_IN_AXUM);
    b.filter(|_| !lines).and_then(|b| b["count"].as_u64())
}

/// Built as a project that keeps line tables in release builds
/// (`debug = "line-tables-only"`, no frame pointers): each blocker is
/// named as in the cargo-defaults build, the log rotation's too.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn gateway_with_line_tables() {
    let exe = runq_testkit::demos_without_frame_pointers().join("runq-demo-gateway");
    let report = gateway_session(&exe, &[]);
    assert_eq!(report["stacks"]["source"], "dwarf", "{report:#}");
    let calls = blockers(&report, "blocking_call");
    let b = calls.iter().find(|b| b["function"] == ROTATE_CALLER);
    let b = b.unwrap_or_else(|| panic!("no blocking call in rotate's closure: {report:#}"));
    assert!(b["count"].as_u64().unwrap() >= 5, "{b:#}");
}

/// Held by the tests of stripped copies: they share one build ID, and
/// while one of them installs the debug file at its build-id path the
/// others would find it there.
static BUILD_ID_PATH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`BUILD_ID_PATH`] (a test that failed holding it leaves it
/// usable).
fn build_id_path() -> std::sync::MutexGuard<'static, ()> {
    BUILD_ID_PATH.lock().unwrap_or_else(|e| e.into_inner())
}

/// With Tokio's default names on the multi-thread workers (which its
/// blocking pool's threads carry too), discovery goes by stacks, not
/// names: it finds both runtimes, and no thread it lists is one seen
/// only in the pool.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_current_thread_runtime_beside_default_named_workers_is_found() {
    let gw = start_gateway_with(&demo_bin("runq-demo-gateway"), &["tokio-names"]);
    let (report, truths) = gw.hud(SESSION, &[]);
    let discovery = report["discovery"].as_str().unwrap();
    assert!(
        discovery.contains("stacks")
            && discovery.contains("gw-audit")
            && (discovery.contains("tokio-rt-worker") || discovery.contains("tokio-runtime-w")),
        "{report:#}"
    );
    judge(&report, &truths, Login::InPlace);
}

/// The login check blocking its worker directly, with no `block_in_place`
/// anywhere in the process: a blocking call like the others.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_gateway_without_block_in_place_has_its_login_as_a_blocker() {
    let exe = runq_testkit::demos_without_frame_pointers().join("runq-demo-gateway");
    let gw = start_gateway_with(&exe, &["no-block-in-place"]);
    let (report, truths) = gw.hud(SESSION, &[]);
    judge(&report, &truths, Login::Direct);
}

/// Rendering 48 KiB deep, deeper than hud copies: the render's stacks
/// are cut short, and their time is still the render's, in full.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stack_deeper_than_the_copy_keeps_its_time() {
    let exe = runq_testkit::demos_without_frame_pointers().join("runq-demo-gateway");
    let gw = start_gateway_with(&exe, &["deep"]);
    let (report, truths) = gw.hud(SESSION, &[]);
    judge(&report, &truths, Login::InPlace);
    let stacks = &report["stacks"];
    assert!(stacks["short"].as_u64().unwrap() > 0, "{stacks:#}");
    assert!(report["events"]["cut_findings"].as_u64().unwrap() > 0);
    // None of the cut ones dropped: hud saw (nearly) every render the
    // gateway made in the session (one may straddle either end).
    let calls = blockers(&report, "blocking_call");
    let render = row(&calls, "render_report_page").unwrap()["count"]
        .as_u64()
        .unwrap();
    let made = truths["render_report_page"].calls;
    assert!(
        render * 5 >= made * 4,
        "{render} renders seen of {made}: {report:#}"
    );
}

/// The same gateway waiting well (a Tokio timer, or work in 1 ms slices
/// with a `yield_now`): no blocking call and no `block_in_place` row,
/// while its handlers ran.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_calm_or_cooperative_gateway_has_no_blocker() {
    let exe = runq_testkit::demos_without_frame_pointers().join("runq-demo-gateway");
    for mode in ["calm", "cooperative"] {
        let gw = start_gateway_with(&exe, &[mode]);
        let (report, truths) = gw.hud(SESSION, &[]);
        assert!(truths["flush_audit_log"].calls > 0 && truths["render_report_page"].calls > 0);
        // A wait for glibc's allocator lock, which a loaded host's
        // preemptions make even well-behaved code wait for, is the host's.
        let calls = blockers(&report, "blocking_call");
        let own = calls.iter().filter(|b| !hud_truth::waits_for_libc_lock(b));
        assert!(own.count() == 0, "{mode}: {report:#}");
        let in_place = report["block_in_place"].as_array().unwrap();
        assert!(in_place.is_empty(), "{mode}: {report:#}");
        assert!(
            report["workers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["runtime"] == "current_thread"),
            "{mode}: {report:#}"
        );
    }
}

/// `objcopy` with `args`, false when binutils is missing or it fails.
fn objcopy(args: &[&OsStr]) -> bool {
    Command::new("objcopy")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// The cargo-defaults gateway stripped (`strip-all`) into `dir`, with its
/// debug info in `gateway.debug` beside it (linked by `.gnu_debuglink`
/// when `link`); returns (executable, debug file).
fn stripped_gateway(dir: &Path, link: bool) -> (PathBuf, PathBuf) {
    let built = runq_testkit::demos_without_frame_pointers().join("runq-demo-gateway");
    let (exe, debug) = (dir.join("gateway"), dir.join("gateway.debug"));
    assert!(
        objcopy(&["--only-keep-debug".as_ref(), built.as_ref(), debug.as_ref()]),
        "objcopy (binutils)"
    );
    let add_link = format!("--add-gnu-debuglink={}", debug.display());
    let mut args: Vec<&OsStr> = vec!["--strip-all".as_ref()];
    if link {
        args.push(add_link.as_ref());
    }
    args.extend([built.as_os_str(), exe.as_os_str()]);
    assert!(objcopy(&args), "objcopy --strip-all");
    (exe, debug)
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stripped_gateway_finds_its_debug_file_by_its_debuglink_or_the_flag() {
    let _alone = build_id_path();
    let dir = tempfile::tempdir().unwrap();
    let (exe, debug) = stripped_gateway(dir.path(), true);
    let report = gateway_session(&exe, &[]);
    let found = report["debug_file"].as_str().unwrap_or_default();
    assert!(found.contains(".gnu_debuglink"), "{report:#}");
    let report = gateway_session(&exe, &["--debug-file".as_ref(), debug.as_ref()]);
    assert!(report["debug_file"]
        .as_str()
        .unwrap_or_default()
        .contains("--debug-file"));
}

/// A file under /usr/lib/debug for the test's length, and the directory
/// made for it, if any (removed when empty).
struct Installed {
    file: PathBuf,
    made_dir: Option<PathBuf>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        if let Some(dir) = &self.made_dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The build ID of an ELF file, as `readelf -n` prints it.
fn build_id(path: &Path) -> Option<String> {
    let out = Command::new("readelf").arg("-n").arg(path).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let id = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))?;
    Some(id.trim().to_string())
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stripped_gateway_finds_its_debug_file_by_build_id() {
    let _alone = build_id_path();
    let dir = tempfile::tempdir().unwrap();
    let (exe, debug) = stripped_gateway(dir.path(), false);
    let id = build_id(&exe).expect("a build ID (readelf, binutils)");
    // This build's own ID: no other file can be at that path.
    let at = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    let dir = at.parent().unwrap().to_path_buf();
    let made_dir = (!dir.exists()).then(|| dir.clone());
    std::fs::create_dir_all(&dir).unwrap();
    let _installed = Installed {
        file: at.clone(),
        made_dir,
    };
    std::fs::copy(&debug, &at).unwrap();
    let report = gateway_session(&exe, &[]);
    let found = report["debug_file"].as_str().unwrap_or_default();
    assert!(found.contains("build-id"), "{report:#}");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stripped_gateway_without_debug_info_is_said_to_be_stripped() {
    let _alone = build_id_path();
    let dir = tempfile::tempdir().unwrap();
    let (exe, debug) = stripped_gateway(dir.path(), false);
    std::fs::remove_file(debug).unwrap();
    let gw = start_gateway(&exe);
    let (report, _) = hud(&runq_bin(), gw.pid, 2, &[]);
    let wrong = Command::new(runq_bin())
        .args(["hud", "--pid", &gw.pid.to_string(), "--headless"])
        .args(["--duration", "1s", "--workers", "tokio-rt"])
        .output()
        .unwrap();
    drop(gw);
    let hint = report["symbol_hint"].as_str().unwrap_or_default();
    assert!(
        hint.contains("is stripped") && hint.contains("--debug-file"),
        "{report:#}"
    );
    assert!(
        report["discovery"].as_str().unwrap().contains("gw-rt"),
        "by thread name: {report:#}"
    );
    assert_eq!(wrong.status.code(), Some(2));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains("gw-rt") && !err.contains("--worker-prefix"),
        "{err}"
    );
}
