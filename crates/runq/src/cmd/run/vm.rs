//! `runq run … --vm` and `--vm-matrix`: the flags, parsed into runq-vm's
//! `VmConfig`, and what the runner hands back printed: the guest's report
//! (JSON with `host.vm` added) and the VM's line, or the matrix's table,
//! document and JUnit suite.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use runq_common::duration::parse_duration;
use runq_common::safefile::{write_atomic, Replace};
use runq_vm::matrix::{MatrixRun, MatrixScenario};
use runq_vm::matrix_doc::{matrix_code, render, Matrix};
use runq_vm::run::{vm_line, with_vm_facts, GuestRun, Notice};
use runq_vm::shard::Shard;
use runq_vm::{Accel, TcgThreads, VmConfig};

use crate::exit;

/// The flags of `--vm`.
#[derive(Debug, Clone, clap::Args)]
pub struct VmArgs {
    /// Run the scenario inside a VM (virtme-ng over this host's root
    /// filesystem: the same runq binary, the same arguments); needs qemu,
    /// virtme-ng (`vng`) and a kernel image. KVM when it works, software
    /// emulation (TCG) otherwise; the report says which
    #[arg(long)]
    pub vm: bool,
    /// The kernel the VM boots: an image, a kernel tree built in place
    /// (its arch/x86/boot/bzImage), a `runq vm kernel build` directory, or
    /// a Debian kernel by name (debian:6.1, debian:6.1-rt, debian:6.12,
    /// debian:6.12-rt: fetched once with apt into the kernel cache); with
    /// --vm-matrix, a comma-separated list makes a kernel axis (default:
    /// /boot/vmlinuz-$(uname -r), else the newest /boot/vmlinuz-*)
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Option<PathBuf>,
    /// The VM's topology: NUMA nodes (n), LLCs per node (l), cores per LLC
    /// (c), threads per core (t) and node distance (d), e.g. 2n2c2t (8
    /// vCPUs, SMT siblings), 2n2c1t31d, 4c, or a preset name such as
    /// 8cpu-2llc-smt or 2numa-16cpu-4llc-nosmt [default: 1n2c1t]; with
    /// --vm-matrix, a comma-separated list (`gauntlet`: all 25 presets)
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
    /// With --vm-matrix, how many VMs run at once (each takes the vCPUs of
    /// its topology from this host's CPUs: under TCG more jobs than
    /// host CPUs only slow every cell)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Give the VM a scratch virtio block device of SIZE (e.g. 1G: a sparse
    /// file in the run's shared directory, attached without the host's
    /// page cache where its file system allows), formatted ext4 and
    /// mounted as the run's TMPDIR, so that the I/O work types write and
    /// read a real block device
    #[arg(long, value_name = "SIZE")]
    pub vm_disk: Option<String>,
    /// Give the VM two virtio-net devices joined by a qemu hub, the second
    /// in network namespace runq-peer (10.77.0.1 and 10.77.0.2), so that
    /// NetTraffic path=nic and IrqWake source=nic go out of one device and
    /// in through the other's receive interrupt
    #[arg(long)]
    pub vm_net: bool,
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
    /// killed 5 of 19 guests as a sched_ext scheduler attached and locks
    /// a guest up now and then as the recorder attaches its tracepoints),
    /// multi, or auto (single unless the run has no scheduler and
    /// --no-recorder)
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = ["auto", "single", "multi"])]
    pub vm_tcg_threads: String,
}

impl VmArgs {
    /// Whether the run goes into a VM (`--vm` or `--vm-matrix`); a usage
    /// error for a VM flag given without either.
    pub fn wanted(&self) -> anyhow::Result<bool> {
        let wanted = self.vm || self.vm_matrix;
        let stray = self.kernel.is_some()
            || self.topology.is_some()
            || self.vm_disk.is_some()
            || self.vm_net;
        if stray && !wanted {
            return Err(exit::usage(
                "--kernel, --topology, --vm-disk and --vm-net shape a VM: add --vm (or \
                 --vm-matrix)",
            ));
        }
        let kernel_list = self
            .kernel
            .as_ref()
            .and_then(|k| k.to_str())
            .filter(|k| k.contains(','));
        if let (Some(list), false) = (kernel_list, self.vm_matrix) {
            return Err(exit::usage(format!(
                "--kernel {list}: a list of kernels is an axis of --vm-matrix; add --vm-matrix \
                 or name one kernel"
            )));
        }
        if self.jobs > 1 && !self.vm_matrix {
            return Err(exit::usage(format!(
                "--jobs {} runs the cells of a matrix side by side: add --vm-matrix",
                self.jobs
            )));
        }
        if let Some(text) = &self.shard {
            if !self.vm_matrix {
                return Err(exit::usage(format!(
                    "--shard {text} splits the cells of a matrix: add --vm-matrix"
                )));
            }
            Shard::parse(text).map_err(exit::usage)?;
        }
        Ok(wanted)
    }

    /// The shard to run (`--shard`, already checked by [`VmArgs::wanted`]),
    /// or the whole matrix.
    fn shard(&self) -> anyhow::Result<Shard> {
        match &self.shard {
            Some(text) => Shard::parse(text).map_err(exit::usage),
            None => Ok(Shard::WHOLE),
        }
    }

    /// The runner's configuration.
    fn config(&self) -> anyhow::Result<VmConfig> {
        let disk_mib = match &self.vm_disk {
            None => None,
            Some(text) => Some(
                runq_vm::topology::parse_memory(text)
                    .ok()
                    .filter(|&mib| mib >= 64)
                    .ok_or_else(|| {
                        exit::usage(format!(
                            "--vm-disk {text:?}: give a size of 64M or more, such as 1G or 512M"
                        ))
                    })?,
            ),
        };
        Ok(VmConfig {
            kernel: self.kernel.clone(),
            topology: self.topology.clone(),
            memory: self.memory.clone(),
            boot_timeout: self.vm_boot_timeout,
            accel: match self.vm_accel.as_str() {
                "kvm" => Accel::Kvm,
                "tcg" => Accel::Tcg,
                _ => Accel::Auto,
            },
            tcg_threads: match self.vm_tcg_threads.as_str() {
                "single" => TcgThreads::Single,
                "multi" => TcgThreads::Multi,
                _ => TcgThreads::Auto,
            },
            disk_mib,
            net: self.vm_net,
        })
    }
}

/// Runs the whole `runq run` inside a VM (with `--vm-matrix`, one per
/// topology, kernel and scheduler, running its cells' scenarios in turn)
/// and prints what it brought out; `scenarios` are the scenarios with
/// their run time (one unless a matrix lists several), `patches_text`
/// when the run attaches a scheduler or tracepoints (so TCG runs
/// single-threaded: see [`runq_vm::run::plan`]).
pub fn run_in_vm(
    args: &super::RunArgs,
    scenarios: &[MatrixScenario],
    patches_text: bool,
) -> anyhow::Result<ExitCode> {
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
    let cfg = args.vm.config()?;
    let interrupt = runq_kernel::signal::install().context("installing signal handlers")?;
    let host_args = host_args_utf8()?;
    let json = args.json;
    let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut notice = |n: Notice| match n {
        Notice::Retry(why) => crate::errln!("runq: {why}"),
        Notice::Progress(p) if on_terminal => crate::errln!("runq: --vm: {p}"),
        Notice::Progress(_) => {}
        Notice::CellDone { cell, verdict } if !json => {
            crate::errln!("runq: vm-matrix: {cell} done ({verdict})")
        }
        Notice::CellDone { .. } => {}
    };
    if args.vm.vm_matrix {
        let shard = args.vm.shard()?;
        let schedulers = runq_vm::matrix::schedulers(&args.sched.scheduler)?;
        for cmd in schedulers.iter().filter_map(|s| s.command.as_deref()) {
            runq_workload::scheduler::SchedulerSpec::new(cmd)
                .validate_command()
                .map_err(|e| exit::usage(format!("--scheduler: {e}")))?;
        }
        let m = MatrixRun {
            scenarios,
            scenario_arg: args.scenario.as_deref(),
            schedulers: &schedulers,
            host_args: &host_args,
            patches_text,
            jobs: args.vm.jobs as usize,
        };
        let t0 = Instant::now();
        let doc = runq_vm::matrix::run_matrix(&cfg, shard, m, interrupt, &mut notice)
            .map_err(|e| keep_error_document(args, e.into()))?;
        print_matrix(args, &doc, shard, t0.elapsed())?;
        if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(exit::interrupted("interrupted; the VM was stopped"));
        }
        return Ok(ExitCode::from(matrix_code(&doc.runs, 0)));
    }
    if args.sched.scheduler.len() > 1 {
        return Err(exit::usage(
            "several --scheduler are an axis of --vm-matrix; add --vm-matrix or name one",
        ));
    }
    let run_for = scenarios.iter().map(|s| s.run_for).sum();
    let (g, run) = runq_vm::run::run_in_vm(
        &cfg,
        &host_args,
        run_for,
        patches_text,
        interrupt,
        &mut notice,
    )?;
    bring_out(args, &g, &run)
}

/// The positional's word for every ready-made scenario, on a matrix's
/// scenario axis.
const CATALOG_WORD: &str = "catalog";

/// The matrix's scenarios when the positional names several (a
/// comma-separated list, or `catalog` for every ready-made scenario),
/// each with its run time and whether it names a scheduler of its own;
/// `None` for one scenario; a usage error for a list without
/// `--vm-matrix` or a name that is no scenario.
pub fn scenario_list(args: &super::RunArgs) -> anyhow::Result<Option<Vec<(MatrixScenario, bool)>>> {
    let Some(text) = args.scenario.as_deref() else {
        return Ok(None);
    };
    if text != CATALOG_WORD && !text.contains(',') {
        return Ok(None);
    }
    if !args.vm.vm_matrix {
        return Err(exit::usage(format!(
            "{text}: several scenarios are an axis of --vm-matrix; add --vm-matrix or name one"
        )));
    }
    let names: Vec<&str> = if text == CATALOG_WORD {
        runq_workload::catalog::CATALOG
            .iter()
            .map(|c| c.name)
            .collect()
    } else {
        text.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect()
    };
    let mut list = Vec::new();
    let mut invalid = Vec::new();
    for name in names {
        let mut scn = super::read_scenario(name)?;
        scn.duration = args.duration.unwrap_or(scn.duration);
        if let Err(e) = scn.validate() {
            invalid.push(format!("{name}: {e}"));
        }
        let one = MatrixScenario {
            name: name.to_string(),
            run_for: scn.duration * args.repeat.max(1),
        };
        list.push((one, scn.scheduler.is_some()));
    }
    if let Some(first) = invalid.first() {
        let more = match invalid.len() {
            1 => String::new(),
            n => format!(" (and {} more of the list)", n - 1),
        };
        return Err(exit::usage(format!(
            "{first}{more}; give a longer --duration or leave them out, before any VM boots"
        )));
    }
    Ok(Some(list))
}

/// A matrix (a shard) that could not run writes its error document to
/// `--output` all the same, so that `runq report merge` of a gauntlet's
/// shards sees it skipped (no vng) or failed, not missing.
fn keep_error_document(args: &super::RunArgs, err: anyhow::Error) -> anyhow::Error {
    if let Some(path) = &args.output {
        let doc = super::error_doc::RunErrorDocument::of(&err);
        if let Ok(text) = runq_common::json::to_pretty(&doc) {
            let written = write_atomic(path, format!("{text}\n").as_bytes(), Replace::OwnFile);
            if let Err(e) = written {
                crate::errln!("runq: --output {}: {e}", path.display());
            }
        }
    }
    err
}

/// Prints the guest's report (or JSON, with `host.vm` added), writes
/// `--output` and `--junit` on the host, and exits with the guest's code.
fn bring_out(
    args: &super::RunArgs,
    g: &runq_vm::guest::GuestArgs,
    run: &GuestRun,
) -> anyhow::Result<ExitCode> {
    let rc = run.rc()?;
    let host_evidence = super::evidence::dir(g.evidence.as_deref());
    let brought = run.bring_evidence(&host_evidence);
    for why in &brought.failed {
        crate::errln!("runq: --vm: the guest's evidence: {why}");
    }
    let stdout = brought.rewrite(&run.read("stdout").unwrap_or_default());
    let stderr = brought.rewrite(&run.read("stderr").unwrap_or_default());
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
    if let (Some(path), Ok(text)) = (&g.output, run.output()) {
        let doc = with_vm_facts(&brought.rewrite(&text), facts)? + "\n";
        write_atomic(path, doc.as_bytes(), Replace::OwnFile)
            .map_err(|e| exit::run_error(format!("--output {}: {e}", path.display())))?;
    }
    if let Some(path) = &g.junit {
        let junit = run
            .junit()
            .and_then(|bytes| write_atomic(path, &bytes, Replace::OwnFile));
        junit.map_err(|e| exit::run_error(format!("--junit {}: {e}", path.display())))?;
    }
    Ok(ExitCode::from(rc))
}

/// Prints the document or its table and writes `--output` and `--junit`.
fn print_matrix(
    args: &super::RunArgs,
    doc: &Matrix,
    shard: Shard,
    took: Duration,
) -> anyhow::Result<()> {
    let text = runq_common::json::to_pretty(doc)?;
    if let Some(path) = &args.output {
        let bytes = format!("{text}\n");
        write_atomic(path, bytes.as_bytes(), Replace::OwnFile)
            .map_err(|e| exit::run_error(format!("--output {}: {e}", path.display())))?;
    }
    if args.json {
        crate::outln!("{text}");
    } else {
        if shard != Shard::WHOLE {
            crate::outln!(
                "shard {shard}: {} of the matrix's {} cells",
                doc.shard.cells.len(),
                doc.matrix.cells.len()
            );
        }
        crate::out!("{}", render(&doc.runs, &[]));
    }
    if let Some(path) = &args.junit {
        let name = match shard {
            Shard::WHOLE => "runq run --vm-matrix".to_string(),
            s => format!("runq run --vm-matrix --shard {s}"),
        };
        crate::junit::write(&crate::junit::from_matrix(name, &doc.runs, &[], took), path)?;
    }
    Ok(())
}

/// runq's own arguments, for the guest's command line: one that is not
/// UTF-8 cannot be passed into the guest's script, and is a usage error.
fn host_args_utf8() -> anyhow::Result<Vec<String>> {
    std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string().map_err(|a| {
                exit::usage(format!(
                    "{}: not UTF-8; --vm passes its arguments into the guest as text: rename it",
                    a.to_string_lossy()
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest drops exactly the VM's own flags: those of [`VmArgs`],
    /// as runq-vm's lists name them (a flag added to one and not the
    /// other would reach the guest, or be lost).
    #[test]
    fn the_guests_flag_lists_are_vmargs_flags() {
        use clap::Args as _;
        let cmd = VmArgs::augment_args(clap::Command::new("vm"));
        let (mut values, mut switches) = (Vec::new(), Vec::new());
        for arg in cmd.get_arguments() {
            let long = format!("--{}", arg.get_long().expect("a long flag"));
            if arg.get_action().takes_values() {
                values.push(long);
            } else {
                switches.push(long);
            }
        }
        let sorted = |v: &[&str]| {
            let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        };
        values.sort();
        switches.sort();
        assert_eq!(values, sorted(&runq_vm::guest::VM_VALUE_FLAGS));
        assert_eq!(switches, sorted(&runq_vm::guest::VM_SWITCHES));
    }
}
