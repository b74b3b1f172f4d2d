//! `runq ctprof capture --output PATH`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use runq_ctprof::{capture, save, CaptureOptions, CtprofSnapshot};

use crate::exit;

/// Arguments of `runq ctprof capture`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  sudo runq ctprof capture --output baseline.ctprof.zst
  runq ctprof capture --output now.ctprof.zst --no-taskstats --json")]
pub struct CaptureArgs {
    /// Where to write the snapshot (conventionally `*.ctprof.zst`).
    #[arg(long, short, value_name = "PATH")]
    pub output: PathBuf,
    /// Which sources the capture skips.
    #[command(flatten)]
    pub sources: SourceFlags,
    /// Threads reading /proc (default: one per online CPU this process may
    /// run on, as sched_getaffinity and the cgroup CPU quota allow).
    /// (`--workers`, the old spelling, is still accepted.)
    #[arg(
        long = "jobs",
        short = 'j',
        alias = "workers",
        value_name = "N",
        default_value_t = 0
    )]
    pub workers: usize,
    /// Print the capture summary as JSON.
    #[arg(long)]
    pub json: bool,
}

fn check_output(path: &Path) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(exit::usage(
            "--output is empty: give a file path such as snap.ctprof.zst",
        ));
    }
    if path.is_dir() {
        return Err(exit::usage(format!(
            "--output {} is a directory: give a file path such as {}/snap.ctprof.zst",
            path.display(),
            path.display()
        )));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(exit::usage(format!(
            "--output {}: directory {} does not exist; create it first",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// The printed summary of one capture.
#[derive(Debug, serde::Serialize)]
struct Summary<'a> {
    output: &'a Path,
    threads: usize,
    processes: usize,
    cgroups: usize,
    bytes: u64,
    bytes_per_thread: f64,
    capture_ms: f64,
    taskstats: Option<&'a runq_ctprof::model::TaskstatsSummary>,
    threads_vanished: u64,
    capabilities: Option<&'a runq_ctprof::avail::Capabilities>,
}

impl runq_common::json::JsonDocument for Summary<'_> {
    const TOOL: &'static str = "runq ctprof capture";
    const SCHEMA_VERSION: u32 = 1;
}

fn summarize<'a>(snap: &'a CtprofSnapshot, output: &'a Path, bytes: u64) -> Summary<'a> {
    let mut tgids: Vec<u32> = snap.threads.iter().map(|t| t.tgid).collect();
    tgids.dedup();
    Summary {
        output,
        threads: snap.threads.len(),
        processes: tgids.len(),
        cgroups: snap.cgroup_stats.len(),
        bytes,
        bytes_per_thread: bytes as f64 / snap.threads.len().max(1) as f64,
        capture_ms: snap.capture_duration_ns as f64 / 1e6,
        taskstats: snap.taskstats_summary.as_ref(),
        threads_vanished: snap
            .probe_summary
            .as_ref()
            .map_or(0, |p| p.threads_vanished),
        capabilities: snap.capabilities.as_ref(),
    }
}

fn taskstats_line(ts: &runq_ctprof::model::TaskstatsSummary) -> String {
    match &ts.unavailable {
        Some(why) => format!("taskstats: not queried: {why}\n"),
        None => format!(
            "taskstats: ok {} eperm {} esrch {} other {}; delay accounting {}\n",
            ts.ok_count,
            ts.eperm_count,
            ts.esrch_count,
            ts.other_err_count,
            match ts.delayacct_enabled {
                Some(true) => "on",
                Some(false) => "off (sysctl kernel.task_delayacct=1 to enable)",
                None => "unavailable",
            }
        ),
    }
}

/// The capture sources a user may skip, shared by `capture` and `record`.
#[derive(Debug, clap::Args)]
pub struct SourceFlags {
    /// Skip the taskstats genetlink queries (delay accounting, memory
    /// watermarks); the rest of the capture is unchanged.
    #[arg(long)]
    pub no_taskstats: bool,
    /// Skip reading jemalloc per-thread counters (ptrace) of processes
    /// linked with jemalloc.
    #[arg(long)]
    pub no_jemalloc: bool,
    /// Skip per-cgroup enrichment.
    #[arg(long)]
    pub no_cgroups: bool,
}

impl SourceFlags {
    /// Capture options with these sources on or off, the rest default.
    pub fn options(&self) -> CaptureOptions {
        CaptureOptions {
            taskstats: !self.no_taskstats,
            cgroups: !self.no_cgroups,
            jemalloc: !self.no_jemalloc,
            ..CaptureOptions::default()
        }
    }
}

/// Runs `runq ctprof capture`.
pub fn execute(args: CaptureArgs) -> anyhow::Result<ExitCode> {
    check_output(&args.output)?;
    let opts = CaptureOptions {
        workers: args.workers,
        ..args.sources.options()
    };
    let snap = capture(&opts);
    let bytes = save(&snap, &args.output).context("writing the snapshot")?;
    let s = summarize(&snap, &args.output, bytes);
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!(
        "wrote {}: {} threads in {} processes, {} cgroups, {} bytes ({:.0} B/thread), captured in {:.1} ms\n",
        s.output.display(),
        s.threads,
        s.processes,
        s.cgroups,
        s.bytes,
        s.bytes_per_thread,
        s.capture_ms
    );
    if let Some(caps) = s.capabilities {
        out.push_str(&format!("capabilities: {}\n", caps.host_line()));
    }
    if let Some(ts) = s.taskstats {
        out.push_str(&taskstats_line(ts));
        if ts.eperm_count > 0 {
            crate::errln!(
                "runq: note: taskstats needs CAP_NET_ADMIN (run as root); its fields are unavailable (-)"
            );
        }
    }
    crate::out!("{out}");
    Ok(ExitCode::SUCCESS)
}
