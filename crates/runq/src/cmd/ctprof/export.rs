//! `runq ctprof export --format openmetrics|prometheus|csv SNAPSHOT`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use runq_common::safefile::{write_atomic, Replace};
use runq_ctprof::export::{write_csv, write_metrics, Dialect, ExportGroup};
use runq_ctprof::group::{GroupBy, Grouping};

use super::view::load;
use crate::exit;

/// Arguments of `runq ctprof export`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  runq ctprof export --format openmetrics now.ctprof.zst
  runq ctprof export --format prometheus --group-by cgroup now.ctprof.zst \\
      --output /var/lib/node_exporter/textfile_collector/runq_ctprof.prom
  runq ctprof export --format csv --group-by thread now.ctprof.zst > threads.csv")]
pub struct ExportArgs {
    /// The snapshot to export.
    pub snapshot: PathBuf,
    /// `openmetrics`: OpenMetrics 1.0 text; `prometheus`: the Prometheus
    /// text format 0.0.4 (what node_exporter's textfile collector reads);
    /// `csv`: one row per group.
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub format: Format,
    /// Label / row axis. `thread` gives one series per thread (pcomm, comm,
    /// cgroup, tgid, tid labels): high cardinality, only when you need it.
    #[arg(long, value_name = "AXIS", value_enum, default_value_t = Axis::Pcomm)]
    pub group_by: Axis,
    /// Write to FILE atomically (temporary file + rename in the same
    /// directory; never through a symlink) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `--format` of `runq ctprof export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// OpenMetrics 1.0 text (counter families declared without `_total`,
    /// units, `# EOF`).
    Openmetrics,
    /// The Prometheus text exposition format 0.0.4.
    Prometheus,
    /// One CSV row per group.
    Csv,
}

/// `--group-by` of `runq ctprof export`: a grouping axis or one series
/// per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Axis {
    /// Process name.
    Pcomm,
    /// cgroup v2 path.
    Cgroup,
    /// Thread name with pools collapsed.
    Comm,
    /// Literal thread name.
    CommExact,
    /// One series per thread.
    Thread,
}

fn group(axis: Axis) -> ExportGroup {
    let by = match axis {
        Axis::Thread => return ExportGroup::Thread,
        Axis::Pcomm => GroupBy::Pcomm,
        Axis::Cgroup => GroupBy::Cgroup,
        Axis::Comm => GroupBy::Comm,
        Axis::CommExact => GroupBy::CommExact,
    };
    ExportGroup::By(Grouping {
        by,
        normalize: by == GroupBy::Comm,
        ..Grouping::default()
    })
}

/// Runs `runq ctprof export`.
pub fn execute(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let group = group(args.group_by);
    if let Some(out) = &args.output {
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
        if out.is_dir() || parent.is_some_and(|p| !p.is_dir()) {
            return Err(exit::usage(format!(
                "--output {}: give a file path in an existing directory",
                out.display()
            )));
        }
    }
    let snap = load(&args.snapshot)?;
    let mut buf = Vec::with_capacity(snap.threads.len() * 64);
    match args.format {
        Format::Csv => write_csv(&snap, &group, &mut buf)?,
        Format::Openmetrics => write_metrics(&snap, &group, Dialect::OpenMetrics, &mut buf)?,
        Format::Prometheus => write_metrics(&snap, &group, Dialect::Prometheus, &mut buf)?,
    }
    match &args.output {
        Some(out) => write_atomic(out, &buf, Replace::OwnFile)
            .with_context(|| format!("writing {}", out.display()))?,
        None => {
            let mut stdout = runq_common::output::Stdout::new();
            stdout.write_all(&buf).and_then(|_| stdout.flush())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
