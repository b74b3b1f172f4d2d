//! `runq vm`: what `runq run --vm` boots. `kernel build` builds (or
//! finds in its cache) a kernel for scheduler testing and prints its image
//! and schedulers (runq-vm's `kernel` module); `scheduler build` builds
//! (or finds) an scx scheduler from crates.io (runq-vm's `scx`);
//! `presets` lists the named topologies of `--topology` (runq-vm's
//! `presets`).

use std::path::PathBuf;
use std::process::ExitCode;

use runq_vm::kernel::{self, BuildRequest, Source};

/// Arguments of `runq vm`.
#[derive(Debug, clap::Args)]
pub struct VmArgs {
    /// The action.
    #[command(subcommand)]
    pub command: VmCommand,
}

/// vm's actions.
#[derive(Debug, clap::Subcommand)]
pub enum VmCommand {
    /// Kernels for the VM.
    Kernel(KernelArgs),
    /// sched_ext schedulers from crates.io for --scheduler.
    Scheduler(SchedulerArgs),
    /// List the named topology presets of --topology (`--topology
    /// gauntlet` runs them all): name, vCPUs, NUMA nodes, LLCs, threads
    /// per core, and the counts spelling
    Presets(PresetsArgs),
}

/// Arguments of `runq vm presets`.
#[derive(Debug, clap::Args)]
pub struct PresetsArgs {
    /// Print the presets as a JSON document
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `runq vm scheduler`.
#[derive(Debug, clap::Args)]
pub struct SchedulerArgs {
    /// The action.
    #[command(subcommand)]
    pub command: SchedulerCommand,
}

/// scheduler's actions.
#[derive(Debug, clap::Subcommand)]
pub enum SchedulerCommand {
    /// Build an scx scheduler from crates.io (`cargo install --root`
    /// into $RUNQ_SCX_CACHE, default ~/.cache/runq/scx), or find it
    /// built, and print its path for --scheduler
    #[command(after_help = "\
Cost: scx_bpfland took 7 minutes of a 2-CPU host; a cached one returns
at once. Needs cargo, clang (LIBCLANG_PATH is set to the newest
/usr/lib/llvm-N/lib when unset), libelf-dev, zlib1g-dev and crates.io.
The scheduler needs a sched_ext kernel (runq vm kernel build --sched-ext).

Example:
  runq run --vm --kernel ~/.cache/runq/kernels/linux-6.12.117-1_deb12u1-d2d856db1b69775e \\
      --scheduler \"$(runq vm scheduler build scx_bpfland --path)\"")]
    Build(SchedulerBuildArgs),
}

/// Arguments of `runq vm scheduler build`.
#[derive(Debug, clap::Args)]
pub struct SchedulerBuildArgs {
    /// The scheduler's crate, e.g. scx_bpfland, scx_lavd, scx_rusty
    pub name: String,
    /// The crate version [default: the one cached, else the newest]
    #[arg(long, value_name = "VERSION")]
    pub crate_version: Option<String>,
    /// Print only the binary's path
    #[arg(long, conflicts_with = "json")]
    pub path: bool,
    /// Print the result as JSON (schemas/vm-scheduler-build.schema.json)
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `runq vm kernel`.
#[derive(Debug, clap::Args)]
pub struct KernelArgs {
    /// The action.
    #[command(subcommand)]
    pub command: KernelCommand,
}

/// kernel's actions.
#[derive(Debug, clap::Subcommand)]
pub enum KernelCommand {
    /// Build a kernel for scheduler testing, or find it built: virtme-ng's
    /// minimal config with runq's fragment merged onto it (with
    /// --sched-ext: BTF, the BPF JIT, SCHED_CLASS_EXT, IKCONFIG_PROC),
    /// `make bzImage`, and with --sched-ext the tree's tools/sched_ext
    /// schedulers. Kept under $RUNQ_KERNEL_CACHE (default
    /// ~/.cache/runq/kernels) in a directory keyed by the source and the
    /// fragment; a cached build is found at once.
    #[command(after_help = "\
Cost: a cold build is about 11.5 minutes of `make -j2` on a quiet 2-CPU
host (1,305 CPU-seconds; the schedulers 10 s of it); a cached one
returns at once. Needs
build-essential flex bison bc libelf-dev libssl-dev dwarves, clang-19
for the schedulers, and virtme-ng.

Examples:
  runq vm kernel build --debian 6.12 --sched-ext
  runq run --vm --kernel ~/.cache/runq/kernels/linux-6.12.117-1_deb12u1-d2d856db1b69775e \\
      --scheduler ~/.cache/runq/kernels/linux-6.12.117-1_deb12u1-d2d856db1b69775e/scx/scx_simple")]
    Build(BuildArgs),
}

/// Arguments of `runq vm kernel build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// A kernel tree to build where it is (its .config is replaced when it
    /// lacks the fragment's settings)
    #[arg(long, value_name = "DIR", conflicts_with = "debian")]
    pub source: Option<PathBuf>,
    /// Debian's linux-source-SERIES package (its tarball in /usr/src,
    /// unpacked into the cache) [default: 6.12]
    #[arg(long, value_name = "SERIES")]
    pub debian: Option<String>,
    /// Turn sched_ext on and build the tree's tools/sched_ext schedulers
    #[arg(long)]
    pub sched_ext: bool,
    /// Parallel make jobs [default: the CPUs runq may use]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Print the result as JSON (schemas/vm-kernel-build.schema.json)
    #[arg(long)]
    pub json: bool,
}

/// Runs the chosen action.
pub fn execute(args: VmArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        VmCommand::Kernel(KernelArgs {
            command: KernelCommand::Build(b),
        }) => build(b),
        VmCommand::Scheduler(SchedulerArgs {
            command: SchedulerCommand::Build(b),
        }) => build_scheduler(&b),
        VmCommand::Presets(p) => presets(&p),
    }
}

/// `runq vm scheduler build`.
fn build_scheduler(args: &SchedulerBuildArgs) -> anyhow::Result<ExitCode> {
    let mut progress = |step: &str| crate::errln!("runq: vm scheduler build: {step}");
    let root = runq_vm::scx::root();
    let built = runq_vm::scx::build(
        &root,
        &args.name,
        args.crate_version.as_deref(),
        &mut progress,
    )?;
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&built)?);
    } else if args.path {
        crate::outln!("{}", built.path.display());
    } else {
        crate::out!("{}", runq_vm::scx::render(&built));
    }
    Ok(ExitCode::SUCCESS)
}

/// `runq vm presets`.
fn presets(args: &PresetsArgs) -> anyhow::Result<ExitCode> {
    let rows = runq_vm::presets::table();
    if args.json {
        let doc = runq_vm::presets::PresetsDocument { presets: rows };
        crate::outln!("{}", runq_common::json::to_pretty(&doc)?);
    } else {
        crate::out!("{}", runq_vm::presets::render(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// `runq vm kernel build`.
fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    // A signal stops the step under way (make and its compilers) and ends
    // the build 128+N.
    runq_kernel::signal::install()?;
    let source = match (args.source, args.debian) {
        (Some(dir), _) => Source::Tree(dir),
        (None, series) => Source::Debian(series.unwrap_or_else(|| "6.12".into())),
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let req = BuildRequest {
        source,
        sched_ext: args.sched_ext,
        jobs,
        cache_root: kernel::cache::root(),
    };
    let mut progress = |step: &str| crate::errln!("runq: vm kernel build: {step}");
    let built = kernel::build(&req, &mut progress)?;
    if args.json {
        crate::outln!("{}", runq_common::json::to_pretty(&built)?);
    } else {
        crate::out!("{}", kernel::render(&built));
    }
    Ok(ExitCode::SUCCESS)
}
