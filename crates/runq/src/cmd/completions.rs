//! `runq completions SHELL`: shell completion scripts.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::cli::Cli;

/// Arguments of `runq completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to generate for.
    pub shell: Shell,
}

/// Writes the completion script to stdout.
pub fn execute(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "runq", &mut script);
    let mut out = runq_common::output::Stdout::new();
    out.write_all(&script).and_then(|()| out.flush())?;
    Ok(ExitCode::SUCCESS)
}
