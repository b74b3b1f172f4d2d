//! `runq collatz sweep`: arguments, progress and the printed summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use runq_collatz::config::{parse_target, MAX_PROCS};
use runq_collatz::fit::{MIN_PROCESS_COUNTS, PARAMETERS};
use runq_collatz::sweep::{run_sweep, Curve, Profiled, SweepConfig, SweepResult};
use runq_collatz::tsc;
use runq_common::duration::parse_duration;

use crate::exit;

/// Arguments of `runq collatz sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Largest process count (default: 2 x ncpu + 2, at least 8 so the
    /// two-elbow fit is determined).
    #[arg(long)]
    pub max_procs: Option<usize>,
    /// Runs per process count and mode (`--repeats`, the old spelling, is
    /// still accepted).
    #[arg(
        long = "repeat",
        alias = "repeats",
        value_name = "N",
        default_value_t = 3
    )]
    pub repeats: usize,
    /// Profiler command, run with `sh -c`; `{pid}` becomes the benchmark's
    /// pid, e.g. 'perf record -F 99 -g -p {pid} -o /tmp/perf.data'. Repeat
    /// it to compare profilers: each point then runs without, and with each.
    #[arg(long, value_name = "CMD")]
    pub profiler: Vec<String>,
    /// Outer iterations per run.
    #[arg(long, default_value_t = 3)]
    pub outer: u64,
    /// Inner iterations per run.
    #[arg(long, default_value_t = 200_000)]
    pub inner: u64,
    /// Target: 0, a number or A to J.
    #[arg(long, default_value = "0")]
    pub target: String,
    /// Time the profiler gets to attach before the work starts.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub settle: Duration,
    /// Directory for sweep.csv, sweep.json and sweep.svg.
    #[arg(
        long = "output",
        alias = "out",
        value_name = "DIR",
        default_value = "collatz-sweep"
    )]
    pub out: PathBuf,
    /// Print the whole result as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Seed of the run order: each round runs the process counts, and at
    /// each count the baseline and the profilers, in an order shuffled
    /// from this seed (the same seed, the same order).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn validate(args: &SweepArgs, ncpu: usize) -> anyhow::Result<usize> {
    let max = args
        .max_procs
        .unwrap_or((2 * ncpu + 2).max(MIN_PROCESS_COUNTS + 1));
    if max == 0 || max > MAX_PROCS {
        return Err(exit::usage(format!(
            "--max-procs must be between 1 and {MAX_PROCS}, got {max}"
        )));
    }
    if args.repeats == 0 || args.outer == 0 || args.inner == 0 {
        return Err(exit::usage(
            "--repeat, --outer and --inner must be at least 1",
        ));
    }
    for p in &args.profiler {
        if !p.contains("{pid}") {
            return Err(exit::usage(format!(
                "--profiler {p:?} has no {{pid}}: write where the benchmark's pid goes, e.g. 'perf record -p {{pid}}'"
            )));
        }
    }
    Ok(max)
}

/// Runs the sweep and prints its summary.
pub fn execute(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let ncpu = runq_kernel::cpulist::online_cpus().len().max(1);
    let max_procs = validate(&args, ncpu)?;
    let target = parse_target(&args.target).map_err(|e| exit::usage(format!("--target: {e}")))?;
    let exe = std::env::current_exe()?;
    let cfg = SweepConfig {
        command: vec![exe.into_os_string(), "collatz".into()],
        max_procs,
        repeats: args.repeats,
        outer: args.outer,
        inner: args.inner,
        target,
        profilers: args.profiler.clone(),
        settle: args.settle,
        seed: args.seed,
    };
    // The output directory is made before the sweep's minutes, not after:
    // one that cannot be made is the user's to fix (exit 2).
    std::fs::create_dir_all(&args.out).map_err(|e| {
        exit::usage(format!(
            "--output {}: cannot create it: {e}",
            args.out.display()
        ))
    })?;
    let interrupt = runq_kernel::signal::install()?;
    let bar = progress_bar(runq_collatz::sweep::schedule(&cfg).len());
    let result = run_sweep(&cfg, tsc::info(), interrupt, |done, _| {
        bar.set_position(done as u64)
    });
    bar.finish_and_clear();
    let result = result?;
    // The summary first: files that cannot be written (a full disk) must
    // not take the sweep's figures with them.
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&result)?);
    } else {
        print_summary(&result);
    }
    let paths = runq_collatz::output::write_sweep(&args.out, &result)
        .map_err(|e| exit::run_error(format!("--output {}: {e}", args.out.display())))?;
    for p in paths {
        crate::errln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(total: usize) -> ProgressBar {
    if !crate::style::stderr_is_tty() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {eta} left") {
        bar.set_style(style);
    }
    bar
}

fn print_curve(name: &str, c: &Curve) {
    let means: Vec<String> = c.means.iter().map(|(n, y)| format!("{n}:{y:.2}")).collect();
    crate::outln!("{name}: ticks/call by processes  {}", means.join("  "));
    let Some(f) = c.fit else {
        crate::outln!(
            "  fit underdetermined: {} process count(s) for the {PARAMETERS}-parameter two-elbow model (need at least {MIN_PROCESS_COUNTS}; raise --max-procs)",
            c.means.len()
        );
        return;
    };
    crate::outln!(
        "  elbows at {:.0} and {:.0} processes; flat level {:.2} ticks/call; slopes {:.3} / {:.3} / {:.3} per process",
        f.elbows[0], f.elbows[1], f.flat_level, f.slope_flat, f.slope_middle, f.slope_saturated
    );
    let residuals: Vec<String> = c
        .residuals
        .iter()
        .map(|(n, e)| format!("{n}:{e:+.2}"))
        .collect();
    crate::outln!(
        "  fit R² {:.4}, RMS residual {:.2} ticks/call; mean residual by processes  {}",
        f.r_squared,
        f.rms_residual,
        residuals.join("  ")
    );
}

fn print_summary(r: &SweepResult) {
    crate::outln!(
        "tsc {:.3} GHz ({}); run order shuffled with --seed {}",
        r.tsc.hz / 1e9,
        if r.tsc.invariant {
            "invariant"
        } else {
            "not invariant"
        },
        r.seed
    );
    print_curve("without profiler", &r.baseline);
    for p in &r.profiled {
        print_profiled(p);
    }
}

fn print_profiled(p: &Profiled) {
    print_curve(&format!("with {}", p.command), &p.curve);
    crate::outln!(
        "  slowdown: {:+.2}% (median over rounds, against the baseline run of the same round); profiler used {:.3} CPU-s per s of timed window",
        p.paired_slowdown_pct, p.profiler_cpu_per_s
    );
    if let Some(d) = &p.derived {
        crate::outln!(
            "  latency: {:+.2} ticks/call ({:+.1}%) on the flat part\n  \
             asymptotic change: slope after the first elbow {:.3} -> {:.3} ({:+.3}) ticks/call per process\n  \
             overhead: elbows moved {:+.0} and {:+.0} processes, saturated slope {:+.3}, \
             fixed shift {:+.2} ticks/call",
            d.latency_ticks_per_call,
            d.latency_pct,
            d.asymptotic.baseline,
            d.asymptotic.profiled,
            d.asymptotic.change,
            d.elbow_shift[0],
            d.elbow_shift[1],
            d.saturated.change,
            d.fixed_shift_ticks_per_call,
        );
    }
}
