//! `runq run … --vm`: the same run inside a VM of a chosen topology, booted
//! with virtme-ng over the host's own root filesystem, its report, JSON,
//! `--output` and `--junit` brought out as if run on the host, with the
//! VM's facts (accelerator, topology, kernel image, boot time) added.

mod guest;
mod launch;
mod matrix;
pub mod matrix_doc;
pub mod shard;
pub mod topology;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use runq_common::duration::parse_duration;

use crate::exit;
use launch::{Deadlines, Ended};
use runq_common::safefile::{write_atomic, Replace};
use topology::Topology;

/// The flags of `--vm`.
#[derive(Debug, Clone, clap::Args)]
pub struct VmArgs {
    /// Run the scenario inside a VM (virtme-ng over this host's root
    /// filesystem: the same runq binary, the same arguments); needs qemu,
    /// virtme-ng (`vng`) and a kernel image. KVM when it works, software
    /// emulation (TCG) otherwise; the report says which
    #[arg(long)]
    pub vm: bool,
    /// The kernel the VM boots (default: /boot/vmlinuz-$(uname -r), else
    /// the newest /boot/vmlinuz-*)
    #[arg(long, value_name = "PATH")]
    pub kernel: Option<PathBuf>,
    /// The VM's topology: NUMA nodes (n), LLCs per node (l), cores per LLC
    /// (c), threads per core (t), e.g. 2n2c2t (8 vCPUs, SMT siblings), 4c
    /// [default: 1n2c1t]; with --vm-matrix, a comma-separated list
    #[arg(long, value_name = "PRESET")]
    pub topology: Option<String>,
    /// Run the scenario in one VM per topology (--topology's list, or
    /// 1n2c1t,1n1c2t,2n1c1t,1n2l1c1t,2n2c2t) and print one table:
    /// topology, verdict, failed checks; --junit gets one testcase each
    #[arg(long)]
    pub vm_matrix: bool,
    /// Run only shard K of N of --vm-matrix's cells (K from 1 to N), so N
    /// CI jobs cover the matrix once between them; `runq report merge`
    /// joins their JSON documents into one table and verdict
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// The VM's memory (split evenly over its NUMA nodes): 2G, 512M
    #[arg(long, value_name = "SIZE", default_value = "2G")]
    pub memory: String,
    /// How long the VM may take to boot to runq before it is killed and the
    /// run fails (exit 3)
    #[arg(long, value_name = "DURATION", default_value = "180s", value_parser = parse_duration)]
    pub vm_boot_timeout: Duration,
    /// The accelerator: auto (KVM when /dev/kvm works, else TCG), kvm, tcg
    #[arg(long, value_name = "ACCEL", default_value = "auto", value_parser = ["auto", "kvm", "tcg"])]
    pub vm_accel: String,
    /// How software emulation (TCG) runs the vCPUs: single (one host
    /// thread for them all: slower, but safe from the race between
    /// multi-threaded TCG and the kernel patching its own code, which
    /// killed 5 of 19 guests as a sched_ext scheduler attached), multi,
    /// or auto (single when a scheduler runs, multi otherwise)
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = ["auto", "single", "multi"])]
    pub vm_tcg_threads: String,
}

/// What the VM was, for the report and the document's `host.vm`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VmFacts {
    /// `kvm` or `tcg` (software emulation: timings are not a scheduler's).
    pub accel: &'static str,
    /// Why KVM was not used, when it was tried and failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kvm_failed: Option<String>,
    /// The topology preset.
    pub topology: String,
    /// vCPUs, NUMA nodes and threads per core it gives.
    pub cpus: u32,
    /// NUMA nodes.
    pub numa_nodes: u32,
    /// Hardware threads per core.
    pub threads_per_core: u32,
    /// Guest memory.
    pub memory_mib: u64,
    /// The kernel image booted.
    pub kernel_image: String,
    /// From starting the VM to runq starting in the guest.
    pub boot_ms: u64,
    /// `single` or `multi`: how TCG ran the vCPUs (absent under KVM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcg_threads: Option<&'static str>,
    /// Why the first VM ended without a result, when it was booted again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retried_after: Option<String>,
}

/// What the host checked before booting.
struct Plan {
    topo: Topology,
    memory_mib: u64,
    kernel: PathBuf,
    vng: PathBuf,
    /// TCG runs every vCPU on one host thread.
    tcg_single: bool,
}

/// The default topology of `--vm`.
const DEFAULT_TOPOLOGY: &str = "1n2c1t";

impl VmArgs {
    /// Whether the run goes into a VM (`--vm` or `--vm-matrix`); a usage
    /// error for a VM flag given without either.
    pub fn wanted(&self) -> anyhow::Result<bool> {
        let wanted = self.vm || self.vm_matrix;
        let stray = self.kernel.is_some() || self.topology.is_some();
        if stray && !wanted {
            return Err(exit::usage(
                "--kernel and --topology shape a VM: add --vm (or --vm-matrix)",
            ));
        }
        if let Some(text) = &self.shard {
            if !self.vm_matrix {
                return Err(exit::usage(format!(
                    "--shard {text} splits the cells of a matrix: add --vm-matrix"
                )));
            }
            shard::Shard::parse(text).map_err(exit::usage)?;
        }
        Ok(wanted)
    }

    /// The shard to run (`--shard`, already checked by [`VmArgs::wanted`]),
    /// or the whole matrix.
    pub fn shard(&self) -> anyhow::Result<shard::Shard> {
        match &self.shard {
            Some(text) => shard::Shard::parse(text).map_err(exit::usage),
            None => Ok(shard::Shard::WHOLE),
        }
    }
}

/// Checks the flags for the VM of `preset` (whose run starts a scheduler
/// when `scheduler`) and finds virtme-ng, qemu and a kernel.
fn plan(args: &super::RunArgs, preset: &str, scheduler: bool) -> anyhow::Result<Plan> {
    let vm = &args.vm;
    let topo = Topology::parse(preset).map_err(|e| exit::usage(format!("--topology: {e}")))?;
    let memory_mib = topology::parse_memory(&vm.memory).map_err(exit::usage)?;
    topo.vng_args(memory_mib, true).map_err(exit::usage)?;
    if args.scenario.as_deref() == Some("-") {
        return Err(exit::usage(
            "--vm cannot read a scenario from stdin; give its file",
        ));
    }
    if args.ctprof.is_some() {
        return Err(exit::usage(
            "--ctprof is not available with --vm; drop one of them",
        ));
    }
    let vng = launch::which("vng").ok_or_else(|| {
        exit::skipped("--vm needs virtme-ng's `vng` on PATH (pip install virtme-ng)")
    })?;
    if launch::which("qemu-system-x86_64").is_none() {
        return Err(exit::skipped(
            "--vm needs qemu-system-x86_64 (apt-get install qemu-system-x86)",
        ));
    }
    let kernel = match &vm.kernel {
        Some(k) if k.is_file() => k.clone(),
        Some(k) => {
            return Err(exit::usage(format!(
                "--kernel {}: no such kernel image",
                k.display()
            )))
        }
        None => {
            let release =
                runq_kernel::host::read_host_context(Path::new("/proc"), Path::new("/sys"))
                    .kernel_release;
            launch::default_kernel(Path::new("/boot"), &release).ok_or_else(|| {
                exit::skipped(
                    "--vm found no kernel image in /boot; give one with --kernel PATH \
                     (or apt-get install linux-image-amd64)",
                )
            })?
        }
    };
    let tcg_single = match vm.vm_tcg_threads.as_str() {
        "auto" => scheduler,
        mode => mode == "single",
    };
    Ok(Plan {
        topo,
        memory_mib,
        kernel,
        vng,
        tcg_single,
    })
}

/// Runs the whole `runq run` inside a VM and brings its results out;
/// `scenario` names the scenario (a matrix's cells), `scheduler` when the
/// run starts a scheduler under test.
pub fn run_in_vm(
    args: &super::RunArgs,
    scenario: &str,
    run_for: Duration,
    scheduler: bool,
) -> anyhow::Result<ExitCode> {
    if args.vm.vm_matrix {
        return matrix::run_matrix(args, scenario, run_for, scheduler);
    }
    let preset = args.vm.topology.as_deref().unwrap_or(DEFAULT_TOPOLOGY);
    let plan = plan(args, preset, scheduler)?;
    let interrupt = runq_kernel::signal::install().context("installing signal handlers")?;
    let dir = SharedDir::create()?;
    let host_args: Vec<String> = std::env::args().skip(1).collect();
    let g = guest::guest_args(&host_args, &dir.0);
    let run = boot_and_run(args, &plan, &g.args, dir, run_for, interrupt)?;
    bring_out(args, &g, &run)
}

/// A run that reached the guest: its exit code and outputs.
struct GuestRun {
    dir: SharedDir,
    console: PathBuf,
    facts: VmFacts,
}

impl GuestRun {
    fn read(&self, name: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.dir.0.join(name))
    }

    /// The guest runq's exit code; an error when it left none.
    fn rc(&self) -> anyhow::Result<u8> {
        let Ok(rc) = self.read("rc") else {
            self.dir.keep();
            return Err(exit::run_error(format!(
                "--vm: runq in the VM ended without a result ({}); console {}",
                launch::console_tail(&self.console, 3),
                self.console.display()
            )));
        };
        Ok(rc.trim().parse().unwrap_or(exit::RUN_ERROR))
    }
}

/// Boots the VM of `plan` (KVM first when `auto` finds it, then TCG) to
/// run runq with `guest_args`, its files in `dir`.
fn boot_and_run(
    args: &super::RunArgs,
    plan: &Plan,
    guest_args: &[String],
    dir: SharedDir,
    run_for: Duration,
    interrupt: &AtomicBool,
) -> anyhow::Result<GuestRun> {
    let runq = own_binary()?;
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let script = dir.0.join("run.sh");
    std::fs::write(&script, guest::script(&dir.0, &runq, &cwd, guest_args))
        .with_context(|| format!("writing {}", script.display()))?;
    let deadlines = Deadlines {
        boot: args.vm.vm_boot_timeout,
        run: run_for + Duration::from_secs(120),
    };
    let try_kvm = match args.vm.vm_accel.as_str() {
        "auto" => launch::kvm_usable(),
        accel => accel == "kvm",
    };
    let mut kvm_failed = None;
    let mut accel = if try_kvm { "kvm" } else { "tcg" };
    let mut ended = boot_once(plan, &dir.0, &script, accel, deadlines, interrupt)?;
    if try_kvm
        && args.vm.vm_accel == "auto"
        && !matches!(ended, Ended::Ran { .. } | Ended::Interrupted)
    {
        kvm_failed = Some(launch::console_tail(&dir.0.join("console.kvm"), 1));
        accel = "tcg";
        ended = boot_once(plan, &dir.0, &script, accel, deadlines, interrupt)?;
    }
    let mut console = dir.0.join(format!("console.{accel}"));
    let mut retried_after = None;
    if let Some(why) = died(&ended, &dir.0, &console) {
        crate::errln!("runq: --vm: {why}; booting it once more");
        let first = dir.0.join(format!("console.{accel}.1"));
        let _ = std::fs::rename(&console, &first);
        retried_after = Some(format!("{why} (console {})", first.display()));
        ended = boot_once(plan, &dir.0, &script, accel, deadlines, interrupt)?;
        console = dir.0.join(format!("console.{accel}"));
    }
    let boot = match ended {
        Ended::Ran { boot } => boot,
        other => return Err(boot_error(other, accel, &console, &dir, deadlines)),
    };
    let facts = VmFacts {
        accel,
        kvm_failed,
        topology: plan.topo.to_string(),
        cpus: plan.topo.cpus(),
        numa_nodes: plan.topo.nodes,
        threads_per_core: plan.topo.threads,
        memory_mib: plan.memory_mib,
        kernel_image: plan.kernel.display().to_string(),
        boot_ms: boot.as_millis() as u64,
        tcg_threads: (accel == "tcg").then_some(if plan.tcg_single { "single" } else { "multi" }),
        retried_after,
    };
    Ok(GuestRun {
        dir,
        console,
        facts,
    })
}

/// Why a VM that was not interrupted ended without a result (it died at
/// boot, hung, or exited without runq's exit code), with its console's
/// last lines; `None` when it has a result or was interrupted.
fn died(ended: &Ended, dir: &Path, console: &Path) -> Option<String> {
    let what = match ended {
        Ended::Interrupted => return None,
        Ended::Ran { .. } if dir.join("rc").exists() => return None,
        Ended::Ran { .. } => "the VM ended without runq's result",
        Ended::DiedAtBoot => "the VM stopped before runq started",
        Ended::BootTimeout => "the VM did not boot to runq in time",
        Ended::RunTimeout => "the run in the VM did not end in time",
    };
    Some(format!("{what}: {}", launch::console_tail(console, 3)))
}

/// The runq binary the guest runs: this one, or, when it was replaced
/// on disk since it started (a rebuild), the new file at its path.
fn own_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding runq's own binary")?;
    let text = exe.display().to_string();
    Ok(text.strip_suffix(" (deleted)").map_or(exe, PathBuf::from))
}

/// One boot with `accel`, its console in `dir/console.<accel>`.
fn boot_once(
    plan: &Plan,
    dir: &Path,
    script: &Path,
    accel: &str,
    deadlines: Deadlines,
    interrupt: &AtomicBool,
) -> anyhow::Result<Ended> {
    let tcg = accel == "tcg";
    // -v: the kernel's console goes to the console file (vng sends it to
    // /dev/null otherwise), the evidence when a guest dies.
    let mut vng_args = vec!["-v".to_string()];
    if tcg {
        vng_args.push("--disable-kvm".to_string());
        if plan.tcg_single {
            vng_args.push("--qemu-opts=-accel tcg,thread=single".to_string());
        }
    }
    vng_args.extend(["-r".to_string(), plan.kernel.display().to_string()]);
    vng_args.extend(
        plan.topo
            .vng_args(plan.memory_mib, tcg)
            .map_err(exit::usage)?,
    );
    vng_args.push(format!("--rwdir={}", dir.display()));
    vng_args.extend([
        "--".to_string(),
        "/bin/sh".to_string(),
        script.display().to_string(),
    ]);
    let console = dir.join(format!("console.{accel}"));
    launch::boot(&plan.vng, &vng_args, dir, &console, deadlines, interrupt)
        .map_err(|e| exit::run_error(format!("--vm: starting {}: {e}", plan.vng.display())))
}

/// The error for a VM that did not run the scenario to its end (the
/// shared directory is kept, for its console).
fn boot_error(
    ended: Ended,
    accel: &str,
    console: &Path,
    dir: &SharedDir,
    d: Deadlines,
) -> anyhow::Error {
    let tail = launch::console_tail(console, 3);
    if matches!(ended, Ended::Interrupted) {
        return exit::interrupted("interrupted; the VM was stopped");
    }
    dir.keep();
    match ended {
        Ended::Interrupted => exit::interrupted("interrupted; the VM was stopped"),
        Ended::BootTimeout => exit::run_error(format!(
            "--vm: the VM ({accel}) did not boot to runq within {:?} and was stopped; raise \
             --vm-boot-timeout or see its console {} ({tail})",
            d.boot,
            console.display()
        )),
        Ended::RunTimeout => exit::run_error(format!(
            "--vm: the run in the VM did not end within {:?} and the VM was stopped; see its \
             console {}",
            d.run,
            console.display()
        )),
        Ended::DiedAtBoot | Ended::Ran { .. } => exit::run_error(format!(
            "--vm: the VM ({accel}) stopped before runq started: {tail} (console {})",
            console.display()
        )),
    }
}

/// Prints the guest's report (or JSON, with `host.vm` added), writes
/// `--output` and `--junit` on the host, and exits with the guest's code.
fn bring_out(
    args: &super::RunArgs,
    g: &guest::GuestArgs,
    run: &GuestRun,
) -> anyhow::Result<ExitCode> {
    let rc = run.rc()?;
    let stdout = run.read("stdout").unwrap_or_default();
    let stderr = run.read("stderr").unwrap_or_default();
    if !stderr.trim().is_empty() {
        crate::errln!("{}", stderr.trim_end());
    }
    let facts = &run.facts;
    if args.json && !stdout.trim().is_empty() {
        crate::outln!("{}", with_vm_facts(&stdout, facts)?);
    } else {
        crate::out!("{stdout}");
        if !args.json {
            crate::outln!("{}", vm_line(facts));
        }
    }
    let saved = std::fs::read_to_string(guest::guest_output(&run.dir.0));
    if let (Some(path), Ok(text)) = (&g.output, saved) {
        let doc = with_vm_facts(&text, facts)? + "\n";
        write_atomic(path, doc.as_bytes(), Replace::OwnFile)
            .map_err(|e| exit::run_error(format!("--output {}: {e}", path.display())))?;
    }
    if let Some(path) = &g.junit {
        let junit = std::fs::read(guest::guest_junit(&run.dir.0))
            .and_then(|bytes| write_atomic(path, &bytes, Replace::OwnFile));
        junit.map_err(|e| exit::run_error(format!("--junit {}: {e}", path.display())))?;
    }
    Ok(ExitCode::from(rc))
}

/// The document `text` with the VM's facts as `host.vm`.
fn with_vm_facts(text: &str, facts: &VmFacts) -> anyhow::Result<String> {
    let mut doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| exit::run_error(format!("--vm: the guest's JSON: {e}")))?;
    if let Some(host) = doc.get_mut("host").and_then(|h| h.as_object_mut()) {
        host.insert("vm".into(), serde_json::to_value(facts)?);
    }
    Ok(serde_json::to_string_pretty(&doc)?)
}

/// The report's line about the VM.
fn vm_line(f: &VmFacts) -> String {
    let accel = match (&f.kvm_failed, f.accel) {
        (Some(why), _) => format!("TCG (software emulation; KVM failed: {why})"),
        (None, "tcg") => "TCG (software emulation: timings are not a scheduler's)".to_string(),
        _ => "KVM".to_string(),
    };
    format!(
        "vm: {accel}; topology {} ({} vCPUs, {} NUMA nodes, {} threads per core), {}M, kernel \
         {}; booted to runq in {:.1} s",
        f.topology,
        f.cpus,
        f.numa_nodes,
        f.threads_per_core,
        f.memory_mib,
        f.kernel_image,
        f.boot_ms as f64 / 1000.0
    )
}

/// The directory the guest writes into (shared read-write), removed at
/// the end unless kept for a console a user should read.
struct SharedDir(PathBuf, std::cell::Cell<bool>);

impl SharedDir {
    fn create() -> anyhow::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("runq-vm-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(SharedDir(dir, std::cell::Cell::new(false)))
    }

    fn keep(&self) {
        self.1.set(true);
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        if !self.1.get() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
