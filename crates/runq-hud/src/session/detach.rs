//! Detaching at exit without waiting for it. The kernel removes a uprobe
//! after a grace period (about 0.1 s), one at a time under its event
//! mutex: with `--exact-polls` on a service of 40 future types (80
//! uprobes) that kept hud from exiting for 10 s after its report.
//! [`AttachedProbes::detach_after_exit`] leaves the files of the probes
//! to a child process (a fork holds its own references to them) that
//! dies with this process: this process exits at once, and the child's
//! exit closes them, the last references, in the background. The child
//! closes its standard streams first, so that a reader of hud's output
//! sees its end when hud exits.

use super::AttachedProbes;

impl AttachedProbes {
    /// Leaves the probes' teardown to a child that ends when this
    /// process does; call it only on the way out (the main thread, after
    /// the report). Where no child can be made, detaches here.
    pub fn detach_after_exit(self) {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child makes only system calls (no allocation, no
        // lock) before it ends.
        match unsafe { libc::fork() } {
            0 => wait_for_parent(parent),
            // Its files stay open in the child: closing them here, the
            // last references no longer, would not wait, and nor does
            // leaving them to this process's exit.
            p if p > 0 => std::mem::forget(self),
            _ => drop(self),
        }
    }
}

/// The child: closes its standard streams, then ends when `parent` does
/// (its death signal, or at once when it is already gone); its exit
/// closes the probes' files.
fn wait_for_parent(parent: libc::pid_t) -> ! {
    // SAFETY: plain system calls on this process only.
    unsafe {
        for fd in 0..3 {
            libc::close(fd);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() == parent {
            loop {
                libc::pause();
            }
        }
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// The stand-in for hud: makes the child, which keeps the pipe's
    /// write end, tells its pid through the pipe, and exits.
    fn stand_in(write: i32) -> ! {
        // SAFETY: only system calls between the fork and _exit.
        unsafe {
            let me = libc::getpid();
            let child = libc::fork();
            if child == 0 {
                super::wait_for_parent(me);
            }
            let pid = (child as i32).to_ne_bytes();
            libc::write(write, pid.as_ptr().cast(), pid.len());
            libc::_exit(0)
        }
    }

    /// The child keeps a pipe's write end open after its parent exits,
    /// and dies with the parent, closing it: the reader sees the child's
    /// pid, then the end of the pipe.
    #[test]
    fn the_child_holds_the_files_and_dies_with_its_parent() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child makes only system calls before _exit.
        let parent = unsafe { libc::fork() };
        if parent == 0 {
            stand_in(fds[1]);
        }
        // SAFETY: the read end is ours alone; our copy of the write end
        // is closed, so only the stand-in and its child hold it.
        let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
        unsafe { libc::close(fds[1]) };
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(parent, &mut status, 0) }, parent);
        let mut file = std::fs::File::from(read);
        let mut pid = [0u8; 4];
        file.read_exact(&mut pid).unwrap();
        let child = i32::from_ne_bytes(pid);
        let mut pfd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd. The write end's last holder, the child,
        // is gone within 5 s: the pipe hangs up.
        assert_eq!(
            unsafe { libc::poll(&mut pfd, 1, 5_000) },
            1,
            "the child lives on"
        );
        assert_ne!(pfd.revents & libc::POLLHUP, 0, "{}", pfd.revents);
        assert!(child > 0 && child != parent, "{child}");
    }
}
