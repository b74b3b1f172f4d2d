//! A guard process that undoes host state when runq dies without undoing
//! it itself (SIGKILL, the OOM killer, a crash).
//!
//! State the kernel keeps after its creator is gone, such as a tracefs
//! instance that records every CPU of the host, is not tied to any file
//! descriptor, and neither is a process group runq started apart from
//! its own (a profiler, a VM). A [`Guard`] ties them to runq's lifetime: a forked child that
//! blocks reading a pipe whose only writer is runq. When runq dies, the
//! kernel closes the writer, the read returns end-of-file, and the guard
//! carries out its [`Undo`] steps (turn tracing off, remove the
//! directory) before it exits. On a normal end runq undoes the state
//! itself and [`Guard`]'s drop kills the guard, which then does nothing.
//!
//! The child runs only async-signal-safe system calls on paths prepared
//! before the fork, so forking a multi-threaded runq is safe. It ignores
//! the terminal's signals (a Ctrl-C or hang-up reaches runq, which cleans
//! up and exits; the guard then sees end-of-file), holds no descriptor of
//! runq's but its pipe, and names itself `runq-guard`.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One step a guard carries out when runq dies.
#[derive(Debug, Clone)]
pub enum Undo {
    /// Writes `value` to the file `path` (e.g. `0` to `tracing_on`).
    Write {
        /// The file.
        path: CString,
        /// What to write.
        value: &'static [u8],
    },
    /// Removes the empty directory `path` (a tracefs instance, a cgroup),
    /// retrying while it is busy (the dead runq's children still exiting).
    Rmdir(CString),
    /// Removes the directory `path` and everything in it, up to
    /// [`TREE_DEPTH`] levels deep (a VM's shared directory).
    RemoveTree(CString),
}

impl Undo {
    /// A [`Undo::Write`] of `value` to `path`.
    pub fn write(path: &Path, value: &'static [u8]) -> Undo {
        Undo::Write {
            path: c_path(path),
            value,
        }
    }

    /// A [`Undo::Rmdir`] of `path`.
    pub fn rmdir(path: &Path) -> Undo {
        Undo::Rmdir(c_path(path))
    }

    /// A [`Undo::RemoveTree`] of `path`.
    pub fn remove_tree(path: &Path) -> Undo {
        Undo::RemoveTree(c_path(path))
    }
}

fn c_path(path: &Path) -> CString {
    // A path from the OS has no interior NUL; one that had would name
    // nothing, and its step would fail harmlessly.
    CString::new(path.as_os_str().as_bytes()).unwrap_or_default()
}

/// A running guard process (see the module doc).
#[derive(Debug)]
pub struct Guard {
    pid: libc::pid_t,
    writer: libc::c_int,
}

/// The most process groups one guard kills (see [`announce_group`]).
const MAX_GROUPS: usize = 16;

/// How long a guard retries a busy directory (the dead runq's workers
/// hold its files until they die of `PR_SET_PDEATHSIG`).
const RMDIR_TRIES: u32 = 500;
const RMDIR_PAUSE_NS: libc::c_long = 10_000_000;

/// How deep [`Undo::RemoveTree`] goes below its directory.
pub const TREE_DEPTH: u32 = 8;

impl Guard {
    /// Forks the guard; it carries out `steps`, in order, if this process
    /// dies while the [`Guard`] is alive.
    pub fn spawn(steps: Vec<Undo>) -> io::Result<Guard> {
        let [reader, writer] = pipe()?;
        // The guard says on this pipe that it bears its name, so that
        // nobody who lists runq's children meanwhile takes it for a worker.
        let [ready_r, ready_w] = pipe().inspect_err(|_| close_all(&[reader, writer]))?;
        // SAFETY: the child runs only async-signal-safe calls on memory
        // prepared before the fork and ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let err = io::Error::last_os_error();
            close_all(&[reader, writer, ready_r, ready_w]);
            return Err(err);
        }
        if pid == 0 {
            // SAFETY: in the child, see `guard_main`.
            unsafe { guard_main(reader, ready_w, &steps) };
        }
        // The parent keeps only the writer, once the guard is named.
        close_all(&[reader, ready_w]);
        wait_ready(ready_r);
        close_all(&[ready_r]);
        Ok(Guard { pid, writer })
    }

    /// The guard's pid.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The pipe's end a child of runq (between its fork and its exec)
    /// passes to [`announce_group`].
    pub fn announce_fd(&self) -> libc::c_int {
        self.writer
    }
}

/// In a child between fork and exec (async-signal-safe): makes the child
/// the leader of a process group of its own, has it die with runq
/// (`PR_SET_PDEATHSIG`), and tells the guard behind `fd` to SIGKILL that
/// group when runq dies. Once this returns, no death of runq leaves the
/// group running: before it, the child dies with runq; after it, the
/// guard kills the group. `parent` is runq's pid.
pub fn announce_group(fd: libc::c_int, parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: raw system calls in the forked child.
    unsafe {
        if libc::setpgid(0, 0) != 0
            || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(io::Error::other("runq exited before the child started"));
        }
        let me = libc::getpid().to_ne_bytes();
        if libc::write(fd, me.as_ptr().cast(), me.len()) != me.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Drop for Guard {
    /// runq undid the state itself: the guard is no longer needed, and is
    /// killed and reaped (not left to act on end-of-file, which a forked
    /// worker still holding the writer could delay).
    fn drop(&mut self) {
        // SAFETY: our own child and descriptor.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::close(self.writer);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// A pipe whose two ends close on exec.
fn pipe() -> io::Result<[libc::c_int; 2]> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors. O_CLOEXEC keeps them out
    // of programs runq execs (a scheduler, a VM).
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fds)
}

fn close_all(fds: &[libc::c_int]) {
    for &fd in fds {
        // SAFETY: closing descriptors this module made.
        unsafe { libc::close(fd) };
    }
}

/// Blocks until the guard writes its byte (or is gone).
fn wait_ready(ready: libc::c_int) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reading one byte into a local.
        let n = unsafe { libc::read(ready, (&mut byte as *mut u8).cast(), 1) };
        if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// The guard's life: name itself and say so on `ready`, wait for
/// end-of-file on `reader`, carry out `steps`, exit.
///
/// # Safety
/// Only in the child of a fork; never returns.
unsafe fn guard_main(reader: libc::c_int, ready: libc::c_int, steps: &[Undo]) -> ! {
    // SAFETY: each call is async-signal-safe (POSIX) or a raw system call.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_NAME, c"runq-guard".as_ptr());
        libc::write(ready, [1u8].as_ptr().cast(), 1);
        // Only the pipe stays open: no terminal, no socket of runq's.
        if reader != 0 {
            libc::dup2(reader, 0);
        }
        libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32);
        // What comes down the pipe before its end: process groups to
        // kill, 4 bytes each (see `announce_group`).
        let mut groups = [0 as libc::pid_t; MAX_GROUPS];
        let (mut buf, mut got, mut n_groups) = ([0u8; 4], 0usize, 0usize);
        loop {
            let n = libc::read(0, buf.as_mut_ptr().add(got).cast(), 4 - got);
            if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                break;
            }
            got += n.max(0) as usize;
            if got == 4 {
                if n_groups < MAX_GROUPS {
                    groups[n_groups] = libc::pid_t::from_ne_bytes(buf);
                    n_groups += 1;
                }
                got = 0;
            }
        }
        // The groups first: what they still write (a VM into its shared
        // directory) is then no more.
        for &pgid in groups.iter().take(n_groups).filter(|&&g| g > 0) {
            libc::kill(-pgid, libc::SIGKILL);
        }
        for step in steps {
            undo(step);
        }
        libc::_exit(0)
    }
}

/// Carries out one step, ignoring what fails (nothing is left to tell).
///
/// # Safety
/// Async-signal-safe; called only by [`guard_main`].
unsafe fn undo(step: &Undo) {
    // SAFETY: raw system calls on NUL-terminated paths.
    unsafe {
        match step {
            Undo::Write { path, value } => {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, value.as_ptr().cast(), value.len());
                    libc::close(fd);
                }
            }
            Undo::RemoveTree(path) => {
                remove_tree_at(libc::AT_FDCWD, path.as_ptr(), TREE_DEPTH);
            }
            Undo::Rmdir(path) => {
                for _ in 0..RMDIR_TRIES {
                    if libc::rmdir(path.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                        return;
                    }
                    let pause = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: RMDIR_PAUSE_NS,
                    };
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
            }
        }
    }
}

/// Removes `name` (relative to the directory `parent`): a file at once,
/// a directory after its entries, `depth` levels down at most. Raw
/// system calls and buffers on the stack only (the guard may not
/// allocate: it is the fork of a multi-threaded process). True when
/// `name` is gone.
///
/// # Safety
/// `name` is NUL-terminated; async-signal-safe.
unsafe fn remove_tree_at(parent: libc::c_int, name: *const libc::c_char, depth: u32) -> bool {
    // SAFETY: raw system calls on a NUL-terminated name and on buffers of
    // this frame.
    unsafe {
        if libc::unlinkat(parent, name, 0) == 0 {
            return true;
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let dir = if depth == 0 {
            -1
        } else {
            libc::openat(parent, name, flags)
        };
        if dir < 0 {
            return false;
        }
        // Entries are read again from the start until a pass removes
        // nothing: removing while reading may skip some.
        let mut buf = [0u8; 1024];
        loop {
            let mut removed = false;
            libc::lseek(dir, 0, libc::SEEK_SET);
            loop {
                let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
                if n <= 0 {
                    break;
                }
                let mut at = 0usize;
                while at + 19 < n as usize {
                    // struct linux_dirent64: ino (8), off (8), reclen (2),
                    // type (1), then the NUL-terminated name.
                    let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                    let entry = buf.as_ptr().add(at + 19).cast::<libc::c_char>();
                    if !is_dot_or_dotdot(&buf[at + 19..at + reclen]) {
                        removed |= remove_tree_at(dir, entry, depth - 1);
                    }
                    at += reclen.max(1);
                }
            }
            if !removed {
                break;
            }
        }
        libc::close(dir);
        libc::unlinkat(parent, name, libc::AT_REMOVEDIR) == 0
    }
}

/// True for the name bytes (NUL-terminated, padded) of `.` or `..`.
fn is_dot_or_dotdot(name: &[u8]) -> bool {
    matches!(name, [b'.', 0, ..] | [b'.', b'.', 0, ..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that holds a guard and is then SIGKILLed: the guard
    /// carries out its steps once the child is gone.
    #[test]
    fn a_guard_acts_when_its_owner_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let flag = dir.path().join("tracing_on");
        let sub = dir.path().join("instance");
        std::fs::write(&flag, "1").unwrap();
        std::fs::create_dir(&sub).unwrap();
        // A shared directory: more names than one read of it returns,
        // nested directories, and a link out that is removed, not followed.
        let tree = dir.path().join("runq-vm-1");
        std::fs::create_dir_all(tree.join("evidence/a/b")).unwrap();
        for i in 0..300 {
            std::fs::write(tree.join(format!("{i}.stdout")), "x").unwrap();
        }
        std::fs::write(tree.join("evidence/a/b/trace.json"), "{}").unwrap();
        std::os::unix::fs::symlink(&flag, tree.join("evidence/out")).unwrap();
        let steps = vec![
            Undo::write(&flag, b"0"),
            Undo::rmdir(&sub),
            Undo::remove_tree(&tree),
        ];
        // SAFETY: the child only spawns the guard, then waits to be killed.
        let owner = unsafe { libc::fork() };
        assert!(owner >= 0);
        if owner == 0 {
            let code = match Guard::spawn(steps) {
                Ok(g) => {
                    std::mem::forget(g);
                    loop {
                        // SAFETY: pause only waits for a signal.
                        unsafe { libc::pause() };
                    }
                }
                Err(_) => 1,
            };
            // SAFETY: ending the forked child.
            unsafe { libc::_exit(code) };
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: killing and reaping our own child.
        unsafe {
            libc::kill(owner, libc::SIGKILL);
            libc::waitpid(owner, std::ptr::null_mut(), 0);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while tree.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!sub.exists(), "the guard did not remove the directory");
        assert!(!tree.exists(), "the guard did not remove the tree");
        assert_eq!(std::fs::read_to_string(&flag).unwrap(), "0");
    }

    /// A child that announced its process group to the guard (between its
    /// fork and exec) is killed with its whole group when its runq dies.
    #[test]
    fn an_announced_group_dies_with_its_owner() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // SAFETY: the child only spawns the guard and the group, then
        // waits to be killed.
        let owner = unsafe { libc::fork() };
        assert!(owner >= 0);
        if owner == 0 {
            let Ok(guard) = Guard::spawn(Vec::new()) else {
                // SAFETY: ending the forked child.
                unsafe { libc::_exit(1) }
            };
            let fd = guard.announce_fd();
            let me = std::process::id() as libc::pid_t;
            let mut cmd = std::process::Command::new("sh");
            cmd.arg("-c")
                .arg(format!("echo $$ > {}; sleep 600", pidfile.display()));
            // SAFETY: announce_group is async-signal-safe.
            unsafe { cmd.pre_exec(move || announce_group(fd, me)) };
            let spawned = cmd.spawn();
            std::mem::forget(guard);
            std::mem::forget(spawned);
            loop {
                // SAFETY: pause only waits for a signal.
                unsafe { libc::pause() };
            }
        }
        // The shell makes the file before it writes its pid into it.
        let written = || std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok();
        let t = std::time::Instant::now();
        let mut group: Option<libc::pid_t> = written();
        while group.is_none() && t.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(10));
            group = written();
        }
        let group = group.expect("the group's leader wrote its pid");
        // SAFETY: killing and reaping our own child.
        unsafe {
            libc::kill(owner, libc::SIGKILL);
            libc::waitpid(owner, std::ptr::null_mut(), 0);
        }
        // SAFETY: signal 0 only asks whether the group has a member.
        let alive = || unsafe { libc::kill(-group, 0) } == 0;
        let t = std::time::Instant::now();
        while alive() && t.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(), "the announced group outlived its owner");
    }

    /// On a normal end the guard is killed and does nothing.
    #[test]
    fn a_dropped_guard_does_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("kept");
        std::fs::create_dir(&sub).unwrap();
        let guard = Guard::spawn(vec![Undo::rmdir(&sub)]).unwrap();
        let pid = guard.pid();
        drop(guard);
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "not reaped");
        assert!(sub.exists(), "a dropped guard acted");
    }
}
