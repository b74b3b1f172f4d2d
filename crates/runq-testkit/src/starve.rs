//! Real starvation for tests that need a worker kept runnable without a
//! CPU: a SCHED_FIFO busy loop on CPU 0 beside the worker pinned there.

use std::process::{Child, Command};
use std::time::Duration;

/// A SCHED_FIFO priority 1 busy loop pinned to CPU 0 (needs root); killed
/// and reaped when dropped. The kernel still leaves ordinary tasks on
/// CPU 0 about 50 ms a second (the RT throttle or the fair server).
pub struct RtHog(Child);

impl RtHog {
    /// Pins `pid` to CPU 0 and starts the hog there.
    pub fn starve(pid: i32) -> RtHog {
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET and
        // sched_setaffinity take it by pointer with its size.
        let pinned = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(pid, std::mem::size_of_val(&set), &set)
        };
        assert_eq!(pinned, 0, "pinning {pid} to CPU 0");
        let hog = Command::new("chrt")
            .args([
                "-f",
                "1",
                "taskset",
                "-c",
                "0",
                "sh",
                "-c",
                "while :; do :; done",
            ])
            .spawn()
            .expect("chrt and taskset (util-linux)");
        RtHog(hog)
    }

    /// The hog's pid (a trace names it as the task that held CPU 0).
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Starves `pid` for `how_long`, then ends the hog.
    pub fn starve_for(pid: i32, how_long: Duration) {
        let _hog = RtHog::starve(pid);
        std::thread::sleep(how_long);
    }
}

impl Drop for RtHog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
