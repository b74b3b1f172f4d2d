//! Boots the VM (virtme-ng, which runs qemu) in a process group of its
//! own, waits for the guest to start and to finish within deadlines, and
//! kills the whole group on every other way out: a VM is never left
//! behind.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use runq_kernel::guard::{announce_group, Guard};

/// How a boot ended.
#[derive(Debug)]
pub enum Ended {
    /// The guest started the script (after `boot`) and the VM exited.
    Ran {
        /// From starting virtme-ng to the guest's first line.
        boot: Duration,
    },
    /// The VM exited before the guest started (qemu refused, the kernel
    /// panicked): its console says why.
    DiedAtBoot,
    /// The guest did not start within the boot timeout; the VM was killed.
    BootTimeout,
    /// The guest started but did not finish in time; the VM was killed.
    RunTimeout,
    /// SIGINT or SIGTERM; the VM was killed.
    Interrupted,
}

/// One VM: the virtme-ng process group, killed when dropped.
struct Vm {
    child: Child,
    done: bool,
}

impl Vm {
    fn kill(&mut self) {
        if self.done {
            return;
        }
        let group = -(self.child.id() as i32);
        // SAFETY: signalling the process group this runq created.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; whatever is left of the group (qemu) goes too.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
        self.done = true;
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The deadlines of one boot.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// From starting virtme-ng to the guest's first line.
    pub boot: Duration,
    /// From the guest's first line to the VM's exit.
    pub run: Duration,
}

/// Runs `vng ARGS` with its console in `console`, watching `dir/started`.
/// The VM's process group is announced to `guard`, which kills it if runq
/// dies without doing so itself (SIGKILL).
pub fn boot(
    vng: &Path,
    args: &[String],
    dir: &Path,
    console: &Path,
    (deadlines, guard): (Deadlines, &Guard),
    (interrupt, progress): (&AtomicBool, &mut dyn FnMut(String)),
) -> std::io::Result<Ended> {
    let log = std::fs::File::create(console)?;
    let (fd, parent) = (guard.announce_fd(), std::process::id() as libc::pid_t);
    let mut command = Command::new(vng);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: announce_group makes only async-signal-safe calls (it makes
    // the child the leader of a process group of its own).
    unsafe { command.pre_exec(move || announce_group(fd, parent)) };
    let child = command.spawn()?;
    let mut vm = Vm { child, done: false };
    let t0 = Instant::now();
    let started = dir.join("started");
    let mut boot = None;
    let mut last_word = t0;
    progress("booting the guest".into());
    loop {
        if interrupt.load(Ordering::Relaxed) {
            vm.kill();
            return Ok(Ended::Interrupted);
        }
        if boot.is_none() && started.exists() {
            boot = Some(t0.elapsed());
            last_word = Instant::now();
            progress(format!(
                "the guest booted in {:.0} s; runq runs in it",
                t0.elapsed().as_secs_f64()
            ));
        }
        if last_word.elapsed() >= PROGRESS_EVERY {
            last_word = Instant::now();
            let phase = match (boot, runs_done(dir)) {
                (None, _) => "booting".to_string(),
                (Some(_), 0) => "running".to_string(),
                (Some(_), n) => format!("running ({n} runs done)"),
            };
            progress(format!(
                "{phase}, {:.0} s so far",
                t0.elapsed().as_secs_f64()
            ));
        }
        if vm.child.try_wait()?.is_some() {
            vm.done = true;
            let boot = boot.or_else(|| started.exists().then(|| t0.elapsed()));
            return Ok(boot.map_or(Ended::DiedAtBoot, |boot| Ended::Ran { boot }));
        }
        match boot {
            None if t0.elapsed() > deadlines.boot => {
                vm.kill();
                return Ok(Ended::BootTimeout);
            }
            Some(b) if t0.elapsed() > b + deadlines.run => {
                vm.kill();
                return Ok(Ended::RunTimeout);
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// How many runs of a matrix guest have ended: their `N.rc` files in
/// the shared directory `dir`.
fn runs_done(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_suffix(".rc")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .count()
    })
}

/// How often a VM that is still booting or running says so.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);

/// The last `n` non-empty lines of the console, for an error message,
/// without control characters (a console holds NULs and escapes).
pub fn console_tail(console: &Path, n: usize) -> String {
    let bytes = std::fs::read(console).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.chars().filter(|c| !c.is_control()).collect::<String>())
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// The first executable named `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// True when `/dev/kvm` opens for reading and writing (KVM may still fail
/// to run the guest: the caller falls back to TCG then).
pub fn kvm_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// The kernel to boot: the running kernel's image in /boot, or else the
/// newest `vmlinuz-*` there (a distribution kernel).
pub fn default_kernel(boot_dir: &Path, release: &str) -> Option<PathBuf> {
    let own = boot_dir.join(format!("vmlinuz-{release}"));
    if own.is_file() {
        return Some(own);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(boot_dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .collect();
    found.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    found.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_kernel_wins_then_the_newest_image() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(default_kernel(dir.path(), "6.18"), None);
        std::fs::write(dir.path().join("vmlinuz-6.1.0-amd64"), "k").unwrap();
        std::fs::write(dir.path().join("config-6.1.0-amd64"), "c").unwrap();
        assert_eq!(
            default_kernel(dir.path(), "6.18"),
            Some(dir.path().join("vmlinuz-6.1.0-amd64"))
        );
        std::fs::write(dir.path().join("vmlinuz-6.18"), "k").unwrap();
        assert_eq!(
            default_kernel(dir.path(), "6.18"),
            Some(dir.path().join("vmlinuz-6.18"))
        );
    }

    #[test]
    fn a_boot_that_never_starts_times_out_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let console = dir.path().join("console");
        let never = AtomicBool::new(false);
        let deadlines = Deadlines {
            boot: Duration::from_millis(300),
            run: Duration::from_secs(1),
        };
        let sleep = Path::new("/bin/sh");
        let args = ["-c".to_string(), "sleep 30 & sleep 30".to_string()];
        let t0 = Instant::now();
        let mut said = Vec::new();
        let mut progress = |p: String| said.push(p);
        let watch = (&never, &mut progress as &mut dyn FnMut(String));
        let guard = Guard::spawn(Vec::new()).unwrap();
        let limits = (deadlines, &guard);
        let ended = boot(sleep, &args, dir.path(), &console, limits, watch).unwrap();
        assert_eq!(said, ["booting the guest"]);
        assert!(matches!(ended, Ended::BootTimeout), "{ended:?}");
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_guest_that_starts_and_exits_ran() {
        let dir = tempfile::tempdir().unwrap();
        let console = dir.path().join("console");
        let script = format!("echo hi; : > {}/started", dir.path().display());
        let deadlines = Deadlines {
            boot: Duration::from_secs(20),
            run: Duration::from_secs(20),
        };
        let script = format!("printf 'hi\\0\\033[2J\\n'; {script}");
        let args = ["-c".to_string(), script];
        let mut said = Vec::new();
        let mut progress = |p: String| said.push(p);
        let never = AtomicBool::new(false);
        let watch = (&never, &mut progress as &mut dyn FnMut(String));
        let guard = Guard::spawn(Vec::new()).unwrap();
        let ended = boot(
            Path::new("/bin/sh"),
            &args,
            dir.path(),
            &console,
            (deadlines, &guard),
            watch,
        );
        assert!(matches!(ended.unwrap(), Ended::Ran { .. }));
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[1].starts_with("the guest booted in "), "{said:?}");
        // NULs and escapes of the console never reach a document.
        assert_eq!(console_tail(&console, 2), "hi[2J | hi");
    }
}
