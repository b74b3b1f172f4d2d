//! runq collatz: how much does a profiler cost the program it profiles?
//!
//! A data-driven call graph of 1000 native functions ([`callgraph`]) is
//! walked by N forked processes that meet at a process-shared barrier
//! ([`barrier`]) and time themselves with the time stamp counter
//! ([`tsc`]); a run reports ticks per call ([`runner`]). A sweep runs the
//! workload from one process to past the CPU count with and without a
//! profiler attached, fits each curve with two elbows ([`fit`]) and derives
//! the profiler's latency and overhead ([`sweep`], [`order`], [`summary`]),
//! written as CSV, JSON and an SVG plot ([`output`], [`plot`]). Deep start
//! values are found with [`search`]; [`stacks`] reads how deep a
//! profiler's recorded stacks reach.

pub mod barrier;
pub mod callgraph;
pub mod config;
pub mod fit;
pub mod order;
pub mod output;
pub mod plot;
pub mod proc_cpu;
pub mod runner;
pub mod search;
pub mod stacks;
pub mod statsd;
pub mod summary;
pub mod sweep;
pub use runq_kernel::tsc;

pub use config::{Config, ConfigError, Target};
pub use runner::{run, RunError, RunResult};
