//! `runq`: one binary for the scheduler workload engine, per-thread host
//! snapshots, the profiler-overhead benchmark and the Tokio blocking HUD.

mod cli;
mod cmd;
mod exit;
mod style;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => exit::report_error(&err),
    }
}
