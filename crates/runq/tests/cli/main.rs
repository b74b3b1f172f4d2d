//! Integration tests of the runq binary: one test binary (one link) for
//! every command's end-to-end tests, one module per command.
//!
//! Tests that need root carry `#[cfg_attr(not(runq_root), ignore = "needs
//! root")]` (the crate's build script sets `runq_root` when built as root).
//! Tests whose figures depend on the host's load are not here: they are in
//! the benchmark tier (`scripts/bench`).

mod common;

mod bench;
mod breadth;

mod catalog;
mod closed_pipe;
mod collatz;
mod compare;
mod compare_schedulers;
mod ctprof;
mod ctprof_exited;
mod ctprof_export;
mod ctprof_record;
mod documented;
mod evidence;
mod fault_harness;
mod gauntlet;
mod guide;
mod host_monitor;
mod hud;
mod hud_actix;
mod hud_gateway;
mod hud_objects;
mod hud_serve;
mod hud_tasks;
mod hud_tonic;
mod hud_truth;
mod json_contract;
mod man;
mod readme_console;
mod rt;
mod run;
mod scenarios;
mod sched_ext_tier;
mod scheduler;
mod tier_guest;
mod usage;
mod vm;
mod vm_tier;
