//! One module per subcommand; [`dispatch`] routes to them.

pub mod clean;
pub mod cli;
pub mod collatz;
pub mod compare;
pub mod completions;
pub mod ctprof;
pub mod hud;
pub mod man;
pub mod report;
pub mod run;
pub mod vm;

use std::process::ExitCode;

use cli::{Cli, Command};

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => {
            let json = args.json;
            run::execute(*args).inspect_err(|e| {
                if json {
                    let doc = run::error_doc::RunErrorDocument::of(e);
                    if let Ok(text) = runq_common::json::to_pretty(&doc) {
                        crate::outln!("{text}");
                    }
                }
            })
        }
        Command::Compare(args) => compare::execute(args),
        Command::Ctprof(args) => ctprof::execute(args),
        Command::Collatz(args) => collatz::execute(args),
        Command::Hud(args) => hud::execute(args),
        Command::Report(args) => report::execute(args),
        Command::Vm(args) => vm::execute(args),
        Command::Completions(args) => completions::execute(args),
        Command::Man(args) => man::execute(args),
        Command::Clean(args) => clean::execute(args),
    }
}
