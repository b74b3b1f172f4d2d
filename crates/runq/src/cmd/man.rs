//! `runq man [COMMAND...]`: the man page of runq or of any of its commands,
//! nested ones included (`runq man ctprof compare`), generated from the
//! same clap definition as `--help`.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use super::cli::Cli;
use crate::exit;

/// Arguments of `runq man`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  runq man | man -l -\n  runq man hud > runq-hud.1\n  runq man ctprof compare | man -l -"
)]
pub struct ManArgs {
    /// A command path (run, hud, ctprof compare, collatz sweep, ...);
    /// runq's own page without.
    pub command: Vec<String>,
}

/// Writes the roff page to stdout; a closed pipe ends it quietly.
pub fn execute(args: ManArgs) -> anyhow::Result<ExitCode> {
    let page = page_for(&args.command)?;
    let mut roff = Vec::new();
    render(page, &mut roff)?;
    let mut out = runq_common::output::Stdout::new();
    out.write_all(&roff).and_then(|()| out.flush())?;
    Ok(ExitCode::SUCCESS)
}

/// The command at `path` below runq, named for its page (`runq-ctprof-
/// compare`) and carrying runq's version.
fn page_for(path: &[String]) -> anyhow::Result<clap::Command> {
    let mut cmd = Cli::command();
    for (depth, name) in path.iter().enumerate() {
        let Some(sub) = cmd.find_subcommand(name).cloned() else {
            let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            let parent = std::iter::once("runq")
                .chain(path[..depth].iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            return Err(exit::usage(if names.is_empty() {
                format!("no command {name:?}: `{parent}` has no subcommands")
            } else {
                format!(
                    "no command {name:?} in `{parent}`: pick one of {}",
                    names.join(", ")
                )
            }));
        };
        cmd = sub;
    }
    if path.is_empty() {
        return Ok(cmd);
    }
    let full: &'static str = Box::leak(format!("runq-{}", path.join("-")).into_boxed_str());
    Ok(cmd
        .name(full)
        .bin_name(full)
        .version(env!("CARGO_PKG_VERSION")))
}

/// Renders a page: clap_mangen's sections, with the help's examples (its
/// `after_help`) under EXAMPLES, set without filling so that a command is
/// never broken across lines.
fn render(cmd: clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    let examples = cmd.get_after_help().map(|h| h.to_string());
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    if let Some(text) = examples {
        write_examples(&text, out)?;
    }
    write_exit_status(out)?;
    man.render_version_section(out)
}

/// The EXIT STATUS section: the table `--help` ends with, one tagged
/// paragraph a code.
fn write_exit_status(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for line in exit::EXIT_CODES_HELP.lines().skip(1) {
        let (code, what) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        writeln!(out, ".TP\n{code}\n{}", what.trim())?;
    }
    Ok(())
}

/// The EXAMPLES section: `text` without its "Examples:" heading, verbatim.
fn write_examples(text: &str, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, ".SH EXAMPLES\n.nf")?;
    for line in text
        .lines()
        .filter(|l| !l.trim_end().ends_with(':') || l.starts_with(' '))
    {
        // roff: a leading dot or quote would be a request; backslashes escape.
        let line = line.replace('\\', "\\e");
        let line = if line.starts_with(['.', '\'']) {
            format!("\\&{line}")
        } else {
            line
        };
        writeln!(out, "{line}")?;
    }
    writeln!(out, ".fi")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command path below runq, depth first.
    fn paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = prefix.clone();
            p.push(sub.get_name().to_string());
            paths(sub, p.clone(), out);
            out.push(p);
        }
    }

    #[test]
    fn every_command_has_a_page_with_a_version_and_real_sections() {
        let mut all = Vec::new();
        paths(&Cli::command(), Vec::new(), &mut all);
        assert!(all.iter().any(|p| p == &["ctprof", "compare"]), "{all:?}");
        for path in all {
            let mut roff = Vec::new();
            render(page_for(&path).unwrap(), &mut roff).unwrap();
            let page = String::from_utf8(roff).unwrap();
            let name = format!("runq-{}", path.join("-"));
            assert!(page.contains(&format!(".TH {name} 1")), "{name}");
            assert!(
                page.contains(env!("CARGO_PKG_VERSION")),
                "{name}: no version"
            );
            assert!(!page.contains("EXTRA"), "{name}: an EXTRA section");
            assert!(
                page.contains(".SH \"EXIT STATUS\"\n.TP\n0\n"),
                "{name}: no exit codes"
            );
            assert!(page.contains("128+N\nended by signal N"), "{name}");
        }
    }

    /// Examples are printed as written (clap would wrap a longer line in
    /// the middle of a command, and copy-paste would break).
    #[test]
    fn help_examples_fit_100_columns() {
        let mut all = vec![Vec::new()];
        paths(&Cli::command(), Vec::new(), &mut all);
        let mut long = Vec::new();
        for path in all {
            let mut cmd = Cli::command();
            for name in &path {
                cmd = cmd.find_subcommand(name).unwrap().clone();
            }
            let text = cmd
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            for line in text.lines().filter(|l| l.chars().count() > 100) {
                long.push(format!("runq {}: {line}", path.join(" ")));
            }
        }
        assert!(long.is_empty(), "{long:#?}");
    }
}
