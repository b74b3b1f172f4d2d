//! The guest's command line of one matrix cell: the host's less the VM
//! flags and the matrix's own outputs, with `--json`, its own scenario in
//! place of the matrix's list, and its own scheduler in place of the
//! axis.

use std::path::Path;

use crate::guest;

use super::axes::SchedulerCell;

/// The guest's arguments in a matrix: the host's less the VM flags and
/// the matrix's own outputs, with `--json` (the matrix reads verdicts).
pub(super) fn matrix_guest_args(host: &[String], dir: &Path) -> Vec<String> {
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

/// The scheduler flags that take a value.
const SCHEDULER_VALUED: [&str; 4] = [
    "--scheduler",
    "--scheduler-ready-pattern",
    "--scheduler-ready-after",
    "--scheduler-ready-timeout",
];

/// `args` for one cell: the scenario list `listed` (the positional after
/// `run`, as given) replaced by `scenario`, and, on a scheduler axis,
/// every `--scheduler` replaced by the cell's (the kernel's own drops the
/// readiness flags too, which need a scheduler).
pub(super) fn cell_args(
    args: &[String],
    listed: Option<&str>,
    scenario: &str,
    scheduler: Option<&SchedulerCell>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_run = false;
    let mut replaced = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        if scheduler.is_some() && drops(flag, scheduler) {
            if SCHEDULER_VALUED.contains(&flag) && !a.contains('=') {
                it.next();
            }
            continue;
        }
        if after_run && !replaced && Some(a.as_str()) == listed {
            out.push(scenario.to_string());
            replaced = true;
            continue;
        }
        after_run |= a == "run";
        out.push(a.clone());
    }
    if let Some(cmd) = scheduler.and_then(|s| s.command.as_ref()) {
        out.push("--scheduler".into());
        out.push(cmd.clone());
    }
    out
}

/// Whether the scheduler axis drops `flag` from a cell's arguments.
fn drops(flag: &str, scheduler: Option<&SchedulerCell>) -> bool {
    let kernel = scheduler.is_some_and(|s| s.command.is_none());
    flag == "--scheduler" || (kernel && flag.starts_with("--scheduler-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_matrix_reads_json_and_keeps_its_own_outputs() {
        let host = words(
            "run steady --vm-matrix --topology 1n2c1t,2n2c2t --shard 1/2 -o m.json --junit j.xml",
        );
        assert_eq!(
            matrix_guest_args(&host, Path::new("/tmp/d")),
            ["run", "steady", "--json"]
        );
    }

    #[test]
    fn a_cell_runs_its_own_scenario_under_its_own_scheduler() {
        let args = words(
            "-v run catalog --duration 1s --scheduler /a/scx_simple --scheduler=/a/scx_qmap \
             --scheduler-ready-sched-ext --scheduler-ready-timeout 60s --json",
        );
        let simple = SchedulerCell {
            label: "scx_simple".into(),
            command: Some("/a/scx_simple".into()),
        };
        assert_eq!(
            cell_args(&args, Some("catalog"), "steady", Some(&simple)),
            words(
                "-v run steady --duration 1s --scheduler-ready-sched-ext \
                 --scheduler-ready-timeout 60s --json --scheduler /a/scx_simple"
            )
        );
        let kernel = SchedulerCell {
            label: "kernel".into(),
            command: None,
        };
        assert_eq!(
            cell_args(&args, Some("catalog"), "steady", Some(&kernel)),
            words("-v run steady --duration 1s --json")
        );
        let lone = words("run steady --scheduler x --json");
        assert_eq!(cell_args(&lone, Some("steady"), "steady", None), lone);
    }
}
