//! `runq report`: work on documents other runq commands wrote. Today one
//! action, `merge`, which joins the shards of a `runq run --vm-matrix
//! --shard K/N` gauntlet into one table, verdict, document and JUnit.
//!
//! A command of its own rather than a mode of `runq compare`: compare
//! judges a candidate against a baseline (two saved runs, a regression
//! verdict), while merge joins parts of one whole and judges the whole;
//! their inputs, checks and exit codes differ.

mod merge;

pub(crate) use merge::read_rows;

use std::process::ExitCode;

/// Arguments of `runq report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The report action.
    #[command(subcommand)]
    pub command: ReportCommand,
}

/// report's actions.
#[derive(Debug, clap::Subcommand)]
pub enum ReportCommand {
    /// Join the shards of a `runq run --vm-matrix --shard K/N` gauntlet
    /// (their `--json` output or `--output` files) into one table and one
    /// verdict; checks they are shards of one matrix, each given once,
    /// and names the shards that are missing.
    Merge(merge::MergeArgs),
}

/// Runs the chosen action.
pub fn execute(args: ReportArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ReportCommand::Merge(a) => merge::execute(a),
    }
}
