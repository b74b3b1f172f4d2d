//! `runq ctprof compare BASELINE CANDIDATE`: two snapshots, or two
//! directories of snapshots compared by their medians.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use runq_ctprof::compare::median::{comm_names_over_dirs, compare_samples, Samples};
use runq_ctprof::group::{CommNames, Grouping};
use runq_ctprof::CtprofSnapshot;

use super::view::{load, print_view, ViewArgs};
use crate::exit;

/// Arguments of `runq ctprof compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  runq ctprof compare before.ctprof.zst after.ctprof.zst
  runq ctprof compare a.ctprof.zst b.ctprof.zst --group-by cgroup --sections primary,cgroup-stats
  runq ctprof compare a.ctprof.zst b.ctprof.zst --metrics run_time_ns,nonvoluntary_csw \\
      --sort-by run_time_ns
  runq ctprof compare /var/tmp/ctprof@first /var/tmp/ctprof@last
  # medians of each directory's snapshots (~ marks a change within the noise):
  runq ctprof compare runs-before/ runs-after/")]
pub struct CompareArgs {
    /// The earlier snapshot (a file or DIR@first|last|TIME), or a
    /// directory of snapshots whose medians are compared.
    pub baseline: PathBuf,
    /// The later snapshot, or a directory when the baseline is one.
    pub candidate: PathBuf,
    /// Grouping, filters and output.
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Runs `runq ctprof compare`.
pub fn execute(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let opts = args.view.options()?;
    if args.baseline.is_dir() && args.candidate.is_dir() {
        let dirs = [args.baseline.as_path(), args.candidate.as_path()];
        let names = comm_names_over_dirs(&dirs, &opts.grouping).map_err(exit::user_input)?;
        let (sa, la) = samples(&args.baseline, &opts.grouping, names.as_ref())?;
        let (sb, lb) = samples(&args.candidate, &opts.grouping, names.as_ref())?;
        let view = compare_samples(&sa, &sb, (&la, &lb), &opts, names.as_ref());
        print_view(&view, true, &args.view)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (a, b) = (load(&args.baseline)?, load(&args.candidate)?);
    let view = runq_ctprof::compare::compare(&a, &b, &opts);
    print_view(&view, true, &args.view)?;
    Ok(ExitCode::SUCCESS)
}

/// Every snapshot of a directory as one side of a median compare, and the
/// last of them.
fn samples(
    dir: &Path,
    grouping: &Grouping,
    names: Option<&CommNames>,
) -> anyhow::Result<(Samples, CtprofSnapshot)> {
    let mut s = Samples::default();
    let last =
        runq_ctprof::record::delta::for_each_snapshot(dir, |snap| s.add(snap, grouping, names))
            .map_err(exit::user_input)?;
    let last = last.ok_or_else(|| {
        exit::usage(format!(
            "{}: no *.ctprof.zst snapshots; capture some with `runq ctprof capture -o DIR/NAME.ctprof.zst` or record them with `runq ctprof record`",
            dir.display()
        ))
    })?;
    Ok((s, last))
}
