//! `runq collatz`: the profiler-overhead benchmark, with the original
//! program's positional interface, `runq collatz sweep`, `search` and
//! `depth-report`.

mod depth;
mod sweep;

use std::io::Read;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use runq_collatz::config::{parse_int, parse_loops, parse_target, resolve_cpus};
use runq_collatz::{tsc, Config, Target};

use crate::exit;

/// Arguments of `runq collatz`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    allow_negative_numbers = true,
    disable_version_flag = true,
    after_help = "Targets (value; calls per chain): A 7;16  B 27;111  C 703;170  D 2463;208  \
                  E 6171;261\n  F 77031;350  G 837799;524  H 780657630;464  I 9780657630;1132  \
                  J 135435277615595687;2001\n\n\
                  Output: one CSV line `n, outer, inner, target, total_calls, ticks, \
                  ticks_per_call`\n(the original's), the counter's frequency on stderr.\n\
                  With DD_DOGSTATSD_SOCKET set, each process sends app.collatz.ticks,\n\
                  app.collatz.stacks and app.collatz.functions gauges per outer iteration.\n\n\
                  Examples:\n  runq collatz                 defaults: 1 + ncpu/2 processes, 10 x 1000000, target 0\n  \
                  runq collatz -1 10 100000 G   every CPU, the 524-deep chain\n  \
                  runq collatz 1 1 100000 J     one process, chains 2001 calls deep\n  \
                  runq collatz sweep --profiler 'perf record -F 99 -g -p {pid} -o /tmp/p.data'"
)]
pub struct CollatzArgs {
    /// `sweep`: the study from one process to past the CPU count;
    /// `search`: deep start values; `depth-report`: profilers' stack depths.
    #[command(subcommand)]
    pub command: Option<CollatzCommand>,
    /// Processes: a count, 0 for 1 + ncpu/2, a negative count for every
    /// CPU (at most 1000).
    #[arg(value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Outer iterations (default 10; 0 for the default).
    #[arg(value_name = "OUTER")]
    pub outer: Option<String>,
    /// Inner iterations per outer one (default 1000000; 0 for the default).
    #[arg(value_name = "INNER")]
    pub inner: Option<String>,
    /// 0: each inner index is its argument; a number; or a letter A to J.
    #[arg(value_name = "TARGET")]
    pub target: Option<String>,
    /// Print the version and exit.
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    /// Print the result as a JSON object with units.
    #[arg(long)]
    pub json: bool,
    /// Wait for one byte on stdin before starting (used by `sweep` so a
    /// profiler can attach first).
    #[arg(long, hide = true)]
    pub hold: bool,
}

/// Subcommands of `runq collatz`.
#[derive(Debug, Subcommand)]
pub enum CollatzCommand {
    /// Run the workload from 1 process to past the CPU count, with and
    /// without a profiler, fit the curves and report latency and overhead.
    Sweep(sweep::SweepArgs),
    /// Find a start value whose chain is exactly DEPTH calls deep and fits
    /// in 64 bits (a backward search of the inverse Collatz tree).
    Search(depth::SearchArgs),
    /// How deep a profiler's recorded stacks reach: reads `perf script`
    /// output (or a perf.data file) and counts graph frames per sample.
    DepthReport(depth::DepthReportArgs),
}

/// Builds the run's configuration from the positional arguments.
fn config_from(args: &CollatzArgs) -> anyhow::Result<Config> {
    let usage =
        |e: runq_collatz::ConfigError| exit::usage(format!("{e} (see `runq collatz --help`)"));
    if let Some(word) = args.cpus.as_deref().filter(|w| w.parse::<u64>().is_err()) {
        let path = ["collatz".to_string(), word.to_string()];
        if let Some(sub) = super::cli::suggest_subcommand(&path) {
            return Err(exit::usage(format!(
                "unrecognized subcommand '{word}'; did you mean '{sub}'? (see `runq collatz --help`)"
            )));
        }
    }
    let ncpu = runq_kernel::cpulist::online_cpus().len().max(1);
    let cpus = args
        .cpus
        .as_deref()
        .map_or(Ok(0), |s| parse_int("CPUS", s))
        .map_err(usage)?;
    let (procs, capped) = resolve_cpus(cpus, ncpu);
    if capped {
        crate::errln!(
            "runq: CPUS {cpus} is more than {}; using {procs}",
            runq_collatz::config::MAX_PROCS
        );
    }
    let loops = |s: &Option<String>, what, default| {
        s.as_deref()
            .map_or(Ok(default), |s| parse_loops(what, s, default))
            .map_err(usage)
    };
    Ok(Config {
        procs,
        outer: loops(&args.outer, "OUTER", runq_collatz::config::DEFAULT_OUTER)?,
        inner: loops(&args.inner, "INNER", runq_collatz::config::DEFAULT_INNER)?,
        target: args
            .target
            .as_deref()
            .map_or(Ok(Target::EachIndex), parse_target)
            .map_err(usage)?,
    })
}

/// On a terminal, a spinner with the elapsed time while the processes
/// run (it wakes once every 250 ms, on stderr); hidden otherwise.
fn running(config: &Config) -> indicatif::ProgressBar {
    if !crate::style::stderr_is_tty() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(format!(
        "{} processes x {} x {} walks of the call graph",
        config.procs, config.outer, config.inner
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}

/// Runs `runq collatz`.
pub fn execute(args: CollatzArgs) -> anyhow::Result<ExitCode> {
    if args.version {
        crate::outln!(
            "runq collatz {} (collatz 1.5 interface)",
            env!("CARGO_PKG_VERSION")
        );
        return Ok(ExitCode::SUCCESS);
    }
    match args.command {
        Some(CollatzCommand::Sweep(s)) => return sweep::execute(s),
        Some(CollatzCommand::Search(s)) => return depth::search(s),
        Some(CollatzCommand::DepthReport(d)) => return depth::depth_report(d),
        None => {}
    }
    let config = config_from(&args)?;
    if args.hold {
        // No start byte (end of input): whoever held the run went away;
        // do not run unattended.
        let mut byte = [0u8; 1];
        if !matches!(std::io::stdin().read(&mut byte), Ok(1)) {
            anyhow::bail!("--hold: standard input ended before the start byte; not running");
        }
    }
    let spinner = running(&config);
    let result = runq_collatz::run(&config);
    spinner.finish_and_clear();
    let result = result?;
    let info = tsc::info();
    if args.json {
        let doc = runq_collatz::output::RunDocument::new(&result, &info);
        crate::outln!(
            "{}",
            serde_json::to_string(&runq_common::json::Stamped(&doc))?
        );
    } else {
        crate::outln!("{}", result.csv_line());
        crate::errln!(
            "# tsc {:.3} GHz, {}; {:.2} ns per call",
            info.hz / 1e9,
            if info.invariant {
                "invariant"
            } else {
                "NOT invariant: ticks may not be comparable"
            },
            result.ticks_per_call / info.hz * 1e9
        );
    }
    Ok(ExitCode::SUCCESS)
}
