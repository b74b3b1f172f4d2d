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

/// The probe for one run, loaded and attached now, or why there is none
/// (not root, a tracepoint that would not attach, the host monitor off).
pub fn runnable_wait_probe(monitor_on: bool) -> Result<Box<dyn RunnableWaitProbe>, String> {
    if !monitor_on {
        return Err("the host monitor is off (snapshot interval off)".into());
    }
    let probe = HostWait::start().map_err(|e| e.to_string())?;
    Ok(Box::new(BpfWaitProbe(probe)))
}
