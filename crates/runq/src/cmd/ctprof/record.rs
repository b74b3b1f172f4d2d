//! `runq ctprof record --interval DUR (--count N | --duration DUR) --output DIR`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use runq_ctprof::record::{record, RecordOptions, Stop, DEFAULT_FULL_EVERY};

use runq_common::duration::parse_duration;

use crate::exit;

/// Parses a byte count: `500000`, `64K`, `10MiB`, `1G` (powers of 1024).
fn bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a byte count (e.g. 500M, 2GiB, 1048576)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("{s:?}: unknown unit (use K, M or G)")),
    };
    n.checked_shl(shift)
        .filter(|v| *v > 0)
        .ok_or_else(|| format!("{s:?}: must be a positive size"))
}

/// Arguments of `runq ctprof record`.
#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("stop").required(true).args(["count", "duration"])),
    after_help = "\
Examples:
  sudo runq ctprof record --interval 1s --count 60 --output /var/tmp/ctprof
  sudo runq ctprof record --interval 10s --duration 24h --max-bytes 500M --output /var/tmp/ctprof
  runq ctprof compare /var/tmp/ctprof@first /var/tmp/ctprof@last"
)]
pub struct RecordArgs {
    /// Time between capture starts (e.g. 1s, 500ms, 1m).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub interval: Duration,
    /// Stop after N snapshots.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Stop after this long.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Directory for the snapshots (created if missing).
    #[arg(long, short, value_name = "DIR")]
    pub output: PathBuf,
    /// Keep the directory's snapshots under this size, oldest removed
    /// first (K, M, G suffixes; powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = bytes)]
    pub max_bytes: Option<u64>,
    /// Take a full snapshot every N intervals; in between, each interval
    /// re-reads only the threads that ran and writes a delta snapshot
    /// (1 = every snapshot full). Readers see full snapshots either way.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_FULL_EVERY, value_parser = clap::value_parser!(u64).range(1..))]
    pub full_every: u64,
    /// Which sources each capture skips.
    #[command(flatten)]
    pub sources: super::capture::SourceFlags,
    /// Print the final summary as JSON.
    #[arg(long)]
    pub json: bool,
}

fn check_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(exit::usage(format!(
            "--output {}: not a directory; give a directory for the snapshots",
            dir.display()
        )));
    }
    if dir.is_dir() {
        return Ok(());
    }
    // Only the last component is created: a typo in a parent directory
    // must not leave a tree of new directories behind.
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent.filter(|p| !p.is_dir()) {
        return Err(exit::usage(format!(
            "--output {}: the directory {} does not exist; create it first",
            dir.display(),
            parent.display()
        )));
    }
    std::fs::create_dir(dir)
        .map_err(|e| exit::usage(format!("--output {}: cannot create it: {e}", dir.display())))
}

/// Runs `runq ctprof record`.
pub fn execute(args: RecordArgs) -> anyhow::Result<ExitCode> {
    if args.interval.is_zero() {
        return Err(exit::usage("--interval must be positive, e.g. 1s"));
    }
    check_dir(&args.output)?;
    let interrupt = runq_kernel::signal::install().context("installing signal handlers")?;
    let opts = RecordOptions {
        dir: args.output.clone(),
        interval: args.interval,
        stop: match (args.count, args.duration) {
            (Some(n), _) => Stop::Count(n),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => return Err(exit::usage("give --count N or --duration DUR")),
        },
        max_bytes: args.max_bytes,
        full_every: args.full_every,
        capture: args.sources.options(),
    };
    let quiet = args.json;
    let sum = record(&opts, interrupt, |path, bytes| {
        if !quiet {
            crate::outln!("wrote {} ({bytes} bytes)", path.display());
        }
    })
    .context("recording")?;
    let code = match runq_kernel::signal::received_signal() {
        Some(sig) if sum.interrupted => exit::Exit::Interrupted(sig).exit_code(),
        _ => ExitCode::SUCCESS,
    };
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&sum)?);
        return Ok(code);
    }
    let mut out =
        format!(
        "{} snapshots ({} full){}, {} removed for --max-bytes, {} bytes on disk; {} exited threads counted\n",
        sum.snapshots,
        sum.full_snapshots,
        if sum.interrupted { " (interrupted)" } else { "" },
        sum.removed,
        sum.bytes_on_disk,
        sum.exited_threads
    );
    if let Some(why) = &sum.exits_unavailable {
        out.push_str(&format!("exited threads not counted: {why}\n"));
    }
    crate::out!("{out}");
    Ok(code)
}
