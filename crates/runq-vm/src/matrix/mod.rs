//! `runq run … --vm-matrix`: the same run on every cell of the matrix's
//! axes (`axes`: scenarios, topologies, kernels, schedulers), one VM for
//! the scenarios of each topology, kernel and scheduler, summed up in one
//! document (`matrix_doc`): each cell's accelerator, boot time, verdict,
//! failed checks and every check's values (`rows`).

mod axes;
mod guest_args;
mod rows;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::guest::GuestCommand;
use crate::matrix_doc::{row_cell, Matrix, MatrixId, Row, ShardPart};
use crate::run::{plan, Boot, Notice, Plan, VmConfig};
use crate::shard::Shard;
use crate::shared_dir::SharedDir;
use crate::VmError;

pub use axes::{schedulers, MatrixScenario, SchedulerCell, KERNEL_SCHEDULER};
pub use rows::failed_checks;

use axes::{cells, kernels, Axes, CellPlan};
use guest_args::{cell_args, matrix_guest_args};
use rows::{empty_row, fill_row};

/// The presets of a matrix when `--topology` gives none: one CPU kind at
/// a time (cores, SMT siblings, NUMA nodes, LLCs), then all together.
pub const DEFAULT_MATRIX: &str = "1n2c1t,1n1c2t,2n1c1t,1n2l1c1t,2n2c2t";

/// What a guest takes beyond its runs' own time: runq's start and
/// report under software emulation, a scheduler's start and stop.
const PER_RUN_SLACK: Duration = Duration::from_secs(60);

/// One VM of the matrix: its configuration, its plan, and the cells it
/// runs in turn (their indexes into the matrix's list).
struct VmPlan<'a> {
    cfg: VmConfig,
    plan: Plan,
    cells: Vec<&'a CellPlan>,
}

/// Runs the matrix's cells of `shard` (all of them for
/// [`Shard::WHOLE`]): each scenario of `m` on every topology of `cfg`'s
/// list (or [`DEFAULT_MATRIX`]), kernel and scheduler, one VM for the
/// scenarios of each topology, kernel and scheduler, runq with the host's
/// arguments `host_args` in it; `notice` hears of each cell's end.
pub fn run_matrix(
    cfg: &VmConfig,
    shard: Shard,
    m: MatrixRun<'_>,
    interrupt: &AtomicBool,
    notice: &mut (dyn FnMut(Notice) + Send),
) -> Result<Matrix, VmError> {
    let kernel_axis = kernels(cfg.kernel.as_deref());
    let all = cells(&Axes {
        scenarios: m.scenarios,
        topologies: cfg.topology.as_deref().unwrap_or(DEFAULT_MATRIX),
        kernels: &kernel_axis,
        schedulers: m.schedulers,
    })?;
    let ids: Vec<String> = all.iter().map(|c| c.cell.id()).collect();
    let picked: Vec<String> = shard
        .select(ids.iter().map(String::as_str))
        .into_iter()
        .map(String::from)
        .collect();
    let vms = vm_plans(cfg, &all, &picked, m.patches_text)?;
    let rows = run_vms(&vms, m, interrupt, notice)?;
    let mut sorted_ids = ids;
    sorted_ids.sort();
    Ok(Matrix {
        matrix: MatrixId {
            cells: sorted_ids,
            args: matrix_args(m.host_args),
        },
        shard: ShardPart {
            index: shard.index,
            count: shard.count,
            cells: picked,
        },
        runs: rows,
    })
}

/// The VMs that run the `picked` cells: neighbours that boot the same VM
/// share one.
fn vm_plans<'a>(
    cfg: &VmConfig,
    all: &'a [CellPlan],
    picked: &[String],
    patches_text: bool,
) -> Result<Vec<VmPlan<'a>>, VmError> {
    let mut vms: Vec<VmPlan<'a>> = Vec::new();
    for c in all.iter().filter(|c| picked.contains(&c.cell.id())) {
        if let Some(vm) = vms.last_mut().filter(|vm| vm.cells[0].same_vm(c)) {
            vm.cells.push(c);
            continue;
        }
        let mut cell_cfg = cfg.clone();
        if let Some(k) = &c.kernel {
            cell_cfg.kernel = Some(PathBuf::from(k));
        }
        let attaches = c
            .scheduler
            .as_ref()
            .map_or(patches_text, |s| s.command.is_some() || patches_text);
        let plan = plan(&cell_cfg, &c.preset, attaches)?;
        vms.push(VmPlan {
            cfg: cell_cfg,
            plan,
            cells: vec![c],
        });
    }
    Ok(vms)
}

/// Runs the planned VMs, `m.jobs` at a time, and hands back their rows
/// in the cells' order (a VM not started before an interrupt has none).
fn run_vms(
    vms: &[VmPlan<'_>],
    m: MatrixRun<'_>,
    interrupt: &AtomicBool,
    notice: &mut (dyn FnMut(Notice) + Send),
) -> Result<Vec<Row>, VmError> {
    let next = AtomicUsize::new(0);
    let notice = Mutex::new(notice);
    let rows: Mutex<Vec<Vec<Row>>> = Mutex::new(vms.iter().map(|_| Vec::new()).collect());
    let worker = || -> Result<(), VmError> {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(vm) = vms.get(i) else {
                return Ok(());
            };
            if interrupt.load(Ordering::Relaxed) {
                return Ok(());
            }
            let mut tell = |n: Notice| (notice.lock().unwrap_or_else(|e| e.into_inner()))(n);
            let got = run_vm(vm, m, interrupt, &mut tell)?;
            for row in &got {
                tell(Notice::CellDone {
                    cell: row.cell.clone(),
                    verdict: row_cell(row),
                });
            }
            rows.lock().unwrap_or_else(|e| e.into_inner())[i] = got;
        }
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..m.jobs.clamp(1, vms.len().max(1)))
            .map(|_| s.spawn(worker))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or(Ok(())))
    })?;
    let rows = rows.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(rows.into_iter().flatten().collect())
}

/// One VM: its cells' scenarios in turn, a row each, with the verdict or
/// the reason there is none (a VM that did not boot gives its reason to
/// every row).
fn run_vm(
    vm: &VmPlan<'_>,
    m: MatrixRun<'_>,
    interrupt: &AtomicBool,
    notice: &mut dyn FnMut(Notice),
) -> Result<Vec<Row>, VmError> {
    let dir = SharedDir::create()?;
    let base = matrix_guest_args(m.host_args, dir.path());
    let runs: Vec<GuestCommand> = vm
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| GuestCommand {
            args: cell_args(
                &base,
                m.scenario_arg,
                &c.scenario.name,
                c.scheduler.as_ref(),
            ),
            files: format!("{i}."),
            limit_s: Some((c.scenario.run_for + PER_RUN_SLACK * 2).as_secs()),
        })
        .collect();
    let run_for = vm
        .cells
        .iter()
        .map(|c| c.scenario.run_for + PER_RUN_SLACK)
        .sum();
    let boot = Boot {
        cfg: &vm.cfg,
        plan: &vm.plan,
        run_for,
        interrupt,
    };
    let mut rows: Vec<Row> = vm.cells.iter().map(|c| empty_row(&c.cell)).collect();
    match boot.run(&runs, dir, notice) {
        Ok(run) => {
            for (i, row) in rows.iter_mut().enumerate() {
                fill_row(row, &run, &format!("{i}."));
            }
        }
        Err(e) => rows.iter_mut().for_each(|r| r.error = Some(e.to_string())),
    }
    Ok(rows)
}

/// What a matrix runs in each of its VMs.
#[derive(Debug, Clone, Copy)]
pub struct MatrixRun<'a> {
    /// The scenarios (the cells' first part).
    pub scenarios: &'a [MatrixScenario],
    /// The scenario argument as the host was given it (a list, `catalog`),
    /// which each guest run replaces with its own scenario.
    pub scenario_arg: Option<&'a str>,
    /// The scheduler axis (empty: none).
    pub schedulers: &'a [SchedulerCell],
    /// runq's arguments on the host, after the program name.
    pub host_args: &'a [String],
    /// Whether the run attaches a BPF scheduler or tracepoints (which
    /// patch the kernel's text: see [`crate::run::plan`]).
    pub patches_text: bool,
    /// How many VMs run at once (`--jobs`).
    pub jobs: usize,
}

/// The arguments that make a matrix (`matrix.args`): runq's less the
/// shard, the outputs and the flags that only change what is printed.
fn matrix_args(host: &[String]) -> Vec<String> {
    const VALUED: [&str; 6] = ["--shard", "--jobs", "--output", "-o", "--junit", "--color"];
    let mut out = Vec::new();
    let mut it = host.iter();
    while let Some(a) = it.next() {
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        if VALUED.contains(&flag) {
            if !a.contains('=') {
                it.next();
            }
        } else if a == "--json"
            || a == "--verbose"
            || (a.starts_with("-v") && a[1..].chars().all(|c| c == 'v'))
            || (a.starts_with("-o") && a.len() > 2)
        {
        } else {
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_doc::tests::row;
    use crate::VmFacts;
    use serde_json::Value;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    /// A two-cell matrix's shard 2 of 2.
    fn doc(runs: Vec<Row>) -> Matrix {
        Matrix {
            matrix: MatrixId {
                cells: vec!["steady/1n2c1t".into(), "steady/2n2c2t".into()],
                args: words("run steady --vm-matrix --topology 1n2c1t,2n2c2t"),
            },
            shard: ShardPart {
                index: 2,
                count: 2,
                cells: vec!["steady/2n2c2t".into()],
            },
            runs,
        }
    }

    #[test]
    fn the_document_carries_its_envelope_and_shard() {
        let v: Value = serde_json::from_str(
            &runq_common::json::to_pretty(&doc(vec![row(Some("pass"), Some(0), None)])).unwrap(),
        )
        .unwrap();
        assert_eq!(v["tool"], "runq run --vm-matrix");
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["shard"]["index"], 2);
        assert_eq!(v["shard"]["count"], 2);
        assert_eq!(v["runs"][0]["cell"], "steady/2n2c2t");
        assert_eq!(v["runs"][0]["topology"], "2n2c2t");
    }

    /// A shard of a passed, a failed, a skipped and an unbooted cell
    /// matches `schemas/run-vm-matrix.schema.json`.
    #[test]
    fn the_document_matches_its_schema() {
        let vm = |kvm_failed: Option<&str>| VmFacts {
            accel: if kvm_failed.is_some() { "tcg" } else { "kvm" },
            kvm_failed: kvm_failed.map(String::from),
            topology: "2n2c2t".into(),
            cpus: 8,
            numa_nodes: 2,
            threads_per_core: 2,
            memory_mib: 2048,
            kernel_image: "/boot/vmlinuz".into(),
            boot_ms: 4_200,
            tcg_threads: kvm_failed.map(|_| "single"),
            retried_after: kvm_failed.map(|_| "the VM stopped before runq started: Oops".into()),
            disk: None,
            net: None,
            guest_topology: crate::guest_topology::GuestTopology::parse(
                "cpu 0 0-1 0-3 0\ncpu 1 0-1 0-3 0\ncpu 2 2-3 0-3 0\ncpu 3 2-3 0-3 0\n\
                 cpu 4 4-5 4-7 1\ncpu 5 4-5 4-7 1\ncpu 6 6-7 4-7 1\ncpu 7 6-7 4-7 1\n\
                 node 0 10 20\nnode 1 20 10\n",
            ),
        };
        let mut failed = row(Some("fail"), Some(1), None);
        failed.failed_checks = vec!["max_gap_ms[g]".into()];
        failed.vm = serde_json::to_value(vm(Some("KVM_CREATE_VM: permission denied"))).ok();
        let mut passed = row(Some("pass"), Some(0), None);
        passed.vm = serde_json::to_value(vm(None)).ok();
        let doc = doc(vec![
            passed,
            failed,
            row(None, Some(77), Some("skipped: no SMT")),
            row(None, None, Some("did not boot")),
        ]);
        let v: Value = serde_json::from_str(&runq_common::json::to_pretty(&doc).unwrap()).unwrap();
        runq_testkit::assert_matches_schema("run-vm-matrix", &v);
        let back: Matrix = serde_json::from_value(v).expect("merge reads what run writes");
        assert_eq!(back.runs.len(), 4);
        assert_eq!(back.shard, doc.shard);
    }

    #[test]
    fn the_matrix_is_its_arguments_less_shard_and_outputs() {
        let a = words("run steady --vm-matrix --shard 1/4 -o a.json --junit a.xml --json");
        let b = words(
            "-vv run steady --vm-matrix --shard=3/4 --output=b.json -ob2 --color never --jobs 2",
        );
        assert_eq!(matrix_args(&a), words("run steady --vm-matrix"));
        assert_eq!(matrix_args(&b), matrix_args(&a));
        let c = words("run steady --vm-matrix --duration 2s --shard 1/4");
        assert_ne!(matrix_args(&c), matrix_args(&a));
    }
}
