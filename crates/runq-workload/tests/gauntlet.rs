//! Liveness gauntlet, process mode: every work type as forked workers.

mod gauntlet_common;

#[test]
fn every_work_type_keeps_its_promises_as_processes() {
    gauntlet_common::gauntlet(runq_workload::CloneMode::Process);
}
