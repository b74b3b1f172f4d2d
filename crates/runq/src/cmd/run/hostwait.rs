//! The host monitor's runnable-wait probe: runq-hud's BPF programs on the
//! scheduler tracepoints, given to the run as runq-workload's
//! [`RunnableWaitProbe`] (runq-workload depends on no BPF crate).

use runq_hud::hostwait::{HostWait, HostWaitError};
use runq_workload::series::host::{RunnableWaitProbe, WaitFigures};

/// Where the figures come from, as the report names it.
const SOURCE: &str = "BPF tracepoints sched_wakeup, sched_wakeup_new, sched_switch";

/// runq-hud's [`HostWait`] as a [`RunnableWaitProbe`].
struct BpfWaitProbe(HostWait);

impl RunnableWaitProbe for BpfWaitProbe {
    fn source(&self) -> String {
        SOURCE.into()
    }

    fn begin(&mut self) -> Result<(), String> {
        self.0.begin().map_err(|e| e.to_string())
    }

    fn read(&mut self) -> Result<WaitFigures, String> {
        self.0.read().map_err(|e: HostWaitError| e.to_string())
    }
}

/// The most workers a run measures its runnable waits with. With the
/// probe's programs on the scheduler tracepoints, starting and stopping
/// 2,000 spinners on 2 CPUs took seconds longer (a SIGINT: 1.0-1.4 s to
/// exit, against 0.5-0.6 s without), which is not yet understood; until
/// it is, larger runs go without the figure, and say so.
const MAX_PROBED_WORKERS: usize = 512;

/// The probe for one run of `workers` workers, loaded and attached now,
/// or why there is none (not asked for, not root, a tracepoint that would
/// not attach, the host monitor off, too many workers). Not asked for, it
/// stays off: its programs run on every context switch of the host (about
/// 0.5 µs each), which cost a pinned FutexPingPong a quarter of its rate.
pub fn runnable_wait_probe(
    monitor_on: bool,
    asked: bool,
    workers: usize,
) -> Result<Box<dyn RunnableWaitProbe>, String> {
    if !monitor_on {
        return Err("the host monitor is off (snapshot interval off)".into());
    }
    if !asked {
        return Err("off; --runnable-wait measures it".into());
    }
    if workers > MAX_PROBED_WORKERS {
        return Err(format!(
            "not measured above {MAX_PROBED_WORKERS} workers (the BPF probe slows the start and stop of large runs)"
        ));
    }
    let probe = HostWait::start().map_err(|e| e.to_string())?;
    Ok(Box::new(BpfWaitProbe(probe)))
}
