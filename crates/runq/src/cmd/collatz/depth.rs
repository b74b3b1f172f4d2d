//! `runq collatz search` (start values with deep chains) and `runq collatz
//! depth-report` (how deep a profiler's recorded stacks reach).

use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Context;
use clap::Args;
use runq_collatz::config::parse_target;
use runq_collatz::search::{chain_stats, extend_backward};
use runq_collatz::stacks::{read_hud_export, read_perf_script, DepthDocument, DepthReport};
use runq_collatz::Target;

use crate::exit;

/// Arguments of `runq collatz search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Chain depth wanted, in calls.
    pub depth: u64,
    /// Search back from this start value (its chain must be shallower
    /// than DEPTH and fit in 64 bits), e.g. the record 942488749153153
    /// (1862 calls).
    #[arg(long, default_value_t = 2)]
    pub from: u64,
    /// Values kept per level of the backward search.
    #[arg(long, default_value_t = 1000)]
    pub beam: usize,
}

/// Runs `runq collatz search`.
pub fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let from = chain_stats(args.from);
    if from.overflows || from.calls >= args.depth || args.beam == 0 {
        return Err(exit::usage(format!(
            "--from {} has a chain of {} calls{}: give a start value whose chain is shallower than {} and fits in 64 bits, and --beam of at least 1",
            args.from,
            from.calls,
            if from.overflows { " that overflows 64 bits" } else { "" },
            args.depth
        )));
    }
    let Some(value) = extend_backward(args.from, args.depth, args.beam) else {
        crate::errln!(
            "runq: no start value {} calls deep found back from {} with --beam {}: every path left 64 bits; start from a deeper --from (e.g. 942488749153153) or widen --beam",
            args.depth, args.from, args.beam
        );
        return Ok(exit::Exit::CheckFailed.exit_code());
    };
    let s = chain_stats(value);
    crate::outln!(
        "{value}: {} calls, peak {} (fits in 64 bits), first function f{:03}",
        s.calls,
        s.peak,
        value % 1000
    );
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `runq collatz depth-report`.
#[derive(Debug, Args)]
pub struct DepthReportArgs {
    /// `perf script` output, a perf.data file (then `perf script` is run
    /// on it), or a `runq hud --output` JSON file; `-` reads perf script
    /// output from standard input.
    pub input: PathBuf,
    /// The target the profiled run used (a number or A to J), to compare
    /// the stacks with its chain's depth.
    #[arg(long)]
    pub target: Option<String>,
    /// For a perf.data input: passed to `perf script --max-stack` (perf's
    /// default is kernel.perf_event_max_stack, usually 127).
    #[arg(long, value_name = "N")]
    pub max_stack: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `runq collatz depth-report`.
pub fn depth_report(args: DepthReportArgs) -> anyhow::Result<ExitCode> {
    let depth = match args.target.as_deref().map(parse_target).transpose() {
        Ok(Some(Target::Value(v))) => Some(chain_stats(v).calls),
        Ok(_) => None,
        Err(e) => return Err(exit::usage(format!("--target: {e}"))),
    };
    let report = read_input(&args)?;
    if args.json {
        let doc = DepthDocument::new(&report, depth);
        crate::outln!("{}", runq_common::json::to_pretty(&doc)?);
    } else {
        print_report(&report, depth);
    }
    Ok(ExitCode::SUCCESS)
}

fn read_input(args: &DepthReportArgs) -> anyhow::Result<DepthReport> {
    let name = args.input.display().to_string();
    let report = if name == "-" {
        read_perf_script(perf_text(std::io::stdin())).map_err(|e| not_perf_script(&name, e))?
    } else {
        read_file(args, &name)?
    };
    if report.samples == 0 {
        return Err(exit::usage(format!(
            "{name} holds no stacks: give perf script output, a perf.data file or a runq hud --output file"
        )));
    }
    Ok(report)
}

/// The largest hud export read whole (perf script text is streamed).
const MAX_EXPORT_BYTES: u64 = 512 << 20;

/// The longest perf script line read (a header or a frame: address,
/// symbol, DSO; a few hundred bytes).
const MAX_LINE: u64 = 1 << 20;

/// The most frames one perf script sample may have: more than any
/// callchain perf records (`kernel.perf_event_max_stack` is at most
/// 655,360).
const MAX_FRAMES: u64 = 1 << 20;

/// perf script text, streamed from a file, a pipe or standard input with
/// what the reader holds at once bounded ([`MAX_LINE`], [`MAX_FRAMES`]):
/// a stream of any length is read, a line or a sample that never ends is
/// an error.
fn perf_text<R: Read>(input: R) -> BufReader<runq_common::infile::LineCapped<R>> {
    BufReader::new(runq_common::infile::LineCapped::new(input, MAX_LINE).indented_run(MAX_FRAMES))
}

/// Reads a named input: a regular file (a FIFO, a device or a directory
/// is refused) holding JSON, perf.data or perf script text.
fn read_file(args: &DepthReportArgs, name: &str) -> anyhow::Result<DepthReport> {
    let mut file = runq_common::infile::open_regular(&args.input)?;
    let mut magic = [0u8; 8];
    let is_perf_data = file.read_exact(&mut magic).is_ok() && &magic == b"PERFILE2";
    if magic.starts_with(b"{") {
        let bytes = runq_common::infile::read_bytes(&args.input, MAX_EXPORT_BYTES, "a hud export")?;
        let doc: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| exit::usage(format!("{name} is not JSON ({e}): give perf script output, a perf.data file or a runq hud --output file")))?;
        return read_hud_export(&doc).ok_or_else(|| {
            exit::usage(format!(
                "{name} has no traceEvents: give a runq hud --output file"
            ))
        });
    }
    if !is_perf_data {
        let text = perf_text(runq_common::infile::open_regular(&args.input)?);
        return read_perf_script(text).map_err(|e| not_perf_script(name, e));
    }
    read_perf_data(args, name)
}

/// A perf script reader's error as a usage error naming the input.
fn not_perf_script(name: &str, e: std::io::Error) -> anyhow::Error {
    exit::usage(format!(
        "{name} is not perf script output ({e}): give perf script output, a perf.data file or a runq hud --output file"
    ))
}

/// Runs `perf script` on a perf.data file and reads its stacks.
fn read_perf_data(args: &DepthReportArgs, name: &str) -> anyhow::Result<DepthReport> {
    let mut cmd = Command::new("perf");
    cmd.args(["script", "-F", "comm,tid,ip,sym", "-i"])
        .arg(&args.input);
    if let Some(n) = args.max_stack {
        cmd.args(["--max-stack", &n.to_string()]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| exit::usage(format!("cannot run perf script on {name} ({e}): install perf, or pipe perf script's output into `runq collatz depth-report -`")))?;
    let out = child.stdout.take().context("perf script's output")?;
    let report = read_perf_script(perf_text(out));
    let status = child.wait()?;
    if !status.success() {
        anyhow::bail!("perf script -i {name} failed ({status})");
    }
    Ok(report?)
}

fn print_report(r: &DepthReport, chain: Option<u64>) {
    crate::outln!(
        "{} stacks, {} in the call graph",
        r.samples,
        r.graph_samples
    );
    crate::outln!(
        "deepest stack: {} frames ({} stacks that deep); graph frames per stack: deepest {}, median {}",
        r.deepest_frames,
        r.samples_at_deepest,
        r.deepest_graph_frames,
        r.median_graph_frames()
    );
    crate::outln!(
        "stacks ending inside the graph (never reached main): {} of {}",
        r.cut_in_graph,
        r.graph_samples
    );
    if let Some(calls) = chain {
        // A sample in a function's prologue, before it saves the frame
        // pointer, shows one frame less: within one frame is full depth.
        let verdict = if r.deepest_graph_frames as u64 + 1 < calls {
            "cut: the profiler's stacks stop short of the chain"
        } else {
            "the stacks reach the bottom of the chain"
        };
        crate::outln!("the target's chain is {calls} calls deep: {verdict}");
    }
}
