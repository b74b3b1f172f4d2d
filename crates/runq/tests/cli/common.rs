//! Helpers shared by the runq integration tests.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Path of the runq binary under test.
pub fn runq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_runq"))
}

/// Spawns runq with piped output.
pub fn spawn(args: &[&str]) -> Child {
    runq()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn runq")
}

/// Direct children of `pid` (from /proc/<pid>/task/<pid>/children),
/// less runq's guard process (`runq-guard`, which a flight recorder
/// starts): the workers, a scheduler, what runq ran.
pub fn children(pid: u32) -> Vec<i32> {
    let listed: Vec<i32> = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    // A guard just forked is still named `runq` until its first
    // instruction names it: give it that moment before telling it apart.
    if !listed.is_empty() {
        std::thread::sleep(Duration::from_millis(30));
    }
    listed
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .map_or(true, |c| c.trim() != "runq-guard")
        })
        .collect()
}

/// Live (not zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
        })
        .collect()
}

/// Waits until `f` returns `Some`, or panics after `timeout`.
pub fn wait_for<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True while a process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Every `runq/<run-id>` directory owned by `pid` in any cgroup hierarchy.
pub fn run_dirs_of(pid: u32) -> Vec<PathBuf> {
    let layout = runq_kernel::cgroup::CgroupLayout::detect().expect("cgroup layout");
    let mut out = Vec::new();
    for h in layout.hierarchies {
        let Ok(entries) = std::fs::read_dir(h.root.join("runq")) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{pid}-"))
            {
                out.push(e.path());
            }
        }
    }
    out
}

/// Sends `sig` to `pid`.
pub fn signal(pid: i32, sig: i32) {
    // SAFETY: plain kill(2).
    unsafe { libc::kill(pid, sig) };
}

/// Asserts that a finished runq exited 0, showing its stderr if not.
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every check a run reports is complete and agrees with the verdict and
/// the exit code; whether a bound is met is the host's business (the
/// benchmark tier asserts PASS on a quiet host).
pub fn assert_explained_verdict(name: &str, code: Option<i32>, v: &Value) {
    let checks = v["checks"].as_array().unwrap();
    assert!(!checks.is_empty(), "{name}: no checks");
    for c in checks {
        for key in ["name", "group", "measured", "op", "bound", "pass"] {
            assert!(!c[key].is_null(), "{name}: check without {key}: {c}");
        }
    }
    let passed = checks.iter().all(|c| c["pass"] == true);
    // INDETERMINATE when the load outside the run accounts for every
    // failed check (a busy host), FAIL otherwise.
    let explained = checks
        .iter()
        .filter(|c| c["pass"] == false)
        .all(|c| c["cause"]["outside_load"]["explains"] == true);
    let (verdict, want) = match (passed, explained) {
        (true, _) => ("pass", 0),
        (false, true) => ("indeterminate", 75),
        (false, false) => ("fail", 1),
    };
    assert_eq!(v["verdict"], verdict, "{name}: {checks:?}");
    assert_eq!(code, Some(want), "{name}");
}

/// The time `pid` has run on a CPU, from its schedstat (0 when gone).
pub fn ran_ns(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
