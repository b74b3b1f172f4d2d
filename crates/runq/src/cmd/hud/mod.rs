//! `runq hud`: attach to a running Tokio process and report what blocks
//! its worker threads.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use runq_hud::discovery::find_process;
use runq_hud::session::{self, HudError, Options};

use crate::exit;

/// Arguments of `runq hud`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sudo runq hud my-service --headless --duration 10\n  \
    sudo runq hud --pid 4242 --threshold 2ms --headless --duration 5 --export hud.json\n\n\
    Needs root, or CAP_BPF + CAP_PERFMON. The export is Chrome trace-event JSON \
    (open it in ui.perfetto.dev).")]
pub struct HudArgs {
    /// The target, by name (its comm or executable name).
    #[arg(
        value_name = "PROCESS",
        required_unless_present_any = ["pid", "replay"],
        conflicts_with = "pid"
    )]
    pub process: Option<String>,
    /// The target, by pid.
    #[arg(long)]
    pub pid: Option<u32>,
    /// An unstripped copy of the target's binary, for symbols.
    #[arg(long, value_name = "BINARY")]
    pub target: Option<PathBuf>,
    /// Report blocking longer than this.
    #[arg(long, default_value = "5ms", value_parser = parse_threshold)]
    pub threshold: Duration,
    /// cpu-clock sampling frequency, Hz.
    #[arg(long, default_value_t = 99, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub frequency: u64,
    /// Print a report at the end instead of the live view.
    #[arg(long)]
    pub headless: bool,
    /// Stop after this long (default: until Ctrl-C or the target exits).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Write the session as Chrome trace-event JSON.
    #[arg(long, value_name = "FILE.json")]
    pub export: Option<PathBuf>,
    /// Write folded stacks of the blockers, weighted by blocked time (µs),
    /// for flamegraph.pl or inferno.
    #[arg(long, value_name = "FILE")]
    pub export_folded: Option<PathBuf>,
    /// Show the report saved in an `--export` file instead of attaching.
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["process", "pid"])]
    pub replay: Option<PathBuf>,
    /// Worker threads are those whose name starts with this.
    #[arg(long, value_name = "PREFIX")]
    pub worker_prefix: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    runq_workload::duration::parse_duration(s).map_err(|e| e.to_string())
}

fn parse_threshold(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_micros(100) {
        return Err("the threshold must be at least 100us".into());
    }
    Ok(d)
}

/// Root, or CAP_BPF (39) and CAP_PERFMON (38) in the effective set.
fn privileged() -> bool {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    caps & (1 << 39) != 0 && caps & (1 << 38) != 0
}

/// Prints a report saved by `--export`.
fn replay(path: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| exit::usage(format!("cannot read {}: {e}", path.display())))?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        exit::usage(format!(
            "{} is not JSON ({e}); pass a file written by --export",
            path.display()
        ))
    })?;
    let report = runq_hud::export::report_from_trace(&doc)
        .map_err(|e| exit::usage(format!("{}: {e}", path.display())))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", runq_hud::report::render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `runq hud`.
pub fn execute(args: HudArgs) -> anyhow::Result<ExitCode> {
    if !args.headless {
        return Err(exit::usage(
            "the live view is not built yet: add --headless (with --duration S) for the report",
        ));
    }
    if let Some(path) = &args.replay {
        return replay(path, args.json);
    }
    if args.target.is_some() {
        return Err(exit::usage(
            "--target is not supported yet: hud reads symbols through /proc/PID/map_files; run the target unstripped",
        ));
    }
    let proc_root = PathBuf::from("/proc");
    let pid = match (&args.process, args.pid) {
        (_, Some(pid)) => pid,
        (Some(name), None) => {
            find_process(&proc_root, name).map_err(|e| exit::usage(e.to_string()))?
        }
        (None, None) => return Err(exit::usage("name a PROCESS or pass --pid")),
    };
    if !proc_root.join(pid.to_string()).exists() {
        return Err(exit::usage(format!("no process with pid {pid}")));
    }
    if !privileged() {
        return Err(exit::no_privilege(
            "runq hud needs root, or CAP_BPF and CAP_PERFMON, to load its BPF programs",
        ));
    }
    let opts = Options {
        pid,
        threshold_ns: args.threshold.as_nanos() as u64,
        frequency: args.frequency,
        duration: args.duration,
        worker_prefix: args.worker_prefix.clone(),
        proc_root,
    };
    let stop = runq_workload::interrupt::install().context("installing signal handlers")?;
    let session = session::run(&opts, stop, |_| {}).map_err(|e| match e {
        HudError::Discovery(d) => exit::usage(d.to_string()),
        other => anyhow::Error::new(other),
    })?;
    if let Some(path) = &args.export {
        let doc = runq_hud::export::trace_json(&session.report, &session.findings);
        std::fs::write(path, serde_json::to_string(&doc)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.export_folded {
        std::fs::write(path, runq_hud::export::folded(&session.findings))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&session.report)?);
    } else {
        print!("{}", runq_hud::report::render(&session.report));
        if let Some(max) = session.detection_latency_ns.iter().max() {
            eprintln!(
                "detection latency: max {:.1} ms after the interval ended",
                *max as f64 / 1e6
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
