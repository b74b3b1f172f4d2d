//! Readers of the kernel interfaces runq is built on.
//!
//! Every reader is split in two: a pure parser that takes text and returns a
//! typed value (tested on fixtures), and a thin function that reads the file
//! from a root path (so tests can point it at a synthetic `/proc` tree).

pub mod bpf_maps;
pub mod cgroup;
pub mod cgroup_stats;
pub mod clock;
pub mod cpulist;
pub mod cpustat;
pub mod guard;
pub mod host;
pub mod kmsg;
pub mod leftovers;
pub mod mapping;
pub mod netns;
pub mod numa_maps;
pub mod proc;
pub mod psi;
pub mod runnable_wait;
pub mod sched_debug;
pub mod sched_ext;
pub mod sched_ext_dump;
pub mod sched_ext_log;
pub mod sched_trace;
pub mod schedstat;
pub mod signal;
pub mod task_record;
pub mod taskstats;
pub mod topology;
pub mod tracefs;
pub mod tsc;
pub mod vmstat;
