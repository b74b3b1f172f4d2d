//! End-to-end tests of `runq run --repeat/--output/--junit` and
//! `runq compare` on real runs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::runq;
use quick_xml::events::Event;
use quick_xml::reader::Reader;
use serde_json::Value;

/// A testcase read back from JUnit XML: (classname, name) -> outcome
/// (`pass`, `failure`, `skipped`).
type Cases = BTreeMap<(String, String), &'static str>;

/// Parses a JUnit file with a real XML parser; checks the suite's counts
/// against its testcases.
fn parse_junit(path: &Path) -> Cases {
    let text = std::fs::read_to_string(path).unwrap();
    let mut reader = Reader::from_str(&text);
    let mut cases = Cases::new();
    let mut current = None;
    let mut counts = BTreeMap::new();
    let attr = |e: &quick_xml::events::BytesStart, key: &[u8]| -> String {
        e.attributes()
            .map(|a| a.unwrap())
            .find(|a| a.key.as_ref() == key)
            .map(|a| {
                a.normalized_value(quick_xml::XmlVersion::Explicit1_0)
                    .unwrap()
                    .into_owned()
            })
            .unwrap_or_default()
    };
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"testsuite" => {
                    for k in ["tests", "failures", "skipped"] {
                        counts.insert(k, attr(&e, k.as_bytes()).parse::<usize>().unwrap());
                    }
                }
                b"testcase" => {
                    let key = (attr(&e, b"classname"), attr(&e, b"name"));
                    cases.insert(key.clone(), "pass");
                    current = Some(key);
                }
                b"failure" => *cases.get_mut(current.as_ref().unwrap()).unwrap() = "failure",
                b"skipped" => *cases.get_mut(current.as_ref().unwrap()).unwrap() = "skipped",
                _ => {}
            },
            _ => {}
        }
    }
    let n = |o: &str| cases.values().filter(|v| **v == o).count();
    assert_eq!(counts["tests"], cases.len());
    assert_eq!(counts["failures"], n("failure"));
    assert_eq!(counts["skipped"], n("skipped"));
    cases
}

fn run_ok(args: &[&str]) -> std::process::Output {
    let out = runq().args(args).output().unwrap();
    assert!(
        out.status.code().is_some(),
        "runq {args:?} was killed; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Four short PipeIo repeats saved to `dir/name`, with a JUnit report.
fn saved_run(dir: &Path, name: &str) -> (std::path::PathBuf, Value) {
    let path = dir.join(name);
    let junit = dir.join(format!("{name}.xml"));
    let out = run_ok(&[
        "run",
        "--work-type",
        "PipeIo",
        "--workers",
        "2",
        "--duration",
        "300ms",
        "--repeat",
        "4",
        "--output",
        path.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    // The verdict is the host's (a loaded host can miss a bound); the
    // exit code, the saved document and the JUnit report must agree on it.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let passed = doc["verdict"] == "pass";
    assert_eq!(
        out.status.code(),
        Some(if passed { 0 } else { 1 }),
        "{}",
        stderr(&out)
    );
    let cases = parse_junit(&junit);
    assert!(!cases.is_empty());
    assert!(cases.keys().all(|(g, _)| g == "PipeIo"), "{cases:?}");
    assert!(cases.contains_key(&("PipeIo".into(), "max_gap_ms".into())));
    assert_eq!(cases.values().all(|o| *o == "pass"), passed, "{cases:?}");
    (path, doc)
}

fn compare(a: &Path, b: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["compare", a.to_str().unwrap(), b.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_ok(&args)
}

#[test]
fn repeat_output_compare_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let (a, doc) = saved_run(dir.path(), "a.json");
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["tool"], "runq run");
    assert!(doc["host"]["online_cpus"].as_u64().unwrap() >= 1);
    assert!(!doc["host"]["kernel_release"].as_str().unwrap().is_empty());
    assert!(doc["host"]["cgroup_layout"].is_string());
    assert_eq!(doc["scenario_spec"]["groups"][0]["workers"], 2);
    let repeats = doc["repeats"].as_array().unwrap();
    assert_eq!(repeats.len(), 4);
    for r in repeats {
        let g = &r["groups"][0];
        assert!(g["work_rate_per_s"].as_f64().unwrap() > 0.0);
        let w = &g["wake_latency_ns"];
        assert!(w["samples"].as_u64().unwrap() > 0);
        assert!(w["p50"].as_u64().unwrap() <= w["p99.9"].as_u64().unwrap());
    }
    // The single-run fields stay at the top level.
    assert!(doc["verdict"] == "pass" || doc["verdict"] == "fail");
    assert!(doc["reports"].as_array().is_some());

    // A against itself: no difference, an interval around 0, nothing
    // regressed or improved, exit 0.
    let xml = dir.path().join("self.xml");
    let out = compare(&a, &a, &["--json", "--junit", xml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rep: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rep["rows"].as_array().unwrap();
    assert!(rows.len() >= 7, "{rows:?}");
    for r in rows {
        assert_eq!(r["diff"], 0.0, "{r}");
        let ci = r["ci_pct"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= 0.0 && ci[1].as_f64().unwrap() >= 0.0);
        assert!(r["verdict"] == "no_change" || r["verdict"] == "inconclusive");
    }
    assert_eq!(parse_junit(&xml).len(), rows.len());

    // B: every repeat's work rate below A's slowest, and every wake p99
    // above A's largest, however widely a loaded machine spread A's
    // repeats: regressed, exit 1, JUnit failures.
    let worse = worsened(&doc);
    let b = dir.path().join("b.json");
    std::fs::write(&b, worse.to_string()).unwrap();
    let out = compare(&a, &b, &["--junit", xml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 regressed"), "{text}");
    let cases = parse_junit(&xml);
    assert_eq!(cases[&("PipeIo".into(), "work_rate".into())], "failure");
    assert_eq!(cases[&("PipeIo".into(), "wake_p99".into())], "failure");
    // Fairness is the same in both files. With four short repeats on a
    // loaded machine its spread can exceed the threshold, and then the
    // honest verdict is inconclusive (skipped); it must never fail.
    let fairness = cases[&("PipeIo".into(), "fairness".into())];
    assert!(fairness == "pass" || fairness == "skipped", "{cases:?}");
    // Reversed, it is an improvement and exits 0.
    let out = compare(&b, &a, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 improved"), "{text}");

    bad_inputs(dir.path(), &a, &doc);
}

/// `doc` with every repeat's work rate a tenth of the slowest repeat's
/// and every wake p99 raised by ten times the largest: no overlap with
/// `doc` on either figure.
fn worsened(doc: &Value) -> Value {
    let groups = |d: &Value| -> Vec<Value> {
        d["repeats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["groups"][0].clone())
            .collect()
    };
    let rates: Vec<f64> = groups(doc)
        .iter()
        .map(|g| g["work_rate_per_s"].as_f64().unwrap())
        .collect();
    let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let fastest = rates.iter().copied().fold(0.0, f64::max);
    let worst_p99 = groups(doc)
        .iter()
        .map(|g| g["wake_latency_ns"]["p99"].as_u64().unwrap())
        .max()
        .unwrap();
    let mut worse = doc.clone();
    for r in worse["repeats"].as_array_mut().unwrap() {
        let g = &mut r["groups"][0];
        let rate = g["work_rate_per_s"].as_f64().unwrap();
        g["work_rate_per_s"] = (rate * slowest / fastest / 10.0).into();
        let p99 = g["wake_latency_ns"]["p99"].as_u64().unwrap();
        g["wake_latency_ns"]["p99"] = (p99 + worst_p99 * 10).into();
    }
    worse
}

/// Mismatched scenarios, truncated JSON, another tool's file, a bad flag.
fn bad_inputs(dir: &Path, a: &Path, doc: &Value) {
    let mut other = doc.clone();
    other["scenario_spec"]["duration_ns"] = serde_json::json!(9_000_000_000u64);
    let m = dir.join("mismatch.json");
    std::fs::write(&m, other.to_string()).unwrap();
    let out = compare(a, &m, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("different scenarios") && stderr(&out).contains("duration"),
        "{}",
        stderr(&out)
    );
    let rep: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["verdict"] == "inconclusive"));

    let text = std::fs::read_to_string(a).unwrap();
    let cut = dir.join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 3]).unwrap();
    let foreign = dir.join("package.json");
    std::fs::write(&foreign, r#"{"name":"left-pad","version":"1.3.0"}"#).unwrap();
    let missing = dir.join("missing.json");
    for (file, what) in [
        (&cut, "is truncated"),
        (&foreign, "is not a runq run result"),
        (&missing, "cannot read"),
    ] {
        let out = compare(a, file, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(what), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty());
    }
    let out = compare(a, a, &["--threshold", "-3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
