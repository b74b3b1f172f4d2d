//! ForkExit: fork a child that exits at once and reap it, over and over
//! (process creation, exit and wakeup-of-parent paths). The child stamps
//! the time into memory it shares with the parent just before `_exit`
//! (the call that wakes the parent); a `waitpid` that was already waiting
//! then records the wake latency from that stamp to the parent running
//! again (see [`crate::wake_stamp`]). The child's exit path (its memory
//! torn down before the parent is signalled) is in the figure.

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::shared::SharedRegion;
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;
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
    wakes: Some(
        "the parent's waitpid, when it waited: from the child's stamp, taken just before _exit, to running again",
    ),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::Latency,
    params: &[],
    needs: super::HostNeed::Nothing,
};

struct Body {
    /// The child's stamp, shared across the fork.
    region: SharedRegion,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let stamp = WakeStamp::new(self.region.atomic_u64(0));
        // SAFETY: the child only reads the clock, stores to shared memory
        // and calls _exit, all async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            stamp.mark();
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
        tel.record_wake_if_waited(t0, stamp.read());
        1
    }
}

/// Builds the per-worker bodies, each with its own stamp page.
pub fn prepare(_: &Params) -> Box<dyn PreparedWork> {
    independent(|_| {
        Ok(Box::new(Body {
            region: SharedRegion::new(64)?,
        }))
    })
}
