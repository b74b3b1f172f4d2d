//! `runq`: one binary for the scheduler workload engine, per-thread host
//! snapshots, the profiler-overhead benchmark and the Tokio blocking HUD.

mod cli;
mod cmd;
mod exit;
mod junit;
mod output;
mod stats;
mod style;

use std::process::ExitCode;

use clap::Parser;

/// Log lines (runq's and its libraries', e.g. aya's) go to stderr: warnings
/// by default, more with each -v, or as RUST_LOG says.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    env_logger::Builder::new()
        .filter_level(level)
        .parse_env("RUST_LOG")
        .format_timestamp(None)
        .init();
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => exit::report_error(&err),
    }
}
