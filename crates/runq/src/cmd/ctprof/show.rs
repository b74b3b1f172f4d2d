//! `runq ctprof show SNAPSHOT`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::view::{load, print_view, ViewArgs};

/// Arguments of `runq ctprof show`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  runq ctprof show now.ctprof.zst --sort-by run_time_ns --limit 20
  runq ctprof show now.ctprof.zst --group-by comm --sections primary --metrics nonvoluntary_csw")]
pub struct ShowArgs {
    /// The snapshot to render.
    pub snapshot: PathBuf,
    /// Grouping, filters and output.
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Runs `runq ctprof show`.
pub fn execute(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let opts = args.view.options()?;
    let snap = load(&args.snapshot)?;
    let view = runq_ctprof::compare::show(&snap, &opts);
    print_view(&view, false, &args.view)?;
    Ok(ExitCode::SUCCESS)
}
