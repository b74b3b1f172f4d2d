//! One run in a VM: the flags checked and the tools found (`plan`), the
//! guest's script written into a directory shared read-write with it,
//! virtme-ng booted (KVM first when `auto` finds it, then TCG), a guest
//! that died retried once, and what it left (exit code, stdout, stderr,
//! `--output`, `--junit`) handed back with the VM's facts.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::accel::{kvm_failure, KVM_PROBE_BOOT};
use crate::distro::DistroKernel;
use crate::guest;
use crate::guest_topology::GuestTopology;
use crate::launch::{self, Deadlines, Ended};
use crate::shared_dir::SharedDir;
use crate::topology::{self, Topology};
use crate::VmError;

/// The accelerator a VM asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// KVM when /dev/kvm works, else TCG; TCG again when KVM stops
    /// before the guest starts.
    Auto,
    /// KVM only.
    Kvm,
    /// Software emulation only.
    Tcg,
}

/// How TCG runs the vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcgThreads {
    /// Single when the guest's run patches the kernel's text (a BPF
    /// scheduler, or tracepoints attached by the recorders), multi
    /// otherwise.
    Auto,
    /// One host thread for every vCPU: safe from the race between
    /// multi-threaded TCG and the kernel patching its own code.
    Single,
    /// One host thread per vCPU.
    Multi,
}

/// What shapes the VMs of a run (the binary's `--vm` flags).
#[derive(Debug, Clone)]
pub struct VmConfig {
    /// The kernel image to boot (default: the host's in /boot).
    pub kernel: Option<PathBuf>,
    /// The topology preset, or a matrix's comma-separated list.
    pub topology: Option<String>,
    /// The guest's memory, as `2G` or `512M`.
    pub memory: String,
    /// How long a guest may take to boot to runq.
    pub boot_timeout: Duration,
    /// The accelerator.
    pub accel: Accel,
    /// How TCG runs the vCPUs.
    pub tcg_threads: TcgThreads,
    /// A scratch virtio block device of this many MiB (`--vm-disk`),
    /// formatted ext4 in the guest and made the run's TMPDIR.
    pub disk_mib: Option<u64>,
    /// Two virtio-net devices joined by a qemu hub (`--vm-net`), the far
    /// one in its own network namespace ([`runq_kernel::netns`]).
    pub net: bool,
}

/// Something the runner tells the user while it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A guest died and is booted once more, and why.
    Retry(String),
    /// Where the VM is (booting, running), with its elapsed time: for a
    /// terminal, where minutes would otherwise pass in silence.
    Progress(String),
    /// A matrix's cell ended: its id and its verdict cell.
    CellDone {
        /// The cell's id.
        cell: String,
        /// PASS, FAIL, ..., ERROR.
        verdict: String,
    },
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
    /// `--vm-disk`: the guest's device, its size and where it was mounted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// `--vm-net`: the two devices, their addresses and namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// The topology the guest's sysfs showed, which matched the preset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_topology: Option<GuestTopology>,
}

/// What the host checked before booting.
#[derive(Debug, Clone)]
pub struct Plan {
    topo: Topology,
    memory_mib: u64,
    kernel: PathBuf,
    vng: PathBuf,
    /// TCG runs every vCPU on one host thread.
    tcg_single: bool,
}

/// The default topology of `--vm`.
pub const DEFAULT_TOPOLOGY: &str = "1n2c1t";

/// Checks the flags for the VM of `preset` and finds virtme-ng, qemu and
/// a kernel. `patches_text`: the guest's run attaches a BPF scheduler or
/// tracepoints, whose static keys the kernel flips by patching its own
/// code with int3 breakpoints; under multi-threaded TCG that race locked
/// a guest's CPUs up (an RCU stall in `exc_int3` at `__schedule`'s
/// tracepoint, then soft lockups) in 1 of about 50 runs with the
/// per-task recorder, so `auto` then runs TCG single-threaded.
pub fn plan(cfg: &VmConfig, preset: &str, patches_text: bool) -> Result<Plan, VmError> {
    let topo = Topology::parse(preset).map_err(|e| VmError::Usage(format!("--topology: {e}")))?;
    let memory_mib = topology::parse_memory(&cfg.memory).map_err(VmError::Usage)?;
    topo.vng_args(memory_mib, true).map_err(VmError::Usage)?;
    // A --kernel that names nothing is the user's to fix, on any host:
    // said before what this host lacks.
    check_kernel_arg(cfg.kernel.as_deref())?;
    let vng = launch::which("vng").ok_or_else(|| {
        VmError::Skipped("--vm needs virtme-ng's `vng` on PATH (pip install virtme-ng)".into())
    })?;
    if launch::which("qemu-system-x86_64").is_none() {
        return Err(VmError::Skipped(
            "--vm needs qemu-system-x86_64 (apt-get install qemu-system-x86)".into(),
        ));
    }
    let kernel = kernel_image(cfg.kernel.as_deref())?;
    let tcg_single = match cfg.tcg_threads {
        TcgThreads::Auto => patches_text,
        mode => mode == TcgThreads::Single,
    };
    Ok(Plan {
        topo,
        memory_mib,
        kernel,
        vng,
        tcg_single,
    })
}

/// Refuses a `--kernel` that cannot name an image (an unknown
/// distribution kernel, a missing path, a directory without one), before
/// anything is looked for or fetched.
fn check_kernel_arg(given: Option<&Path>) -> Result<(), VmError> {
    let Some(k) = given else { return Ok(()) };
    match k.to_str().and_then(DistroKernel::parse) {
        Some(named) => named.map(|_| ()).map_err(|e| VmError::Usage(e.to_string())),
        None if k.is_dir() && crate::kernel::cache::image_in(k).is_none() => {
            kernel_image(Some(k)).map(|_| ())
        }
        None if !k.exists() => kernel_image(Some(k)).map(|_| ()),
        None => Ok(()),
    }
}

/// The image `--kernel` names (a file, a kernel tree built in place, a
/// `runq vm kernel build` directory, or a distribution kernel such as
/// `debian:6.12-rt`, fetched once into the kernel cache), or the host's
/// own kernel in /boot.
fn kernel_image(given: Option<&Path>) -> Result<PathBuf, VmError> {
    let distro = given.and_then(|k| k.to_str()).and_then(DistroKernel::parse);
    if let Some(named) = distro {
        let named = named.map_err(|e| VmError::Usage(e.to_string()))?;
        return named
            .resolve(&crate::kernel::cache::root())
            .map_err(|e| VmError::Run(e.to_string()));
    }
    match given {
        Some(k) if k.is_file() => Ok(k.to_path_buf()),
        Some(k) if k.is_dir() => crate::kernel::cache::image_in(k).ok_or_else(|| {
            VmError::Usage(format!(
                "--kernel {}: a directory without bzImage or arch/x86/boot/bzImage; build it \
                 with `runq vm kernel build --source {}`",
                k.display(),
                k.display()
            ))
        }),
        Some(k) => Err(VmError::Usage(format!(
            "--kernel {}: no such kernel image",
            k.display()
        ))),
        None => {
            let release =
                runq_kernel::host::read_host_context(Path::new("/proc"), Path::new("/sys"))
                    .kernel_release;
            launch::default_kernel(Path::new("/boot"), &release).ok_or_else(|| {
                VmError::Skipped(
                    "--vm found no kernel image in /boot; give one with --kernel PATH \
                     (or apt-get install linux-image-amd64)"
                        .into(),
                )
            })
        }
    }
}

/// Runs runq with the host's arguments `host_args` (after the program
/// name) in one VM of `cfg` and hands back what the guest left;
/// `patches_text` when the run attaches a BPF scheduler or tracepoints
/// ([`plan`]).
pub fn run_in_vm(
    cfg: &VmConfig,
    host_args: &[String],
    run_for: Duration,
    patches_text: bool,
    interrupt: &AtomicBool,
    notice: &mut dyn FnMut(Notice),
) -> Result<(guest::GuestArgs, GuestRun), VmError> {
    let preset = cfg.topology.as_deref().unwrap_or(DEFAULT_TOPOLOGY);
    let plan = plan(cfg, preset, patches_text)?;
    let dir = SharedDir::create()?;
    let g = guest::guest_args(host_args, dir.path());
    std::fs::create_dir_all(guest::guest_evidence(dir.path()))
        .map_err(|e| VmError::Run(format!("--vm: the shared directory's evidence: {e}")))?;
    let boot = Boot {
        cfg,
        plan: &plan,
        run_for,
        interrupt,
    };
    let run = boot.run(&[guest::GuestCommand::lone(&g.args)], dir, notice)?;
    Ok((g, run))
}

/// A run that reached the guest: its exit code and outputs.
#[derive(Debug)]
pub struct GuestRun {
    dir: SharedDir,
    console: PathBuf,
    /// What the VM was.
    pub facts: VmFacts,
}

impl GuestRun {
    /// The file `name` the guest left in the shared directory.
    pub fn read(&self, name: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.dir.path().join(name))
    }

    /// The guest's `--output` document, when it wrote one.
    pub fn output(&self) -> std::io::Result<String> {
        std::fs::read_to_string(guest::guest_output(self.dir.path()))
    }

    /// Copies the guest's evidence files into `host_dir`; what it brought
    /// rewrites the guest's paths in its outputs.
    pub fn bring_evidence(&self, host_dir: &Path) -> crate::evidence::Brought {
        crate::evidence::bring(self.dir.path(), host_dir)
    }

    /// The guest's `--junit` file, when it wrote one.
    pub fn junit(&self) -> std::io::Result<Vec<u8>> {
        std::fs::read(guest::guest_junit(self.dir.path()))
    }

    /// The guest runq's exit code; an error when it left none (the shared
    /// directory is kept then, for its console).
    pub fn rc(&self) -> Result<u8, VmError> {
        self.rc_of("")
    }

    /// The exit code of the guest's run whose files start with `files`
    /// (see [`guest::GuestCommand`]).
    pub fn rc_of(&self, files: &str) -> Result<u8, VmError> {
        let Ok(rc) = self.read(&format!("{files}rc")) else {
            self.dir.keep();
            return Err(VmError::Run(format!(
                "--vm: runq in the VM ended without a result ({}); console {}",
                launch::console_tail(&self.console, 3),
                self.console.display()
            )));
        };
        Ok(rc.trim().parse().unwrap_or(crate::codes::RUN_ERROR))
    }
}

/// One guest's boots: the VM of `plan`, its deadlines and the flag that
/// stops it.
pub(crate) struct Boot<'a> {
    pub(crate) cfg: &'a VmConfig,
    pub(crate) plan: &'a Plan,
    pub(crate) run_for: Duration,
    pub(crate) interrupt: &'a AtomicBool,
}

impl Boot<'_> {
    /// Boots the VM (KVM first when `auto` finds it, then TCG) to run
    /// each of `runs` in turn, their files in `dir`; a guest that died is
    /// booted once more, which `notice` hears of.
    pub(crate) fn run(
        &self,
        runs: &[guest::GuestCommand],
        dir: SharedDir,
        notice: &mut dyn FnMut(Notice),
    ) -> Result<GuestRun, VmError> {
        let runq = own_binary()?;
        let cwd =
            std::env::current_dir().map_err(|e| VmError::io("reading the working directory", e))?;
        let script = dir.path().join("run.sh");
        std::fs::write(
            &script,
            guest::script(
                dir.path(),
                &runq,
                &cwd,
                runs,
                guest::Setup {
                    disk: self.cfg.disk_mib.is_some(),
                    net: self.cfg.net,
                },
            ),
        )
        .map_err(|e| VmError::io(format!("writing {}", script.display()), e))?;
        let try_kvm = match self.cfg.accel {
            Accel::Auto => launch::kvm_usable(),
            accel => accel == Accel::Kvm,
        };
        let mut kvm_failed = None;
        let mut accel = if try_kvm { "kvm" } else { "tcg" };
        let mut ended = self.once(&dir, &script, accel, notice)?;
        if try_kvm
            && self.cfg.accel == Accel::Auto
            && !matches!(ended, Ended::Ran { .. } | Ended::Interrupted)
        {
            kvm_failed = Some(kvm_failure(
                &ended,
                &launch::console_tail(&dir.path().join("console.kvm"), 1),
            ));
            notice(Notice::Retry(format!(
                "--vm: {}",
                kvm_failed.as_deref().unwrap_or_default()
            )));
            accel = "tcg";
            ended = self.once(&dir, &script, accel, notice)?;
        }
        let console = dir.path().join(format!("console.{accel}"));
        let mut retried_after = None;
        if let Some(why) = died(&ended, dir.path(), &console) {
            notice(Notice::Retry(format!("--vm: {why}; booting it once more")));
            let first = dir.path().join(format!("console.{accel}.1"));
            let _ = std::fs::rename(&console, &first);
            retried_after = Some(format!("{why} (console {})", first.display()));
            ended = self.once(&dir, &script, accel, notice)?;
        }
        let boot = match ended {
            Ended::Ran { boot } => boot,
            other => return Err(self.error(other, accel, &console, &dir)),
        };
        let guest_topology = self.check_topology(&dir)?;
        let mut facts = self.facts(accel, kvm_failed, boot, retried_after);
        facts.guest_topology = guest_topology;
        facts.disk = self.disk_fact(&dir);
        facts.net = self.net_fact(&dir);
        Ok(GuestRun {
            dir,
            console,
            facts,
        })
    }

    /// The topology the guest saw, an error when it is not the one asked
    /// for (its run does not stand for the preset); `None` when the guest
    /// listed none.
    fn check_topology(&self, dir: &SharedDir) -> Result<Option<GuestTopology>, VmError> {
        let text = std::fs::read_to_string(dir.path().join("topology")).unwrap_or_default();
        let Some(seen) = GuestTopology::parse(&text) else {
            return Ok(None);
        };
        if let Some(why) = seen.mismatch(&self.plan.topo) {
            dir.keep();
            return Err(VmError::Run(format!(
                "--vm: the guest's topology is not {}: {why}; its run does not stand for the \
                 preset (guest files in {})",
                self.plan.topo,
                dir.path().display()
            )));
        }
        Ok(Some(seen))
    }

    /// What `--vm-disk` was in the guest, when it was set up.
    fn disk_fact(&self, dir: &SharedDir) -> Option<String> {
        let mib = self.cfg.disk_mib?;
        let dev = std::fs::read_to_string(dir.path().join("disk")).ok()?;
        Some(format!(
            "virtio-blk {} ({mib}M, cache={}), ext4 at {} (the run's TMPDIR)",
            dev.trim(),
            disk_cache_mode(&dir.path().join("disk.img")),
            guest::DISK_MOUNT
        ))
    }

    /// What `--vm-net` was in the guest, when it was set up.
    fn net_fact(&self, dir: &SharedDir) -> Option<String> {
        use runq_kernel::netns::{NIC_LOCAL_ADDR, NIC_PEER_ADDR, NIC_PEER_NETNS};
        if !self.cfg.net {
            return None;
        }
        let devs = std::fs::read_to_string(dir.path().join("net")).ok()?;
        let (near, far) = devs.trim().split_once(' ')?;
        Some(format!(
            "virtio-net {near} {NIC_LOCAL_ADDR} and {far} {NIC_PEER_ADDR} (netns \
             {NIC_PEER_NETNS}), joined by a qemu hub"
        ))
    }

    fn deadlines(&self) -> Deadlines {
        Deadlines {
            boot: self.cfg.boot_timeout,
            run: self.run_for + Duration::from_secs(120),
        }
    }

    /// The facts of a VM that ran the guest.
    fn facts(
        &self,
        accel: &'static str,
        kvm_failed: Option<String>,
        boot: Duration,
        retried_after: Option<String>,
    ) -> VmFacts {
        let plan = self.plan;
        VmFacts {
            accel,
            kvm_failed,
            topology: plan.topo.to_string(),
            cpus: plan.topo.cpus(),
            numa_nodes: plan.topo.nodes,
            threads_per_core: plan.topo.threads,
            memory_mib: plan.memory_mib,
            kernel_image: plan.kernel.display().to_string(),
            boot_ms: boot.as_millis() as u64,
            tcg_threads: (accel == "tcg").then_some(if plan.tcg_single {
                "single"
            } else {
                "multi"
            }),
            retried_after,
            disk: None,
            net: None,
            guest_topology: None,
        }
    }

    /// One boot with `accel`, its console in `dir/console.<accel>`.
    fn once(
        &self,
        shared: &SharedDir,
        script: &Path,
        accel: &str,
        notice: &mut dyn FnMut(Notice),
    ) -> Result<Ended, VmError> {
        let (plan, dir) = (self.plan, shared.path());
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
                .map_err(VmError::Usage)?,
        );
        if let Some(mib) = self.cfg.disk_mib {
            vng_args.push(scratch_disk(dir, mib)?);
        }
        if self.cfg.net {
            vng_args.extend([
                "--network=loop".to_string(),
                "--no-dhcp".to_string(),
                format!("--net-mac-address={}", guest::NET_MAC),
            ]);
        }
        vng_args.push(format!("--rwdir={}", dir.display()));
        vng_args.extend([
            "--".to_string(),
            "/bin/sh".to_string(),
            script.display().to_string(),
        ]);
        let console = dir.join(format!("console.{accel}"));
        let mut progress = |p: String| notice(Notice::Progress(format!("{p} ({accel})")));
        let mut deadlines = self.deadlines();
        if accel == "kvm" && self.cfg.accel == Accel::Auto {
            // KVM probed, not waited on: a guest that KVM boots starts in
            // seconds; one it hangs (seen at "Decompressing Linux...")
            // would hold the whole boot timeout before TCG is tried.
            deadlines.boot = deadlines.boot.min(KVM_PROBE_BOOT);
        }
        launch::boot(
            &plan.vng,
            &vng_args,
            dir,
            &console,
            (deadlines, shared.guard()),
            (self.interrupt, &mut progress),
        )
        .map_err(|e| VmError::Run(format!("--vm: starting {}: {e}", plan.vng.display())))
    }

    /// The error for a VM that did not run the scenario to its end (the
    /// shared directory is kept, for its console).
    fn error(&self, ended: Ended, accel: &str, console: &Path, dir: &SharedDir) -> VmError {
        let tail = launch::console_tail(console, 3);
        let d = self.deadlines();
        if matches!(ended, Ended::Interrupted) {
            return VmError::Interrupted("interrupted; the VM was stopped".into());
        }
        dir.keep();
        VmError::Run(match ended {
            Ended::BootTimeout => format!(
                "--vm: the VM ({accel}) did not boot to runq within {:?} and was stopped; raise \
                 --vm-boot-timeout or see its console {} ({tail})",
                d.boot,
                console.display()
            ),
            Ended::RunTimeout => format!(
                "--vm: the run in the VM did not end within {:?} and the VM was stopped; see its \
                 console {}",
                d.run,
                console.display()
            ),
            _ => format!(
                "--vm: the VM ({accel}) stopped before runq started: {tail} (console {})",
                console.display()
            ),
        })
    }
}

/// A sparse file of `mib` MiB in `dir` for `--vm-disk`, and the vng
/// argument that attaches it as a virtio block device (no host page
/// cache: the guest's writes reach the file as they would a disk).
fn scratch_disk(dir: &Path, mib: u64) -> Result<String, VmError> {
    let path = dir.join("disk.img");
    let file = std::fs::File::create(&path)
        .map_err(|e| VmError::io(format!("creating {}", path.display()), e))?;
    file.set_len(mib * 1024 * 1024)
        .map_err(|e| VmError::io(format!("sizing {}", path.display()), e))?;
    Ok(format!(
        "--qemu-opts=-drive file={},if=none,id=runqdisk,format=raw,cache={} -device \
         virtio-blk-pci,drive=runqdisk,serial={}",
        path.display(),
        disk_cache_mode(&path),
        guest::DISK_SERIAL
    ))
}

/// `none` (O_DIRECT on the host file, the guest's I/O reaches it
/// uncached) where the host's file system allows O_DIRECT, else
/// `writeback` (tmpfs refuses O_DIRECT; the guest's flushes are still
/// the host's fsyncs).
fn disk_cache_mode(path: &Path) -> &'static str {
    use std::os::unix::fs::OpenOptionsExt;
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path);
    if direct.is_ok() {
        "none"
    } else {
        "writeback"
    }
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
fn own_binary() -> Result<PathBuf, VmError> {
    let exe = std::env::current_exe().map_err(|e| VmError::io("finding runq's own binary", e))?;
    let text = exe.display().to_string();
    Ok(text.strip_suffix(" (deleted)").map_or(exe, PathBuf::from))
}

/// The document `text` with the VM's facts as `host.vm`.
pub fn with_vm_facts(text: &str, facts: &VmFacts) -> Result<String, VmError> {
    let mut doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| VmError::Run(format!("--vm: the guest's JSON: {e}")))?;
    if let Some(host) = doc.get_mut("host").and_then(|h| h.as_object_mut()) {
        let vm = serde_json::to_value(facts).map_err(|e| VmError::Run(e.to_string()))?;
        host.insert("vm".into(), vm);
    }
    serde_json::to_string_pretty(&doc).map_err(|e| VmError::Run(e.to_string()))
}

/// The report's line about the VM.
pub fn vm_line(f: &VmFacts) -> String {
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
    ) + &f
        .disk
        .as_ref()
        .map_or(String::new(), |d| format!("; disk {d}"))
        + &f.net
            .as_ref()
            .map_or(String::new(), |n| format!("; net {n}"))
}
