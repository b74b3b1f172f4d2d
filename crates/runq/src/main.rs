//! `runq`: one binary for the scheduler workload engine, per-thread host
//! snapshots, the profiler-overhead benchmark and the Tokio blocking HUD.

mod cmd;
mod exit;
mod junit;
mod outfile;
mod output;
mod style;

use std::process::ExitCode;

use clap::Parser;

/// runq's own crates, whose log lines each -v adds (`-vvv` adds every
/// library's too).
const OWN_CRATES: [&str; 7] = [
    "runq",
    "runq_common",
    "runq_kernel",
    "runq_workload",
    "runq_ctprof",
    "runq_collatz",
    "runq_hud",
];

/// Log lines go to stderr: warnings by default; runq's own info with -v
/// and debug with -vv; with -vvv every library's trace too (aya's BPF
/// loading among them); or as RUST_LOG says.
fn init_logging(verbose: u8) {
    let (own, others) = match verbose {
        0 => (log::LevelFilter::Warn, log::LevelFilter::Warn),
        1 => (log::LevelFilter::Info, log::LevelFilter::Warn),
        2 => (log::LevelFilter::Debug, log::LevelFilter::Warn),
        _ => (log::LevelFilter::Trace, log::LevelFilter::Trace),
    };
    let mut builder = env_logger::Builder::new();
    builder.filter_level(others);
    for module in OWN_CRATES {
        builder.filter_module(module, own);
    }
    builder.parse_env("RUST_LOG").format_timestamp(None).init();
}

/// Parses the command line. Help and version print as clap prints them;
/// a usage error is one line on stderr and exit 2 (see [`usage_line`]).
fn parse_cli() -> Result<cmd::cli::Cli, ExitCode> {
    cmd::cli::Cli::try_parse().map_err(|e| {
        use clap::error::ErrorKind;
        if matches!(
            e.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        ) {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE } else { 0 });
        }
        // Lossy: an argument that is not UTF-8 (a file name) must not
        // panic the usage line that names it.
        let args: Vec<String> = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        runq_common::output::eprint_line(&format!("runq: {} (see --help)", usage_line(&e, &args)));
        exit::Exit::Usage.exit_code()
    })
}

/// clap's error in one line: its first line (the flag, the value and
/// why), the arguments it lists below that line when some are missing,
/// and its tip, or a did-you-mean of our own for a mistyped subcommand.
fn usage_line(e: &clap::Error, args: &[String]) -> String {
    if e.kind() == clap::error::ErrorKind::UnknownArgument {
        if let Some(line) = negative_value_line(args) {
            return line;
        }
    }
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("error: bad command line");
    let mut line = first.trim_start_matches("error: ").to_string();
    let listed: Vec<&str> = lines
        .by_ref()
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument && !listed.is_empty() {
        line = format!("{line} {}", listed.join(", "));
    }
    let tip = text.lines().map(str::trim).find_map(|l| {
        l.strip_prefix("tip: ")
            .or(l.starts_with("[possible").then_some(l))
    });
    match tip {
        Some(t) => format!("{line}; {t}"),
        None if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            match cmd::cli::suggest_subcommand(args) {
                Some(s) => format!("{line}; did you mean '{s}'?"),
                None => line,
            }
        }
        None => line,
    }
}

/// clap takes a negative value (`--workers -3`) for an unknown flag and
/// advises `-- -3`, but no runq flag takes a negative value (collatz's
/// numbers are parsed with negatives allowed and judged there): say what
/// is wrong instead, the flag, the value, and that it is negative.
fn negative_value_line(args: &[String]) -> Option<String> {
    args.windows(2).find_map(|w| {
        let (flag, value) = (&w[0], &w[1]);
        let digits = value.strip_prefix('-')?;
        let negative = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.');
        (negative && flag.starts_with('-') && !flag.contains('=')).then(|| {
            format!("{flag} {value}: the value is negative; see --help for the values it takes")
        })
    })
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    style::set_choice(cli.color);
    if let Err(e) = runq_kernel::clock::fast::check_env() {
        runq_common::output::eprint_line(&format!("runq: {e}"));
        return exit::Exit::Usage.exit_code();
    }
    init_logging(cli.verbose);
    if !matches!(cli.command, cmd::cli::Command::Clean(_)) {
        cmd::clean::sweep_at_start();
    }
    let code = match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => exit::report_error(&err),
    };
    // Output lost to a full disk or a dead terminal (not a reader that
    // left) is an I/O error, exit 3: never 0, and never 1, which CI reads
    // as a FAIL verdict or a regression.
    let verdicts = [0, exit::CHECK_FAILED, exit::INDETERMINATE].map(ExitCode::from);
    // A signal that came after the work ended (while the report was
    // written) still ends runq the one way, 128+N: the report is whole.
    if let Some(sig) = runq_kernel::signal::received_signal() {
        if verdicts.contains(&code) {
            return exit::Exit::Interrupted(sig).exit_code();
        }
    }
    if runq_common::output::stdout_failed() && verdicts.contains(&code) {
        return exit::Exit::RunError.exit_code();
    }
    code
}
