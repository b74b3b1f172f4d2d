//! `runq run … --vm-matrix`: the same run in one VM per topology, summed
//! up in one document (`matrix_doc`): each cell's accelerator, boot time,
//! verdict and failed checks.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::guest;
use crate::matrix_doc::{row_cell, Matrix, MatrixId, Row, ShardPart};
use crate::presets;
use crate::run::{plan, Boot, GuestRun, Notice, Plan, SharedDir, VmConfig};
use crate::shard::{Cell, Shard};
use crate::topology::Topology;
use crate::VmError;

/// The presets of a matrix when `--topology` gives none: one CPU kind at
/// a time (cores, SMT siblings, NUMA nodes, LLCs), then all together.
pub const DEFAULT_MATRIX: &str = "1n2c1t,1n1c2t,2n1c1t,1n2l1c1t,2n2c2t";

/// The matrix's topologies: `--topology`'s comma-separated list, where
/// the word `gauntlet` stands for every preset of [`presets::GAUNTLET`].
fn topologies(list: &str) -> Vec<&str> {
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .flat_map(|p| match p {
            presets::GAUNTLET_WORD => presets::GAUNTLET.to_vec(),
            one => vec![one],
        })
        .collect()
}

/// The matrix's kernel axis: `--kernel`'s comma-separated list when it
/// names two or more kernels (each cell then boots one), else one entry
/// of `None` (every cell boots `--kernel` or the default).
fn kernels(cfg: &VmConfig) -> Vec<Option<String>> {
    let text = cfg.kernel.as_deref().and_then(Path::to_str).unwrap_or("");
    let list: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(String::from)
        .collect();
    if list.len() < 2 {
        return vec![None];
    }
    list.into_iter().map(Some).collect()
}

/// How a cell names its kernel: a distribution kernel by its name, an
/// image by its file name (a cell id holds no `/` of its own).
fn kernel_label(kernel: &str) -> String {
    Path::new(kernel)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| !kernel.contains(':'))
        .unwrap_or(kernel)
        .to_string()
}

/// One cell to run: its id's parts, the preset as given and its kernel.
#[derive(Debug)]
struct CellPlan {
    cell: Cell,
    preset: String,
    kernel: Option<String>,
}

/// The matrix's cells, topologies outside and kernels inside, in
/// `--topology`'s order: the scenario on each preset (named in its normal
/// spelling) and kernel; a cell listed twice is a usage error.
fn cells(scenario: &str, list: &str, kernels: &[Option<String>]) -> Result<Vec<CellPlan>, VmError> {
    let mut out: Vec<CellPlan> = Vec::new();
    for preset in topologies(list) {
        let topo =
            Topology::parse(preset).map_err(|e| VmError::Usage(format!("--topology: {e}")))?;
        for kernel in kernels {
            let cell = Cell {
                scenario: scenario.to_string(),
                topology: topo.to_string(),
                kernel: kernel.as_deref().map(kernel_label),
            };
            if out.iter().any(|c| c.cell == cell) {
                return Err(VmError::Usage(format!(
                    "--topology/--kernel list the cell {} twice; name each once",
                    cell.id()
                )));
            }
            out.push(CellPlan {
                cell,
                preset: preset.to_string(),
                kernel: kernel.clone(),
            });
        }
    }
    Ok(out)
}

/// Runs the matrix's cells of `shard` (all of them for
/// [`Shard::WHOLE`]): `scenario` on every topology of `cfg`'s list
/// (or [`DEFAULT_MATRIX`]), one VM each, runq with the host's arguments
/// `host_args` in it; `notice` hears of each cell's end.
pub fn run_matrix(
    cfg: &VmConfig,
    shard: Shard,
    m: MatrixRun<'_>,
    interrupt: &AtomicBool,
    notice: &mut (dyn FnMut(Notice) + Send),
) -> Result<Matrix, VmError> {
    let list = cfg.topology.as_deref().unwrap_or(DEFAULT_MATRIX);
    let all = cells(m.scenario, list, &kernels(cfg))?;
    let ids: Vec<String> = all.iter().map(|c| c.cell.id()).collect();
    let picked: Vec<String> = shard
        .select(ids.iter().map(String::as_str))
        .into_iter()
        .map(String::from)
        .collect();
    let mut plans = Vec::new();
    for c in &all {
        if picked.contains(&c.cell.id()) {
            let mut cell_cfg = cfg.clone();
            if let Some(k) = &c.kernel {
                cell_cfg.kernel = Some(PathBuf::from(k));
            }
            let p = plan(&cell_cfg, &c.preset, m.patches_text)?;
            plans.push((&c.cell, cell_cfg, p));
        }
    }
    let rows = run_cells(&plans, m, interrupt, notice)?;
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

/// Runs the planned cells, `m.jobs` VMs at a time, and hands back their
/// rows in the cells' order (a cell not started before an interrupt has
/// none).
fn run_cells(
    plans: &[(&Cell, VmConfig, Plan)],
    m: MatrixRun<'_>,
    interrupt: &AtomicBool,
    notice: &mut (dyn FnMut(Notice) + Send),
) -> Result<Vec<Row>, VmError> {
    let next = AtomicUsize::new(0);
    let notice = Mutex::new(notice);
    let rows: Mutex<Vec<Option<Row>>> = Mutex::new(plans.iter().map(|_| None).collect());
    let worker = || -> Result<(), VmError> {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((cell, cfg, plan)) = plans.get(i) else {
                return Ok(());
            };
            if interrupt.load(Ordering::Relaxed) {
                return Ok(());
            }
            let mut tell = |n: Notice| (notice.lock().unwrap_or_else(|e| e.into_inner()))(n);
            let row = run_cell(cell, cfg, plan, m, interrupt, &mut tell)?;
            tell(Notice::CellDone {
                cell: row.cell.clone(),
                verdict: row_cell(&row),
            });
            rows.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(row);
        }
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..m.jobs.clamp(1, plans.len().max(1)))
            .map(|_| s.spawn(worker))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or(Ok(())))
    })?;
    let rows = rows.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(rows.into_iter().flatten().collect())
}

/// One cell in a VM of its own: its row, with the verdict or the reason
/// there is none.
fn run_cell(
    cell: &Cell,
    cfg: &VmConfig,
    plan: &Plan,
    m: MatrixRun<'_>,
    interrupt: &AtomicBool,
    notice: &mut dyn FnMut(Notice),
) -> Result<Row, VmError> {
    let dir = SharedDir::create()?;
    let args_in = matrix_guest_args(m.host_args, dir.path());
    let mut row = empty_row(cell);
    let boot = Boot {
        cfg,
        plan,
        run_for: m.run_for,
        interrupt,
    };
    match boot.run(&args_in, dir, notice) {
        Ok(run) => fill_row(&mut row, &run),
        Err(e) => row.error = Some(e.to_string()),
    }
    Ok(row)
}

/// What a matrix runs in each of its VMs.
#[derive(Debug, Clone, Copy)]
pub struct MatrixRun<'a> {
    /// The scenario's name (the cells' first part).
    pub scenario: &'a str,
    /// runq's arguments on the host, after the program name.
    pub host_args: &'a [String],
    /// How long the run lasts in each guest.
    pub run_for: Duration,
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

/// The guest's arguments in a matrix: the host's less the VM flags and
/// the matrix's own outputs, with `--json` (the matrix reads verdicts).
fn matrix_guest_args(host: &[String], dir: &std::path::Path) -> Vec<String> {
    let g = guest::guest_args(host, dir);
    let mut out = Vec::new();
    let mut it = g.args.into_iter();
    while let Some(a) = it.next() {
        if a == "--output" || a == "--junit" || a == "--evidence-dir" {
            it.next();
        } else {
            out.push(a);
        }
    }
    if !out.iter().any(|a| a == "--json") {
        out.push("--json".into());
    }
    out
}

/// A cell's row before its run.
fn empty_row(cell: &Cell) -> Row {
    Row {
        cell: cell.id(),
        scenario: cell.scenario.clone(),
        topology: cell.topology.clone(),
        exit_code: None,
        verdict: None,
        failed_checks: Vec::new(),
        error: None,
        vm: None,
    }
}

/// Fills a row from a guest run.
fn fill_row(row: &mut Row, run: &GuestRun) {
    row.vm = serde_json::to_value(&run.facts).ok();
    match run.rc() {
        Ok(rc) => row.exit_code = Some(rc),
        Err(e) => {
            row.error = Some(e.to_string());
            return;
        }
    }
    let stdout = run.read("stdout").unwrap_or_default();
    match serde_json::from_str::<Value>(&stdout) {
        Ok(doc) => {
            row.verdict = doc["verdict"].as_str().map(String::from);
            row.failed_checks = failed_checks(&doc);
        }
        Err(_) => {
            let err = run.read("stderr").unwrap_or_default();
            row.error = Some(err.lines().last().unwrap_or("no report").to_string());
        }
    }
}

/// A run document's failed checks, as `name[group]`.
pub fn failed_checks(doc: &Value) -> Vec<String> {
    doc["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["pass"] == false)
        .map(|c| {
            format!(
                "{}[{}]",
                c["name"].as_str().unwrap_or("?"),
                c["group"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_doc::tests::row;
    use crate::VmFacts;

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
    fn the_matrix_reads_json_and_keeps_its_own_outputs() {
        let host = words(
            "run steady --vm-matrix --topology 1n2c1t,2n2c2t --shard 1/2 -o m.json --junit j.xml",
        );
        assert_eq!(
            matrix_guest_args(&host, std::path::Path::new("/tmp/d")),
            ["run", "steady", "--json"]
        );
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

    #[test]
    fn cells_are_named_in_normal_spelling_and_listed_once() {
        let one = [None];
        let c = cells("steady", "4c, 2n1l2c2t,,1n2l1c1t", &one).unwrap();
        let ids: Vec<String> = c.iter().map(|c| c.cell.id()).collect();
        assert_eq!(ids, ["steady/1n4c1t", "steady/2n2c2t", "steady/1n2l1c1t"]);
        assert_eq!(c[1].preset, "2n1l2c2t", "the preset as given boots the VM");
        let e = cells("steady", "2n2c2t,2n1l2c2t", &one)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the cell steady/2n2c2t twice"), "{e}");
        assert_eq!(
            cells("steady", DEFAULT_MATRIX, &one).unwrap().len(),
            5,
            "the default matrix"
        );
        let g = cells("steady", "gauntlet", &one).unwrap();
        assert_eq!(g.len(), presets::GAUNTLET.len());
        assert_eq!(g[19].cell.id(), "steady/2n2l4c1t");
        assert_eq!(g[19].preset, "2numa-16cpu-4llc-nosmt");
    }

    #[test]
    fn a_kernel_list_is_an_axis_inside_each_topology() {
        let cfg = |k: &str| VmConfig {
            kernel: Some(PathBuf::from(k)),
            topology: None,
            memory: "2G".into(),
            boot_timeout: Duration::from_secs(1),
            accel: crate::Accel::Tcg,
            tcg_threads: crate::TcgThreads::Auto,
            disk_mib: None,
            net: false,
        };
        assert_eq!(kernels(&cfg("/boot/vmlinuz-6.1.0-56-amd64")), [None]);
        let axis = kernels(&cfg("debian:6.12-rt, /boot/vmlinuz-6.1.0-56-amd64"));
        assert_eq!(axis.len(), 2);
        let c = cells("steady", "4c,2n2c1t", &axis).unwrap();
        let ids: Vec<String> = c.iter().map(|c| c.cell.id()).collect();
        assert_eq!(
            ids,
            [
                "steady/1n4c1t/debian:6.12-rt",
                "steady/1n4c1t/vmlinuz-6.1.0-56-amd64",
                "steady/2n2c1t/debian:6.12-rt",
                "steady/2n2c1t/vmlinuz-6.1.0-56-amd64",
            ]
        );
        assert_eq!(c[1].kernel.as_deref(), Some("/boot/vmlinuz-6.1.0-56-amd64"));
    }
}
