//! `runq man [COMMAND]`: the man page, generated from the same clap
//! definition as `--help`.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::exit;

/// Arguments of `runq man`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  runq man | man -l -\n  runq man hud > runq-hud.1")]
pub struct ManArgs {
    /// A command (run, ctprof, collatz, hud, ...); runq's own page without.
    pub command: Option<String>,
}

/// Writes the roff page to stdout; a closed pipe ends it quietly.
pub fn execute(args: ManArgs) -> anyhow::Result<ExitCode> {
    let root = Cli::command();
    let page = match &args.command {
        None => root,
        Some(name) => {
            let Some(sub) = root.find_subcommand(name) else {
                let names: Vec<&str> = root.get_subcommands().map(|c| c.get_name()).collect();
                return Err(exit::usage(format!(
                    "no command {name:?}: pick one of {}",
                    names.join(", ")
                )));
            };
            let full: &'static str = Box::leak(format!("runq-{name}").into_boxed_str());
            sub.clone().name(full).bin_name(full)
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff)?;
    match std::io::stdout().lock().write_all(&roff) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        other => other.map(|()| ExitCode::SUCCESS).map_err(Into::into),
    }
}
