//! `runq clean`: lists and removes what a runq killed before it could clean
//! up left on the host (tracefs instances, run cgroups), and the sweep every
//! runq run as root makes of the same at its start.

use std::process::ExitCode;

use runq_kernel::leftovers::{self, Leftover};

use crate::exit;

/// Arguments of `runq clean`.
#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// List what was left, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The document `runq clean --json` prints.
#[derive(Debug, serde::Serialize)]
struct CleanDocument<'a> {
    dry_run: bool,
    leftovers: Vec<CleanedLeftover<'a>>,
}

#[derive(Debug, serde::Serialize)]
struct CleanedLeftover<'a> {
    #[serde(flatten)]
    leftover: &'a Leftover,
    removed: bool,
}

impl runq_common::json::JsonDocument for CleanDocument<'_> {
    const TOOL: &'static str = "runq clean";
    const SCHEMA_VERSION: u32 = 1;
}

/// Runs `runq clean`.
pub fn execute(args: CleanArgs) -> anyhow::Result<ExitCode> {
    if !args.dry_run && !is_root() {
        return Err(exit::no_privilege(
            "runq clean removes tracefs instances and cgroups, which needs root; \
             --dry-run lists them without it",
        ));
    }
    let found = leftovers::find_on_host();
    let removed: Vec<bool> = found
        .iter()
        .map(|l| !args.dry_run && leftovers::remove(l))
        .collect();
    if args.json {
        let doc = CleanDocument {
            dry_run: args.dry_run,
            leftovers: found
                .iter()
                .zip(&removed)
                .map(|(leftover, &removed)| CleanedLeftover { leftover, removed })
                .collect(),
        };
        crate::outln!("{}", runq_common::json::to_pretty(&doc)?);
    } else if found.is_empty() {
        crate::outln!("nothing left behind by runq");
    }
    for (l, &gone) in found.iter().zip(&removed).filter(|_| !args.json) {
        crate::outln!("{}", line(l, args.dry_run, gone));
    }
    if removed.iter().zip(&found).any(|(&gone, _)| !gone) && !args.dry_run {
        return Err(exit::run_error(
            "some of it could not be removed (see above); is a process still using it?",
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// One leftover, as `runq clean` and the start-up sweep name it.
fn line(l: &Leftover, dry_run: bool, gone: bool) -> String {
    let what = format!(
        "{} {} of runq pid {} (gone){}",
        l.kind.describe(),
        l.path.display(),
        l.owner,
        if l.tracing { ", still recording" } else { "" }
    );
    match (dry_run, gone) {
        (true, _) => format!("left: {what}"),
        (false, true) => format!("removed: {what}"),
        (false, false) => format!("not removed: {what}"),
    }
}

/// Removes what dead runq processes left, at the start of a command run as
/// root; each is named in the log (`-v`).
pub fn sweep_at_start() {
    if !is_root() {
        return;
    }
    for l in leftovers::find_on_host() {
        let gone = leftovers::remove(&l);
        log::info!("start-up sweep: {}", line(&l, false, gone));
    }
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}
