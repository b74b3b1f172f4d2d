//! The command tree's root (clap derive): runq's global flags and its
//! tools. Each tool's arguments live with its command module beside this
//! one.

use clap::{Parser, Subcommand};

use super as cmd;

/// runq: a Linux scheduler and profiler workbench.
///
/// Drive scheduler scenarios with forked workers in cgroups (`run`),
/// snapshot and compare per-thread kernel counters (`ctprof`), measure what
/// a profiler costs the program it profiles (`collatz`), and find what
/// blocks a Tokio runtime's worker threads (`hud`).
#[derive(Debug, Parser)]
#[command(
    name = "runq",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_long_help = crate::exit::EXIT_CODES_HELP
)]
pub struct Cli {
    /// More log lines on stderr (`runq -v CMD`: -v runq's info, -vv its debug,
    /// -vvv every library's trace); RUST_LOG filters them as in other Rust
    /// tools (e.g. RUST_LOG=aya=debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// When to colour output: auto (a terminal without NO_COLOR), always,
    /// never.
    #[arg(long, value_enum, default_value_t, global = true, value_name = "WHEN")]
    pub color: crate::style::ColorChoice,
    /// The tool to run.
    #[command(subcommand)]
    pub command: Command,
}

/// runq's tools.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scheduler scenario: forked workers in cgroups, telemetry, report.
    ///
    /// With no scenario, runs the built-in default (CPU spinners beside pipe
    /// ping-pong pairs, in two cgroups, for 3 s) and prints a per-group
    /// summary. Needs root for cgroups; without it the default scenario runs
    /// its workers unplaced and says so.
    Run(Box<cmd::run::RunArgs>),
    /// Compare two saved runs (`runq run --repeat N --output FILE.json`):
    /// per group and figure, medians, the difference, a 95% rank-test
    /// interval and a verdict; exits 1 when something regressed.
    Compare(cmd::compare::CompareArgs),
    /// Per-thread host snapshots: capture scheduling, memory, I/O and
    /// delay-accounting counters of every thread into a `.ctprof.zst` file.
    Ctprof(cmd::ctprof::CtprofArgs),
    /// Measure what a profiler costs: a 1000-function call graph walked by
    /// N processes, timed with the time stamp counter.
    ///
    /// `runq collatz [CPUS] [OUTER] [INNER] [TARGET]` keeps the original
    /// collatz program's interface and CSV line; `runq collatz sweep` runs
    /// the whole study with and without a profiler attached.
    Collatz(cmd::collatz::CollatzArgs),
    /// Attach to a running Tokio process with eBPF and report what blocks
    /// its worker threads: blocking calls, task code's CPU time (sampled),
    /// run-queue delay and what held the CPU.
    Hud(cmd::hud::HudArgs),
    /// Work on saved documents: `merge` joins the shards of a
    /// `runq run --vm-matrix --shard K/N` gauntlet into one verdict.
    Report(cmd::report::ReportArgs),
    /// What `runq run --vm` boots: `kernel build` builds a kernel for
    /// scheduler testing (sched_ext on with --sched-ext, and the tree's
    /// schedulers) once, and finds it in its cache after that.
    Vm(cmd::vm::VmArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::CompletionsArgs),
    /// Print the man page (roff) of runq or of one of its commands.
    Man(cmd::man::ManArgs),
    /// List and remove what a killed runq left on the host: tracefs
    /// instances (which may still be recording) and run cgroups whose
    /// runq is gone. Every runq run as root also sweeps them at its start.
    Clean(cmd::clean::CleanArgs),
}

/// A did-you-mean for a mistyped subcommand in `args` (the arguments after
/// the program name): the subcommand path is followed as far as it is
/// valid, and the first unknown word is compared with that level's
/// subcommands.
pub fn suggest_subcommand(args: &[String]) -> Option<String> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    for word in args.iter().filter(|a| !a.starts_with('-')) {
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        if names.is_empty() {
            return None;
        }
        match cmd.find_subcommand(word) {
            Some(sub) => cmd = sub.clone(),
            None => {
                let near = runq_common::closest(word, names.iter().map(String::as_str), 2);
                return near.map(str::to_string);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// The renamed flags' old spellings still parse (hidden), for one
    /// release.
    #[test]
    fn old_spellings_of_renamed_flags_still_parse() {
        use clap::Parser;
        for args in [
            &["runq", "compare", "a.json", "b.json", "--threshold", "3"][..],
            &["runq", "collatz", "sweep", "--repeats", "2"],
            &["runq", "hud", "--pid", "1", "--target", "/bin/true"],
            &[
                "runq",
                "ctprof",
                "capture",
                "-o",
                "x.ctprof.zst",
                "--workers",
                "2",
            ],
        ] {
            super::Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
    }

    /// One vocabulary: -v is verbose at every level, -V the version, -o the
    /// output file.
    #[test]
    fn the_shared_flags_parse_everywhere() {
        use clap::Parser;
        for args in [
            &[
                "runq",
                "ctprof",
                "capture",
                "-v",
                "-o",
                "x.ctprof.zst",
                "-j",
                "2",
            ][..],
            &["runq", "run", "-o", "x.json", "-vv"],
            &["runq", "collatz", "-V"],
            &["runq", "-V"],
        ] {
            match super::Cli::try_parse_from(args) {
                Ok(_) => {}
                Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {}
                Err(e) => panic!("{args:?}: {e}"),
            }
        }
    }

    #[test]
    fn old_spellings_of_output_still_parse() {
        use clap::Parser;
        for args in [
            &["runq", "hud", "--replay", "r.json", "--export", "f.json"][..],
            &[
                "runq",
                "hud",
                "--replay",
                "r.json",
                "--export-folded",
                "f.txt",
            ][..],
            &["runq", "collatz", "sweep", "--out", "dir"][..],
        ] {
            let parsed = super::Cli::try_parse_from(args);
            assert!(parsed.is_ok(), "{args:?}: {:?}", parsed.err());
        }
    }
}
