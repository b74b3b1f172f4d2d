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

/// Parses the command line. Help and version print as clap prints them;
/// a usage error is one line on stderr (clap's first line, which names
/// the flag, the value and why) and exit 2.
fn parse_cli() -> Result<cli::Cli, ExitCode> {
    cli::Cli::try_parse().map_err(|e| {
        use clap::error::ErrorKind;
        if matches!(
            e.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        ) {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or("error: bad command line");
        let tip = text
            .lines()
            .map(str::trim)
            .find_map(|l| {
                l.strip_prefix("tip: ")
                    .or(l.starts_with("[possible").then_some(l))
            })
            .map(|t| format!("; {t}"))
            .unwrap_or_default();
        eprintln!(
            "runq: {}{tip} (see --help)",
            first.trim_start_matches("error: ")
        );
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    style::set_choice(cli.color);
    init_logging(cli.verbose);
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => exit::report_error(&err),
    }
}
