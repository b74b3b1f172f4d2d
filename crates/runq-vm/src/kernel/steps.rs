//! The commands of a kernel build, each run with its output in a log
//! file of the build's directory and its cost measured: wall time, and
//! the CPU time of the command and its children (`RUSAGE_CHILDREN`).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use runq_kernel::guard::{announce_group, Guard};

use super::Step;
use crate::launch::console_tail;
use crate::VmError;

/// CPU seconds (user and system) of every child waited for so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(ru.ru_utime) + s(ru.ru_stime)
}

/// Runs `cmd` with its stdout and stderr appended to `log`; the step
/// `name` with its cost, or an error with the log's last lines.
pub fn run_logged(name: &str, mut cmd: Command, log: &Path) -> Result<Step, VmError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| VmError::io(format!("opening {}", log.display()), e))?;
    let err = file
        .try_clone()
        .map_err(|e| VmError::io(format!("opening {}", log.display()), e))?;
    let t0 = Instant::now();
    let cpu0 = children_cpu_s();
    // The step's process group dies with runq, however runq dies.
    let guard = Guard::spawn(Vec::new())
        .map_err(|e| VmError::io(format!("{name}: starting its guard process"), e))?;
    let (fd, parent) = (guard.announce_fd(), std::process::id() as libc::pid_t);
    cmd.stdin(Stdio::null()).stdout(file).stderr(err);
    // SAFETY: announce_group makes only async-signal-safe calls (it makes
    // the step the leader of a process group of its own).
    unsafe { cmd.pre_exec(move || announce_group(fd, parent)) };
    let child = cmd
        .spawn()
        .map_err(|e| VmError::Run(format!("{name}: starting {:?}: {e}", cmd.get_program())))?;
    let status = wait_or_stop(name, child)?;
    drop(guard);
    if !status.success() {
        return Err(VmError::Run(format!(
            "{name} failed ({status}): {}; see {}",
            console_tail(log, 3),
            log.display()
        )));
    }
    Ok(Step {
        name: name.to_string(),
        wall_s: round1(t0.elapsed().as_secs_f64()),
        cpu_s: round1(children_cpu_s() - cpu0),
    })
}

/// How long a stopped step's process group gets after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Waits for a step's `child` (the leader of its own process group); when
/// runq gets an ending signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) the
/// whole group is stopped, SIGTERM then SIGKILL, and the build ends
/// interrupted: no compiler is left running.
fn wait_or_stop(name: &str, mut child: Child) -> Result<ExitStatus, VmError> {
    let io = |e| VmError::io(format!("{name}: waiting"), e);
    loop {
        if let Some(status) = child.try_wait().map_err(io)? {
            return Ok(status);
        }
        if runq_kernel::signal::received_signal().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let group = -(child.id() as i32);
    // SAFETY: signalling the process group this step made.
    unsafe { libc::kill(group, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline && child.try_wait().map_err(io)?.is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above; whatever is left of the group.
    unsafe { libc::kill(group, libc::SIGKILL) };
    let _ = child.wait();
    Err(VmError::Interrupted(format!(
        "{name}: interrupted; the build was stopped"
    )))
}

/// `x` to one decimal.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The output of `program args` when it succeeds, trimmed.
pub fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The tools a build needs that are not on PATH: `make`, a C compiler,
/// flex, bison, bc, pahole (BTF), virtme-ng's `vng` (its minimal
/// config), and for the schedulers clang (clang-19's bin first).
pub fn missing_tools(schedulers: bool) -> Vec<&'static str> {
    let mut need = vec!["make", "gcc", "flex", "bison", "bc", "pahole", "vng", "tar"];
    if schedulers {
        need.push("clang");
    }
    need.into_iter()
        .filter(|t| {
            crate::launch::which(t).is_none()
                && !(*t == "clang" && Path::new(LLVM_BIN).join("clang").is_file())
        })
        .collect()
}

/// Where Debian's clang-19 lives; tools/sched_ext needs a clang new
/// enough for its BPF programs, so it goes first on PATH.
pub const LLVM_BIN: &str = "/usr/lib/llvm-19/bin";

/// PATH with [`LLVM_BIN`] first, when it exists.
pub fn path_with_llvm() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if !Path::new(LLVM_BIN).is_dir() {
        return path;
    }
    let mut dirs = vec![std::path::PathBuf::from(LLVM_BIN)];
    dirs.extend(std::env::split_paths(&path));
    std::env::join_paths(dirs).unwrap_or(path)
}
