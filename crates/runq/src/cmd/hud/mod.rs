//! `runq hud`: attach to a running Tokio process and report what blocks
//! its worker threads, live (a ratatui screen) or headless.

mod live;
mod output;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use runq_common::duration::parse_duration;
use runq_hud::discovery::find_process;
use runq_hud::health::UnwindChoice;
use runq_hud::session::{self, Options};
use runq_kernel::proc::tasks::has_capability;

use crate::exit;

/// Arguments of `runq hud`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sudo runq hud my-service --headless --duration 10\n  \
    sudo runq hud --pid 4242 --threshold 2ms --headless --duration 5 --output hud.json\n  \
    sudo runq hud --serve my-service --serve other --metrics-addr 0.0.0.0:9464 --window 60s\n\n\
    Needs root, or CAP_BPF + CAP_PERFMON. The export is Chrome trace-event JSON\n\
    (open it in ui.perfetto.dev).")]
pub struct HudArgs {
    /// The target, by name (its comm or executable name).
    #[arg(
        value_name = "PROCESS",
        required_unless_present_any = ["pid", "replay", "serve"],
        conflicts_with = "pid"
    )]
    pub process: Option<String>,
    /// Continuous mode: run as a service watching every process named
    /// NAME (repeatable; by comm or executable name), attaching each new
    /// one as it appears (a restarted target too), until SIGINT/SIGTERM.
    /// Memory stays bounded: every --window the findings become counters
    /// and are let go. Exports per target and blocker (category, culprit
    /// function): findings, seconds and the window's longest finding.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["process", "pid", "replay", "headless", "json", "export", "export_folded", "flamegraph", "duration"])]
    pub serve: Vec<String>,
    /// With --serve: serve the figures at http://HOST:PORT/metrics
    /// (OpenMetrics when the scraper asks for it, as Prometheus does; else
    /// Prometheus text).
    #[arg(long, value_name = "HOST:PORT", requires = "serve")]
    pub metrics_addr: Option<String>,
    /// With --serve: write the figures to FILE (Prometheus text, for
    /// node_exporter's textfile collector) after every window, by an
    /// atomic rename.
    #[arg(long, value_name = "FILE.prom", requires = "serve")]
    pub metrics_file: Option<PathBuf>,
    /// The target, by pid.
    #[arg(long)]
    pub pid: Option<u32>,
    /// The target's debug info: the file `objcopy --only-keep-debug` made,
    /// or an unstripped copy of its binary (`--target`, the old spelling,
    /// is still accepted). Without it hud looks where gdb does: the
    /// build-id path under /usr/lib/debug/.build-id/ and the binary's
    /// .gnu_debuglink.
    #[arg(long = "debug-file", alias = "target", value_name = "BINARY")]
    pub target: Option<PathBuf>,
    /// A crate of the program's own code, besides the crate of its `main`
    /// (repeatable): culprits are the innermost frames of these crates,
    /// not the libraries they call.
    #[arg(long = "app-crate", value_name = "NAME")]
    pub app_crates: Vec<String>,
    /// Time every poll of the target's tasks with uprobes on Tokio's task
    /// poll (`tokio::runtime::task::raw::poll`), and report each poll that
    /// ran on CPU longer than the threshold with its real length. Costs
    /// about two uprobe hits per poll; needs the target's symbol table.
    #[arg(long)]
    pub exact_polls: bool,
    /// Do not tag findings with the Tokio task they ran in. By default the
    /// probes read each worker's current task id from its thread-local
    /// storage (optimized builds; no probe on the poll path), or a uprobe
    /// on Tokio's `tokio::runtime::context::set_current_task_id` keeps it
    /// (two hits per poll), and the report names the top tasks of each
    /// blocker.
    #[arg(long)]
    pub no_task_ids: bool,
    /// Report blocking longer than this.
    #[arg(long, default_value = "5ms", value_parser = parse_threshold)]
    pub threshold: Duration,
    /// cpu-clock sampling frequency, Hz.
    #[arg(long, default_value_t = 99, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub frequency: u64,
    /// Print a report at the end instead of the live view.
    #[arg(long)]
    pub headless: bool,
    /// How much history the live view keeps; with --serve, how often the
    /// findings are turned into counters (and the textfile rewritten).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub window: Duration,
    /// Write a flame graph (SVG) of the findings, weighted by their time
    /// (µs), under a root frame per kind: blocked, on CPU (sampled),
    /// waiting for a CPU, in block_in_place.
    #[arg(long, value_name = "FILE.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Stop after this long (default: until Ctrl-C or the target exits).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Write the session as Chrome trace-event JSON (`--export` is the
    /// old spelling).
    #[arg(long = "output", alias = "export", value_name = "FILE.json")]
    pub export: Option<PathBuf>,
    /// Write folded stacks of the findings, weighted by their time (µs),
    /// under a root frame per kind (as --flamegraph), for flamegraph.pl or
    /// inferno.
    #[arg(long = "output-folded", alias = "export-folded", value_name = "FILE")]
    pub export_folded: Option<PathBuf>,
    /// Show the report saved in an `--output` file instead of attaching.
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["process", "pid"])]
    pub replay: Option<PathBuf>,
    /// Worker threads are those whose name starts with this.
    #[arg(
        long = "workers",
        visible_alias = "worker-prefix",
        value_name = "PREFIX"
    )]
    pub worker_prefix: Option<String>,
    /// How to get user stacks: frame pointers (fp), copied stacks unwound
    /// with DWARF CFI (dwarf), or by what the executable keeps (auto).
    #[arg(long, value_enum, default_value_t = UnwindArg::Auto)]
    pub(crate) unwind: UnwindArg,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--unwind` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum UnwindArg {
    /// Frame pointers when the executable keeps them, else DWARF.
    Auto,
    /// The kernel's frame-pointer walk.
    Fp,
    /// Copied stacks unwound with the objects' DWARF CFI (.eh_frame).
    Dwarf,
}

impl From<UnwindArg> for UnwindChoice {
    fn from(a: UnwindArg) -> Self {
        match a {
            UnwindArg::Auto => UnwindChoice::Auto,
            UnwindArg::Fp => UnwindChoice::FramePointers,
            UnwindArg::Dwarf => UnwindChoice::Dwarf,
        }
    }
}

fn parse_threshold(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s).map_err(|e| e.to_string())?;
    if d < Duration::from_micros(100) {
        return Err("the threshold must be at least 100µs".into());
    }
    Ok(d)
}

/// Root, or CAP_BPF (39) and CAP_PERFMON (38) in the effective set.
fn privileged() -> bool {
    // SAFETY: no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root || (has_capability(39) && has_capability(38))
}

/// Resolves the target pid from PROCESS or --pid.
fn target_pid(args: &HudArgs, proc_root: &std::path::Path) -> anyhow::Result<u32> {
    let pid = match (&args.process, args.pid) {
        (_, Some(pid)) => pid,
        (Some(name), None) => find_process(proc_root, name)?,
        (None, None) => return Err(exit::usage("name a PROCESS or pass --pid")),
    };
    if !proc_root.join(pid.to_string()).exists() {
        return Err(exit::usage(format!("no process with pid {pid}")));
    }
    check_attachable(proc_root, pid)?;
    Ok(pid)
}

/// Refuses a target hud cannot watch, saying what it is: a zombie (it has
/// exited) or a kernel thread (no user space, no Tokio).
fn check_attachable(proc_root: &std::path::Path, pid: u32) -> anyhow::Result<()> {
    let dir = proc_root.join(pid.to_string());
    let Some(stat) = std::fs::read(dir.join("stat"))
        .ok()
        .and_then(|t| runq_kernel::proc::stat::parse_stat(&t))
    else {
        return Err(exit::run_error(format!(
            "pid {pid} exited before hud could attach; start hud while it runs"
        )));
    };
    let comm = stat.comm.escape_debug().to_string();
    if stat.state == 'Z' || stat.state == 'X' {
        return Err(exit::usage(format!(
            "pid {pid} ({comm}) is a zombie: it has exited and waits for its parent to \
             reap it; there is nothing to watch"
        )));
    }
    let kernel_thread = pid == 2 || stat.ppid == 2;
    if kernel_thread && std::fs::read_link(dir.join("exe")).is_err() {
        return Err(exit::usage(format!(
            "pid {pid} ({comm}) is a kernel thread; hud watches a user-space Tokio process"
        )));
    }
    Ok(())
}

/// How a session runs, from the arguments (`pid` is the target's; 0
/// until continuous mode gives each process its own).
fn session_options(args: &HudArgs, pid: u32, proc_root: PathBuf) -> Options {
    Options {
        pid,
        threshold_ns: args.threshold.as_nanos() as u64,
        frequency: args.frequency,
        duration: args.duration,
        worker_prefix: args.worker_prefix.clone(),
        proc_root,
        target_binary: args.target.clone(),
        unwind: args.unwind.into(),
        app_crates: args.app_crates.clone(),
        exact_polls: args.exact_polls,
        task_ids: !args.no_task_ids,
        rotate: None,
    }
}

/// Runs `runq hud`.
pub fn execute(args: HudArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.replay {
        return if args.headless {
            output::replay_report(path, args.json)
        } else {
            live::replay_screen(path, &args)
        };
    }
    crate::outfile::check_outputs(&[
        ("--output", args.export.as_deref()),
        ("--output-folded", args.export_folded.as_deref()),
        ("--flamegraph", args.flamegraph.as_deref()),
    ])?;
    if let Some(binary) = &args.target {
        let what = match std::fs::metadata(binary) {
            Ok(m) if m.is_file() => None,
            Ok(m) if m.is_dir() => Some("is a directory"),
            Ok(_) => Some("is not a regular file (a device, a FIFO or a socket)"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("no such file"),
            Err(_) => Some("cannot be read"),
        };
        if let Some(what) = what {
            return Err(exit::usage(format!(
                "--debug-file {}: {what}; pass the target's debug file or an unstripped copy of its executable",
                binary.display()
            )));
        }
    }
    let proc_root = PathBuf::from("/proc");
    if !args.serve.is_empty() {
        return serve::execute(&args, session_options(&args, 0, proc_root));
    }
    let pid = target_pid(&args, &proc_root)?;
    if !privileged() {
        return Err(exit::no_privilege(
            "runq hud needs root, or CAP_BPF and CAP_PERFMON, to load its BPF programs",
        ));
    }
    let opts = session_options(&args, pid, proc_root);
    let stop = runq_kernel::signal::install().context("installing signal handlers")?;
    let session = if args.headless {
        session::run(&opts, stop, |_| {})?
    } else {
        live::live_screen(opts, &args, stop)?
    };
    if session.report.target_exited && session.report.workers.is_empty() {
        return Err(exit::run_error(format!(
            "pid {pid} exited before hud found its worker threads; nothing was observed"
        )));
    }
    // The report first: an --output that cannot be written (a full disk)
    // must not take the session's findings with it.
    output::print_report(&session, args.json)?;
    output::write_exports(&args, &session)?;
    // The probes detach only now, after the report is out, and as the
    // process exits: their teardown does not hold up its exit.
    session.probes.detach_after_exit();
    Ok(match runq_kernel::signal::received_signal() {
        Some(sig) => exit::Exit::Interrupted(sig).exit_code(),
        None => ExitCode::SUCCESS,
    })
}
