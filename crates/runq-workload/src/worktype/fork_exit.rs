//! ForkExit: fork a child that exits at once and reap it, over and over
//! (process creation, exit and wakeup-of-parent paths).

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// ForkExit has no parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "ForkExit",
    summary: "fork() a child that _exit()s immediately, then waitpid() it (process churn)",
    units: "one unit per fork+wait; checkpoint every 1024 iterations",
    wakes: Some("the parent's waitpid, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::Latency,
    params: &[],
    needs: super::HostNeed::Nothing,
};

struct Body;

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        // SAFETY: the child calls only _exit, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: leaving the child without running any destructor.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            return 0;
        }
        let t0 = now_ns();
        let mut status = 0;
        loop {
            // SAFETY: reaping our own child.
            let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
            if rc == pid || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        tel.record_wake_since(t0);
        1
    }
}

/// Builds the per-worker bodies.
pub fn prepare(_: &Params) -> Box<dyn PreparedWork> {
    independent(|_| Ok(Box::new(Body)))
}
