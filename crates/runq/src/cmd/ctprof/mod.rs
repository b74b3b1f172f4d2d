//! `runq ctprof`: per-thread host snapshots (`capture`), their comparison
//! (`compare`), rendering (`show`) and the metric vocabulary (`metric-list`).

mod capture;
mod compare;
mod export;
mod flags;
mod metric_list;
pub mod moment;
mod record;
pub mod run_hook;
mod show;
mod view;

use std::process::ExitCode;

/// Arguments of `runq ctprof`.
#[derive(Debug, clap::Args)]
pub struct CtprofArgs {
    /// The ctprof action.
    #[command(subcommand)]
    pub command: CtprofCommand,
}

/// ctprof's actions.
#[derive(Debug, clap::Subcommand)]
pub enum CtprofCommand {
    /// Snapshot every thread of the host into a `.ctprof.zst` file.
    ///
    /// Reads /proc/<tid>/{stat,sched,schedstat,io,cgroup} for every thread,
    /// smaps_rollup for process leaders, taskstats delay accounting over
    /// genetlink (root / CAP_NET_ADMIN), per-cgroup cpu/memory/pids/PSI,
    /// host PSI, sched_ext state and the host context. Best-effort: what
    /// could not be read is counted in the snapshot's summaries.
    Capture(capture::CaptureArgs),
    /// Capture snapshots at an interval into a directory (time-named,
    /// atomic, bounded by --max-bytes), counting threads that exited in
    /// between from taskstats exit notifications.
    Record(record::RecordArgs),
    /// Compare two snapshots: one row per (group, metric) with baseline,
    /// candidate, delta and percent delta; largest movers first.
    Compare(compare::CompareArgs),
    /// Render one snapshot grouped like `compare`.
    Show(show::ShowArgs),
    /// Export a snapshot as OpenMetrics / Prometheus text (node_exporter
    /// textfile collector) or CSV, grouped by pcomm, cgroup, comm or thread.
    Export(export::ExportArgs),
    /// List every metric and derived metric with tags, section and
    /// description.
    MetricList(metric_list::MetricListArgs),
}

/// Runs a ctprof action.
pub fn execute(args: CtprofArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CtprofCommand::Capture(a) => capture::execute(a),
        CtprofCommand::Compare(a) => compare::execute(a),
        CtprofCommand::Record(a) => record::execute(a),
        CtprofCommand::Show(a) => show::execute(a),
        CtprofCommand::Export(a) => export::execute(a),
        CtprofCommand::MetricList(a) => metric_list::execute(a),
    }
}
