//! A matrix's axes and its cells: scenarios (one, a list, or the whole
//! catalog), topologies (`--topology`'s list, `gauntlet`), kernels
//! (`--kernel`'s list) and schedulers (`--scheduler` given twice or
//! more, `kernel` for the kernel's own). Cells are listed topologies
//! outside, then kernels, then schedulers, scenarios inside, so that the
//! scenarios of one VM are neighbours.

use std::path::Path;
use std::time::Duration;

use crate::presets;
use crate::shard::Cell;
use crate::topology::Topology;
use crate::VmError;

/// The scheduler axis's word for the kernel's own scheduler (no BPF
/// scheduler attached).
pub const KERNEL_SCHEDULER: &str = "kernel";

/// One scenario of the matrix and how long its run lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixScenario {
    /// Its name (or file), as the guest's `runq run` takes it.
    pub name: String,
    /// Its duration times its repeats.
    pub run_for: Duration,
}

/// One scheduler of the axis: its label in the cell's id and the command
/// the guest starts (`None`: the kernel's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerCell {
    /// `scx_simple`, `scx_qmap -t 5`, `kernel`.
    pub label: String,
    /// `--scheduler`'s command.
    pub command: Option<String>,
}

/// The scheduler axis of `--scheduler`'s values: none for fewer than two
/// (a lone `--scheduler` stays in every cell's arguments), else one
/// entry each, labelled by the program's file name and its arguments; a
/// label given twice is a usage error.
pub fn schedulers(given: &[String]) -> Result<Vec<SchedulerCell>, VmError> {
    if given.len() < 2 {
        return Ok(Vec::new());
    }
    let mut out: Vec<SchedulerCell> = Vec::new();
    for cmd in given {
        let cell = scheduler_cell(cmd);
        if out.iter().any(|s| s.label == cell.label) {
            return Err(VmError::Usage(format!(
                "--scheduler {:?} is on the matrix's scheduler axis twice; name each once",
                cell.label
            )));
        }
        out.push(cell);
    }
    Ok(out)
}

/// The axis entry of one `--scheduler` value.
fn scheduler_cell(cmd: &str) -> SchedulerCell {
    let cmd = cmd.trim();
    if cmd == KERNEL_SCHEDULER {
        return SchedulerCell {
            label: KERNEL_SCHEDULER.into(),
            command: None,
        };
    }
    let mut words = cmd.split_whitespace();
    let program = words.next().unwrap_or_default();
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    let label = std::iter::once(name)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ");
    SchedulerCell {
        label,
        command: Some(cmd.to_string()),
    }
}

/// The matrix's topologies: `--topology`'s comma-separated list, where
/// the word `gauntlet` stands for every preset of [`presets::GAUNTLET`].
pub(super) fn topologies(list: &str) -> Vec<&str> {
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
pub(super) fn kernels(given: Option<&Path>) -> Vec<Option<String>> {
    let text = given.and_then(Path::to_str).unwrap_or("");
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

/// One cell to run: its id's parts, the preset as given, its kernel,
/// its scheduler (when the matrix has that axis) and its scenario.
#[derive(Debug)]
pub(super) struct CellPlan {
    pub(super) cell: Cell,
    pub(super) preset: String,
    pub(super) kernel: Option<String>,
    pub(super) scheduler: Option<SchedulerCell>,
    pub(super) scenario: MatrixScenario,
}

impl CellPlan {
    /// Whether `other` boots the same VM: the same preset, kernel and
    /// scheduler.
    pub(super) fn same_vm(&self, other: &CellPlan) -> bool {
        self.preset == other.preset
            && self.kernel == other.kernel
            && self.scheduler == other.scheduler
    }
}

/// The axes of a matrix, as given.
pub(super) struct Axes<'a> {
    pub(super) scenarios: &'a [MatrixScenario],
    pub(super) topologies: &'a str,
    pub(super) kernels: &'a [Option<String>],
    pub(super) schedulers: &'a [SchedulerCell],
}

/// The matrix's cells in the order of the module's doc; topologies are
/// named in their normal spelling, and a cell listed twice is a usage
/// error.
pub(super) fn cells(axes: &Axes<'_>) -> Result<Vec<CellPlan>, VmError> {
    let schedulers: Vec<Option<&SchedulerCell>> = if axes.schedulers.is_empty() {
        vec![None]
    } else {
        axes.schedulers.iter().map(Some).collect()
    };
    let mut out: Vec<CellPlan> = Vec::new();
    for preset in topologies(axes.topologies) {
        let topo =
            Topology::parse(preset).map_err(|e| VmError::Usage(format!("--topology: {e}")))?;
        for kernel in axes.kernels {
            for sched in &schedulers {
                for scenario in axes.scenarios {
                    let cell = Cell {
                        scenario: scenario.name.clone(),
                        topology: topo.to_string(),
                        kernel: kernel.as_deref().map(kernel_label),
                        scheduler: sched.map(|s| s.label.clone()),
                    };
                    if out.iter().any(|c| c.cell == cell) {
                        return Err(VmError::Usage(format!(
                            "the matrix's axes list the cell {} twice; name each once",
                            cell.id()
                        )));
                    }
                    out.push(CellPlan {
                        cell,
                        preset: preset.to_string(),
                        kernel: kernel.clone(),
                        scheduler: sched.cloned(),
                        scenario: scenario.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str) -> Vec<MatrixScenario> {
        vec![MatrixScenario {
            name: name.into(),
            run_for: Duration::from_secs(3),
        }]
    }

    fn axes<'a>(
        scenarios: &'a [MatrixScenario],
        topologies: &'a str,
        kernels: &'a [Option<String>],
    ) -> Axes<'a> {
        Axes {
            scenarios,
            topologies,
            kernels,
            schedulers: &[],
        }
    }

    fn ids(c: &[CellPlan]) -> Vec<String> {
        c.iter().map(|c| c.cell.id()).collect()
    }

    #[test]
    fn cells_are_named_in_normal_spelling_and_listed_once() {
        let (one, steady) = ([None], one("steady"));
        let c = cells(&axes(&steady, "4c, 2n1l2c2t,,1n2l1c1t", &one)).unwrap();
        assert_eq!(
            ids(&c),
            ["steady/1n4c1t", "steady/2n2c2t", "steady/1n2l1c1t"]
        );
        assert_eq!(c[1].preset, "2n1l2c2t", "the preset as given boots the VM");
        let e = cells(&axes(&steady, "2n2c2t,2n1l2c2t", &one))
            .unwrap_err()
            .to_string();
        assert!(e.contains("the cell steady/2n2c2t twice"), "{e}");
        let default = cells(&axes(&steady, super::super::DEFAULT_MATRIX, &one)).unwrap();
        assert_eq!(default.len(), 5, "the default matrix");
        let g = cells(&axes(&steady, "gauntlet", &one)).unwrap();
        assert_eq!(g.len(), presets::GAUNTLET.len());
        assert_eq!(g[19].cell.id(), "steady/2n2l4c1t");
        assert_eq!(g[19].preset, "2numa-16cpu-4llc-nosmt");
    }

    #[test]
    fn a_kernel_list_is_an_axis_inside_each_topology() {
        assert_eq!(
            kernels(Some(Path::new("/boot/vmlinuz-6.1.0-56-amd64"))),
            [None]
        );
        let axis = kernels(Some(Path::new(
            "debian:6.12-rt, /boot/vmlinuz-6.1.0-56-amd64",
        )));
        assert_eq!(axis.len(), 2);
        let steady = one("steady");
        let c = cells(&axes(&steady, "4c,2n2c1t", &axis)).unwrap();
        assert_eq!(
            ids(&c),
            [
                "steady/1n4c1t/debian:6.12-rt",
                "steady/1n4c1t/vmlinuz-6.1.0-56-amd64",
                "steady/2n2c1t/debian:6.12-rt",
                "steady/2n2c1t/vmlinuz-6.1.0-56-amd64",
            ]
        );
        assert_eq!(c[1].kernel.as_deref(), Some("/boot/vmlinuz-6.1.0-56-amd64"));
    }

    #[test]
    fn schedulers_are_an_axis_with_the_scenarios_of_one_vm_together() {
        let given: Vec<String> = ["kernel", "/cache/scx/scx_simple", "scx_qmap -t 5"]
            .map(String::from)
            .to_vec();
        let axis = schedulers(&given).unwrap();
        let labels: Vec<&str> = axis.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["kernel", "scx_simple", "scx_qmap -t 5"]);
        assert_eq!(axis[0].command, None, "the kernel's own starts nothing");
        assert_eq!(axis[1].command.as_deref(), Some("/cache/scx/scx_simple"));
        let two = [one("steady"), one("mixed_workloads")].concat();
        let c = cells(&Axes {
            schedulers: &axis,
            ..axes(&two, "1n4c1t", &[None])
        })
        .unwrap();
        assert_eq!(
            ids(&c)[..3],
            [
                "steady/1n4c1t@kernel",
                "mixed_workloads/1n4c1t@kernel",
                "steady/1n4c1t@scx_simple",
            ]
        );
        assert!(c[0].same_vm(&c[1]) && !c[1].same_vm(&c[2]));
        assert!(
            schedulers(&given[1..2]).unwrap().is_empty(),
            "one is no axis"
        );
        let twice = ["scx_simple".to_string(), "/other/scx_simple".to_string()];
        let e = schedulers(&twice).unwrap_err().to_string();
        assert!(
            e.contains("\"scx_simple\" is on the matrix's scheduler axis twice"),
            "{e}"
        );
    }
}
