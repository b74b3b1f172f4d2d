//! Liveness gauntlet, thread mode: every thread-capable work type as
//! threads of the test process.

mod gauntlet_common;

#[test]
fn every_thread_capable_work_type_keeps_its_promises_as_threads() {
    gauntlet_common::gauntlet(runq_workload::CloneMode::Thread);
}
