//! What the run needs of the host and of its scheduler: the topology a
//! work type needs, a BPF scheduler for SCHED_EXT workers, the scheduler
//! under test started, watched and stopped.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use runq_kernel::sched_ext::SchedExtSysfs;

use super::RunError;
use crate::alarm::Watchdog;
use crate::placement::SchedPolicy;
use crate::scenario::Scenario;
use crate::scheduler::{SchedulerDeath, SchedulerProc, SchedulerRun};

/// Starts the scenario's scheduler, if it names one, and checks that the
/// host has what the groups need: a BPF scheduler for workers asking for
/// SCHED_EXT, and each work type's topology.
pub(super) fn start_scheduler(
    scn: &Scenario,
    interrupt: &AtomicBool,
) -> Result<Option<SchedulerProc>, RunError> {
    host_has_what_groups_need(scn, Path::new("/sys"))?;
    let scheduler = scn
        .scheduler
        .as_ref()
        .map(|s| SchedulerProc::start(s, interrupt))
        .transpose()?;
    // A scheduler the kernel ejected as it started is the run's FAIL
    // (its first death check says so), not a host without one.
    let ejected = scheduler
        .as_ref()
        .is_some_and(SchedulerProc::ejected_at_start);
    if !ejected
        && scn
            .groups
            .iter()
            .any(|g| g.setup.policy == SchedPolicy::Ext)
    {
        sched_ext_ready(&runq_kernel::sched_ext::read_sched_ext(Path::new("/sys")))
            .map_err(RunError::HostLacks)?;
    }
    Ok(scheduler)
}

/// The first group whose work type needs a topology this host lacks.
pub(super) fn host_has_what_groups_need(scn: &Scenario, sys_root: &Path) -> Result<(), RunError> {
    for g in scn.groups.iter().filter(|g| g.custom.is_none()) {
        let work = &g.work;
        let lacking = work.info().needs.lacking(work.name(), sys_root);
        if let Some(why) = lacking.or_else(|| work.params_lacking()) {
            let why = if g.name == work.name() {
                why
            } else {
                format!("group {}: {why}", g.name)
            };
            return Err(RunError::HostLacks(why));
        }
    }
    Ok(())
}

/// Whether workers with `policy = "ext"` have a BPF scheduler to run
/// under (checked once the scenario's own scheduler, if any, is ready): a
/// task that asks for SCHED_EXT with none loaded silently stays with the
/// fair class, and a kernel without sched_ext refuses it.
pub fn sched_ext_ready(state: &Option<SchedExtSysfs>) -> Result<(), String> {
    match state {
        None => Err(
            "policy ext needs a kernel with sched_ext (CONFIG_SCHED_CLASS_EXT); \
                     this one has no /sys/kernel/sched_ext"
                .into(),
        ),
        Some(s) if s.state != "enabled" => Err(format!(
            "policy ext puts workers under the loaded sched_ext scheduler, and none is \
             loaded (/sys/kernel/sched_ext/state: {}); start one (e.g. scx_simple) or name \
             it in the scenario's scheduler or with --scheduler",
            s.state
        )),
        Some(_) => Ok(()),
    }
}

/// Stops the scheduler after the run (unless it died) and records how.
pub(super) fn stop_scheduler(
    proc: Option<SchedulerProc>,
    death: Option<&SchedulerDeath>,
) -> Option<SchedulerRun> {
    let proc = proc?;
    let mut run = proc.run_info();
    run.stopped = match death {
        Some(d) if d.before_start() => d.status.clone(),
        Some(d) if !d.still_running() => format!("{} during the run", d.status),
        // sched_ext let it go while it lived: stopped as after any run.
        Some(_) => format!("sched_ext let it go during the run; {}", proc.shutdown()),
        None => proc.shutdown(),
    };
    Some(run)
}

/// The watchdog on the scheduler under test (none in repro mode), with
/// the stall bound its spec gives.
pub(super) fn watchdog_for(
    scn: &Scenario,
    scheduler: Option<&SchedulerProc>,
    repro: bool,
) -> Option<Watchdog> {
    let spec = scn.scheduler.as_ref()?;
    match (scheduler, repro) {
        (Some(s), false) => Some(Watchdog {
            scheduler_pid: s.pid(),
            stuck_ns: u64::try_from(spec.watchdog.as_nanos()).unwrap_or(u64::MAX),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(s: &str) -> Option<SchedExtSysfs> {
        Some(SchedExtSysfs {
            state: s.into(),
            ..SchedExtSysfs::default()
        })
    }

    #[test]
    fn policy_ext_needs_a_loaded_sched_ext_scheduler() {
        let none = sched_ext_ready(&None).unwrap_err();
        assert!(none.contains("CONFIG_SCHED_CLASS_EXT"), "{none}");
        let off = sched_ext_ready(&state("disabled")).unwrap_err();
        assert!(
            off.contains("none is loaded") && off.contains("disabled"),
            "{off}"
        );
        assert!(sched_ext_ready(&state("enabled")).is_ok());
    }
}
