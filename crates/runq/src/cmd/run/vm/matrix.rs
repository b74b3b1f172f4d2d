//! `runq run … --vm-matrix`: the same run in one VM per topology, one
//! summary (topology, accelerator, boot time, verdict, failed checks),
//! `--json` for a document, `--junit` with one testcase per topology.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

use super::{boot_and_run, guest, plan, SharedDir, VmFacts};
use crate::exit;
use crate::junit::{Case, Outcome, Suite};
use runq_common::safefile::{write_atomic, Replace};

/// The presets of a matrix when `--topology` gives none: one CPU kind at
/// a time (cores, SMT siblings, NUMA nodes, LLCs), then all together.
const DEFAULT_MATRIX: &str = "1n2c1t,1n1c2t,2n1c1t,1n2l1c1t,2n2c2t";

/// One topology's outcome.
#[derive(Debug, Serialize)]
struct Row {
    topology: String,
    /// The guest runq's exit code (absent when the VM did not run it).
    exit_code: Option<u8>,
    /// `pass`, `fail`, `interrupted`, or absent.
    verdict: Option<String>,
    /// `check[group]` of every failed check.
    failed_checks: Vec<String>,
    /// Why there is no verdict (a boot error, a skip, a run error).
    error: Option<String>,
    /// The VM, when it booted.
    vm: Option<VmFacts>,
}

/// `runq run --vm-matrix --json`: every topology's outcome.
#[derive(Debug, Serialize)]
struct Matrix {
    runs: Vec<Row>,
}

impl runq_common::json::JsonDocument for Matrix {
    const TOOL: &'static str = "runq run --vm-matrix";
    const SCHEMA_VERSION: u32 = 1;
}

/// Runs the matrix and prints its summary.
pub(super) fn run_matrix(
    args: &super::super::RunArgs,
    run_for: Duration,
    scheduler: bool,
) -> anyhow::Result<ExitCode> {
    let list = args.vm.topology.as_deref().unwrap_or(DEFAULT_MATRIX);
    let presets: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let plans = presets
        .iter()
        .map(|p| plan(args, p, scheduler))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let interrupt = runq_kernel::signal::install().context("installing signal handlers")?;
    let host_args: Vec<String> = std::env::args().skip(1).collect();
    let t0 = Instant::now();
    let mut rows = Vec::new();
    for (preset, plan) in presets.iter().zip(&plans) {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let dir = SharedDir::create()?;
        let args_in = matrix_guest_args(&host_args, &dir.0);
        let row = match boot_and_run(args, plan, &args_in, dir, run_for, interrupt) {
            Ok(run) => row_of(preset, &run),
            Err(e) => Row {
                topology: preset.to_string(),
                exit_code: None,
                verdict: None,
                failed_checks: Vec::new(),
                error: Some(e.to_string()),
                vm: None,
            },
        };
        if !args.json {
            crate::errln!(
                "runq: vm-matrix: {} done ({})",
                row.topology,
                row_cell(&row)
            );
        }
        rows.push(row);
    }
    let doc = Matrix { runs: rows };
    let text = runq_common::json::to_pretty(&doc)?;
    let rows = doc.runs;
    if let Some(path) = &args.output {
        let bytes = format!("{text}\n");
        write_atomic(path, bytes.as_bytes(), Replace::OwnFile)
            .map_err(|e| exit::run_error(format!("--output {}: {e}", path.display())))?;
    }
    if args.json {
        crate::outln!("{text}");
    } else {
        crate::out!("{}", render(&rows));
    }
    if let Some(path) = &args.junit {
        crate::junit::write(&suite(&rows, t0.elapsed()), path)?;
    }
    if interrupt.load(Ordering::Relaxed) {
        return Err(exit::interrupted("interrupted; the VM was stopped"));
    }
    Ok(ExitCode::from(matrix_code(&rows)))
}

/// The guest's arguments in a matrix: the host's less the VM flags and
/// the matrix's own outputs, with `--json` (the matrix reads verdicts).
fn matrix_guest_args(host: &[String], dir: &std::path::Path) -> Vec<String> {
    let g = guest::guest_args(host, dir);
    let mut out = Vec::new();
    let mut it = g.args.into_iter();
    while let Some(a) = it.next() {
        if a == "--output" || a == "--junit" {
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

/// A row from a guest run.
fn row_of(preset: &str, run: &super::GuestRun) -> Row {
    let mut row = Row {
        topology: preset.to_string(),
        exit_code: None,
        verdict: None,
        failed_checks: Vec::new(),
        error: None,
        vm: Some(run.facts.clone()),
    };
    match run.rc() {
        Ok(rc) => row.exit_code = Some(rc),
        Err(e) => {
            row.error = Some(e.to_string());
            return row;
        }
    }
    let stdout = run.read("stdout").unwrap_or_default();
    match serde_json::from_str::<Value>(&stdout) {
        Ok(doc) => {
            row.verdict = doc["verdict"].as_str().map(String::from);
            row.failed_checks = doc["checks"]
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
                .collect();
        }
        Err(_) => {
            let err = run.read("stderr").unwrap_or_default();
            row.error = Some(err.lines().last().unwrap_or("no report").to_string());
        }
    }
    row
}

/// The verdict cell of a row.
fn row_cell(row: &Row) -> String {
    match (&row.verdict, &row.error) {
        (Some(v), _) => v.to_uppercase(),
        (None, Some(_)) if row.exit_code == Some(exit::NO_PRIVILEGE) => "SKIP".into(),
        _ => "ERROR".into(),
    }
}

/// The summary table.
fn render(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<10} {:<5} {:>7}  {:<7} {}\n",
        "topology", "accel", "boot", "verdict", "failed checks / why"
    );
    for r in rows {
        let accel = r.vm.as_ref().map_or("-", |v| v.accel);
        let boot = r.vm.as_ref().map_or("-".to_string(), |v| {
            format!("{:.1}s", v.boot_ms as f64 / 1000.0)
        });
        let why = match &r.error {
            Some(e) => e.clone(),
            None if r.failed_checks.is_empty() => "-".into(),
            None => r.failed_checks.join(" "),
        };
        out += &format!(
            "{:<10} {:<5} {:>7}  {:<7} {}\n",
            r.topology,
            accel,
            boot,
            row_cell(r),
            why
        );
    }
    out
}

/// One testcase per topology.
fn suite(rows: &[Row], took: Duration) -> Suite {
    let cases = rows
        .iter()
        .map(|r| {
            let outcome = match row_cell(r).as_str() {
                "PASS" => Outcome::Pass,
                "SKIP" => Outcome::Skipped(r.error.clone().unwrap_or_default()),
                _ => Outcome::Failure {
                    message: r.error.clone().unwrap_or_else(|| r.failed_checks.join(" ")),
                    detail: r.failed_checks.join("\n"),
                },
            };
            Case {
                class: "vm-matrix".into(),
                name: r.topology.clone(),
                outcome,
                output: r
                    .vm
                    .as_ref()
                    .map(|v| format!("{} boot {} ms", v.accel, v.boot_ms))
                    .unwrap_or_default(),
            }
        })
        .collect();
    Suite {
        name: "runq run --vm-matrix".into(),
        time_s: took.as_secs_f64(),
        cases,
    }
}

/// 3 when any topology had no verdict (not a skip), else 1 when any
/// failed, 77 when all were skipped, else 0.
fn matrix_code(rows: &[Row]) -> u8 {
    let cells: Vec<String> = rows.iter().map(row_cell).collect();
    if cells.iter().any(|c| c == "ERROR" || c == "INTERRUPTED") {
        exit::RUN_ERROR
    } else if cells.iter().any(|c| c == "FAIL") {
        exit::CHECK_FAILED
    } else if !cells.is_empty() && cells.iter().all(|c| c == "SKIP") {
        exit::NO_PRIVILEGE
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(verdict: Option<&str>, rc: Option<u8>, error: Option<&str>) -> Row {
        Row {
            topology: "2n2c2t".into(),
            exit_code: rc,
            verdict: verdict.map(String::from),
            failed_checks: Vec::new(),
            error: error.map(String::from),
            vm: None,
        }
    }

    #[test]
    fn the_document_carries_its_envelope() {
        let doc = Matrix {
            runs: vec![row(Some("pass"), Some(0), None)],
        };
        let v: serde_json::Value =
            serde_json::from_str(&runq_common::json::to_pretty(&doc).unwrap()).unwrap();
        assert_eq!(v["tool"], "runq run --vm-matrix");
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["runs"][0]["topology"], "2n2c2t");
    }

    /// A matrix of a passed, a failed, a skipped and an unbooted
    /// topology matches `schemas/run-vm-matrix.schema.json`.
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
        };
        let mut failed = row(Some("fail"), Some(1), None);
        failed.failed_checks = vec!["max_gap_ms[g]".into()];
        failed.vm = Some(vm(Some("KVM_CREATE_VM: permission denied")));
        let mut passed = row(Some("pass"), Some(0), None);
        passed.vm = Some(vm(None));
        let doc = Matrix {
            runs: vec![
                passed,
                failed,
                row(None, Some(77), Some("skipped: no SMT")),
                row(None, None, Some("did not boot")),
            ],
        };
        let v: serde_json::Value =
            serde_json::from_str(&runq_common::json::to_pretty(&doc).unwrap()).unwrap();
        runq_testkit::assert_matches_schema("run-vm-matrix", &v);
    }

    #[test]
    fn matrix_exit_codes() {
        assert_eq!(matrix_code(&[row(Some("pass"), Some(0), None)]), 0);
        assert_eq!(
            matrix_code(&[
                row(Some("pass"), Some(0), None),
                row(Some("fail"), Some(1), None)
            ]),
            1
        );
        assert_eq!(
            matrix_code(&[row(None, Some(77), Some("skipped: no SMT"))]),
            77
        );
        assert_eq!(
            matrix_code(&[
                row(Some("fail"), Some(1), None),
                row(None, None, Some("did not boot"))
            ]),
            3
        );
    }

    #[test]
    fn the_matrix_reads_json_and_keeps_its_own_outputs() {
        let host: Vec<String> =
            "run steady --vm-matrix --topology 1n2c1t,2n2c2t -o m.json --junit j.xml"
                .split_whitespace()
                .map(String::from)
                .collect();
        assert_eq!(
            matrix_guest_args(&host, std::path::Path::new("/tmp/d")),
            ["run", "steady", "--json"]
        );
    }

    #[test]
    fn one_testcase_per_topology() {
        let s = suite(
            &[
                row(Some("pass"), Some(0), None),
                row(None, None, Some("did not boot")),
            ],
            Duration::from_secs(1),
        );
        assert_eq!(s.cases.len(), 2);
        assert_eq!(s.cases[0].outcome, Outcome::Pass);
        assert!(
            matches!(&s.cases[1].outcome, Outcome::Failure { message, .. } if message == "did not boot")
        );
    }
}
