//! `runq ctprof compare BASELINE CANDIDATE`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::view::{load, print_view, ViewArgs};

/// Arguments of `runq ctprof compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  runq ctprof compare before.ctprof.zst after.ctprof.zst
  runq ctprof compare a.ctprof.zst b.ctprof.zst --group-by cgroup --sections primary,cgroup-stats
  runq ctprof compare a.ctprof.zst b.ctprof.zst --metrics run_time_ns,nonvoluntary_csw --sort-by run_time_ns")]
pub struct CompareArgs {
    /// The earlier snapshot.
    pub baseline: PathBuf,
    /// The later snapshot.
    pub candidate: PathBuf,
    /// Grouping, filters and output.
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Runs `runq ctprof compare`.
pub fn execute(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let opts = args.view.options()?;
    let (a, b) = (load(&args.baseline)?, load(&args.candidate)?);
    let view = runq_ctprof::compare::compare(&a, &b, &opts);
    print_view(&view, true, &args.view)?;
    Ok(ExitCode::SUCCESS)
}
