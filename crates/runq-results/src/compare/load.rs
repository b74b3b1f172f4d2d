//! Reading saved run documents ([`crate::results::RunDocument`], as
//! `runq run --output` writes them) and checking that two of them can be
//! compared.

use std::path::Path;

use serde_json::Value;

use runq_common::json::JsonDocument;
use runq_common::json_read::{read_header, DocHeader};
use runq_common::text::printable;

use super::body::read_body;
use crate::results::{GroupFigures, HostFacts, RunDocument, OLDEST_READ_VERSION};

/// The tool that writes the documents compare reads.
const TOOL: &str = RunDocument::TOOL;
/// The newest layout compare reads.
const SCHEMA_VERSION: u32 = RunDocument::SCHEMA_VERSION;

/// The parts of a saved run that compare reads.
#[derive(Debug, Clone)]
pub struct SavedRun {
    /// The file it came from.
    pub path: String,
    /// The host facts.
    pub host: HostFacts,
    /// The scenario, as JSON.
    pub scenario: Value,
    /// The scenario's name.
    pub scenario_name: String,
    /// Per repeat, per group figures.
    pub repeats: Vec<Vec<GroupFigures>>,
}

/// How to write a file compare reads, for the errors.
const HINT: &str = "write one with `runq run --repeat N --output FILE.json`";

/// Why a saved run could not be read. Each message is one line naming the
/// file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read: missing, not a regular file (a FIFO,
    /// a device, a directory) or larger than [`MAX_SAVED_RUN_BYTES`].
    #[error(transparent)]
    Unreadable(#[from] runq_common::infile::InputError),
    /// The file is not (complete) JSON.
    #[error("{path} {} ({source}); expected a result from `runq run --output`",
        if source.is_eof() { "is truncated" } else { "is not valid JSON" })]
    NotJson {
        /// The file.
        path: String,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// JSON without the `schema_version` and `tool` fields.
    #[error("{path} is not a runq run result (no schema_version/tool fields); {HINT}")]
    NotARunResult {
        /// The file.
        path: String,
    },
    /// Another tool's document.
    #[error("{path} was written by {tool}, not `{TOOL}`; {HINT}")]
    OtherTool {
        /// The file.
        path: String,
        /// Its `tool` field, as JSON.
        tool: String,
    },
    /// A layout this version does not read.
    #[error(
        "{path} has schema_version {version}, this runq reads versions \
         {OLDEST_READ_VERSION} to {SCHEMA_VERSION}; rerun the scenario with this runq to compare"
    )]
    UnreadableVersion {
        /// The file.
        path: String,
        /// Its `schema_version` field, as JSON.
        version: String,
    },
    /// A field compare reads is missing or malformed.
    #[error("{path}: field {field} is damaged ({why}); {HINT}")]
    Damaged {
        /// The file.
        path: String,
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
}

/// Checks the `schema_version` and `tool` fields.
fn check_head(path: &str, head: Option<DocHeader>) -> Result<(), LoadError> {
    let Some(DocHeader {
        schema_version: Some(version),
        tool: Some(tool),
    }) = head
    else {
        return Err(LoadError::NotARunResult { path: path.into() });
    };
    if tool.as_str() != Some(TOOL) {
        return Err(LoadError::OtherTool {
            path: path.into(),
            tool: tool.to_string(),
        });
    }
    let readable = u64::from(OLDEST_READ_VERSION)..=u64::from(SCHEMA_VERSION);
    if !version.as_u64().is_some_and(|v| readable.contains(&v)) {
        return Err(LoadError::UnreadableVersion {
            path: path.into(),
            version: version.to_string(),
        });
    }
    Ok(())
}

/// Parses a saved run from its text (`path` names it in errors): the
/// header first (nothing else is built: a foreign file or layout is
/// refused before its body is read), then the fields compare reads,
/// straight into their types.
pub(crate) fn parse_saved_run(path: &str, text: &str) -> Result<SavedRun, LoadError> {
    // Errors name the file and what was wrong printably: a file found by a
    // glob, and serde's words on a value, can hold any character.
    let shown = printable(path);
    let head = read_header::<DocHeader>(text).map_err(|source| LoadError::NotJson {
        path: shown.to_string(),
        source,
    })?;
    check_head(&shown, head)?;
    let bad = |field: &'static str, why: &str| LoadError::Damaged {
        path: shown.to_string(),
        field,
        why: printable(why).into_owned(),
    };
    let body = read_body(text)
        .map_err(|(field, e)| bad(field.unwrap_or("(top level)"), &e.to_string()))?;
    let host = body.host.ok_or_else(|| bad("host", "missing"))?;
    let repeats = body.repeats.ok_or_else(|| bad("repeats", "missing"))?;
    if repeats.is_empty() {
        return Err(bad("repeats", "no repeats"));
    }
    let scenario = body
        .scenario_spec
        .filter(|v| !v.is_null())
        .ok_or_else(|| bad("scenario_spec", "missing"))?;
    let scenario_name = body
        .scenario
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Ok(SavedRun {
        path: path.to_string(),
        host,
        scenario,
        scenario_name,
        repeats: repeats.into_iter().map(|r| r.groups).collect(),
    })
}

/// The largest saved run read: a `--raw` result of many repeats of many
/// workers is tens of MiB.
pub const MAX_SAVED_RUN_BYTES: u64 = 512 << 20;

/// Reads and parses a saved run: a regular file of at most
/// [`MAX_SAVED_RUN_BYTES`].
pub fn read_saved_run(path: &Path) -> Result<SavedRun, LoadError> {
    let name = path.display().to_string();
    let text = runq_common::infile::read_text(path, MAX_SAVED_RUN_BYTES, "a saved run")?;
    parse_saved_run(&name, &text)
}

/// The scenario without its scheduler command (which is what an A/B of
/// schedulers changes on purpose).
fn comparable_scenario(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("scheduler");
    }
    v
}

/// How two saved runs differ apart from their figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Differences {
    /// What makes the two results incomparable (every verdict then
    /// becomes inconclusive).
    pub mismatches: Vec<String>,
    /// What differs but is often the point of the A/B (kernel, host name,
    /// scheduler).
    pub notes: Vec<String>,
}

/// The scenario keys whose values differ (`everything` when either
/// scenario is not an object).
fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    match (a.as_object(), b.as_object()) {
        (Some(x), Some(y)) => x
            .keys()
            .chain(y.keys())
            .filter(|k| x.get(*k) != y.get(*k))
            .map(String::clone)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        _ => vec!["everything".into()],
    }
}

/// What makes the two results incomparable, and what differs but is often
/// the point of the A/B.
pub fn differences(a: &SavedRun, b: &SavedRun) -> Differences {
    let mut mismatches = Vec::new();
    let mut notes = Vec::new();
    let (sa, sb) = (
        comparable_scenario(&a.scenario),
        comparable_scenario(&b.scenario),
    );
    if sa != sb {
        mismatches.push(format!(
            "the files ran different scenarios ({} vs {}; differing: {})",
            a.scenario_name,
            b.scenario_name,
            differing_keys(&sa, &sb).join(", ")
        ));
    }
    let (ha, hb) = (&a.host, &b.host);
    if ha.online_cpus != hb.online_cpus || ha.cpu_model != hb.cpu_model {
        mismatches.push(format!(
            "the hosts differ: {} CPUs ({}) vs {} CPUs ({})",
            ha.online_cpus, ha.cpu_model, hb.online_cpus, hb.cpu_model
        ));
    }
    if ha.cgroup_layout != hb.cgroup_layout {
        mismatches.push(format!(
            "the cgroup layouts differ: {} vs {}",
            ha.cgroup_layout, hb.cgroup_layout
        ));
    }
    let mut note = |what: &str, x: &str, y: &str| {
        if x != y {
            notes.push(format!("{what}: {x} vs {y}"));
        }
    };
    note("kernel", &ha.kernel_release, &hb.kernel_release);
    note("host", &ha.hostname, &hb.hostname);
    note("sched_ext", &ha.sched_ext, &hb.sched_ext);
    note("loop clock", &ha.loop_clock, &hb.loop_clock);
    let none = "(none)".to_string();
    note(
        "scheduler",
        ha.scheduler_command.as_ref().unwrap_or(&none),
        hb.scheduler_command.as_ref().unwrap_or(&none),
    );
    Differences { mismatches, notes }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn doc(scenario: &str, cpus: u32) -> String {
        format!(
            r#"{{"schema_version":1,"tool":"runq run","scenario":"s",
            "host":{{"hostname":"h","kernel_release":"6.18","cpu_model":"x","online_cpus":{cpus},
                    "cgroup_layout":"hybrid","sched_ext":"no sched_ext","scheduler_command":null}},
            "scenario_spec":{scenario},
            "repeats":[{{"repeat":1,"groups":[{{"group":"g","work_type":"PipeIo",
              "work_rate_per_s":10.0,"wake_latency_ns":{{"p50":1,"p90":2,"p99":3,"p99.9":4,
              "samples":5,"total":6}},"off_cpu_pct":1.0,"max_gap_ms":2,"migrations":0,
              "fairness":1.0}}]}}]}}"#
        )
    }

    fn err(text: &str) -> String {
        parse_saved_run("x.json", text).unwrap_err().to_string()
    }

    #[test]
    fn reads_a_saved_run() {
        let r = parse_saved_run("a.json", &doc(r#"{"duration":1}"#, 2)).unwrap();
        assert_eq!(r.repeats.len(), 1);
        assert_eq!(r.repeats[0][0].wake_latency_ns.p99_9, Some(4));
        assert_eq!(r.host.online_cpus, 2);
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        let full = doc("{}", 2);
        let e = err(&full[..full.len() / 2]);
        assert!(e.contains("is truncated"), "{e}");
        assert!(err("hello").contains("is not valid JSON"));
        let e = err(r#"{"schema":"https://json.schemastore.org/package","name":"x"}"#);
        assert!(e.contains("is not a runq run result"), "{e}");
        let e = err(r#"{"schema_version":1,"tool":"fio"}"#);
        assert!(e.contains("written by \"fio\""), "{e}");
        let e = err(&full.replace("\"schema_version\":1", "\"schema_version\":9"));
        assert!(e.contains("schema_version 9"), "{e}");
        let e = err(&full.replace("\"repeats\":[", "\"repeats\":[7,"));
        assert!(e.contains("field repeats is damaged"), "{e}");
        for e in [e, err("hello")] {
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn the_header_is_checked_before_the_body_is_built() {
        let zeros = format!("{{\"repeats\":[{}0]}}", "0,".repeat(1 << 20));
        assert!(err(&zeros).contains("is not a runq run result"));
        assert!(err("[\"runq run\",1]").contains("is not a runq run result"));
        let e = err(&format!(
            "{{\"tool\":[{}0],\"schema_version\":1}}",
            "0,".repeat(1000)
        ));
        assert!(e.contains("written by an array, not `runq run`"), "{e}");
        let e = err(r#"{"tool":"runq run\u001b[2J","schema_version":1}"#);
        assert!(e.contains(r#"written by "runq run\x1b[2J""#), "{e}");
        let full = doc("{}", 2);
        for (v, shown) in [
            ("3", "3"),
            ("\"2\"", "\"2\""),
            ("-1", "-1"),
            ("[2]", "an array"),
        ] {
            let e = err(&full.replace("\"schema_version\":1", &format!("\"schema_version\":{v}")));
            assert!(
                e.contains(&format!(
                    "has schema_version {shown}, this runq reads versions 1 to"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn damaged_fields_are_named_and_huge_ones_refused() {
        let full = doc("{}", 2);
        let huge = format!("[{}0]", "0,".repeat(200_000));
        let e = err(&full.replace("\"scenario_spec\":{}", &format!("\"scenario_spec\":{huge}")));
        assert!(
            e.contains("field scenario_spec is damaged (more than 100000 values"),
            "{e}"
        );
        let e = err(&full.replace("\"repeats\":[", "\"repeats\":[],\"repeats\":["));
        assert!(
            e.contains("field repeats is damaged (duplicate field"),
            "{e}"
        );
        let e = err(&full.replace("\"online_cpus\":2", "\"online_cpus\":\"2\""));
        assert!(e.contains("field host is damaged (invalid type"), "{e}");
        let e = err(&full.replace(
            "\"group\":\"g\",",
            "\"group\":\"g\",\"wake_figure\":\"\\u001b[2J\",",
        ));
        assert!(
            e.contains("field repeats is damaged (unknown variant `\\x1b[2J`"),
            "{e}"
        );
        let e = parse_saved_run("a\nb.json", "hello")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a\\nb.json is not valid JSON"), "{e}");
        let e = err(&full.replace("\"scenario_spec\":{}", "\"scenario_spec\":null"));
        assert!(
            e.contains("field scenario_spec is damaged (missing)"),
            "{e}"
        );
        let e = err(r#"{"tool":"runq run","schema_version":1,"scenario_spec":{}}"#);
        assert!(e.contains("field host is damaged (missing)"), "{e}");
        let r = parse_saved_run(
            "a",
            &full.replace(
                "{\"schema_version\"",
                "{\"reports\":[[1,{}]],\"schema_version\"",
            ),
        );
        assert!(r.is_ok(), "unknown fields are skipped");
    }

    #[test]
    fn mismatches_and_notes() {
        let a = parse_saved_run("a", &doc(r#"{"duration":1,"scheduler":"scx_a"}"#, 2)).unwrap();
        let b = parse_saved_run("b", &doc(r#"{"duration":1,"scheduler":"scx_b"}"#, 2)).unwrap();
        assert_eq!(differences(&a, &b), Differences::default());
        let c = parse_saved_run("c", &doc(r#"{"duration":2}"#, 4)).unwrap();
        let m = differences(&a, &c).mismatches;
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].contains("differing: duration"), "{m:?}");
        assert!(m[1].contains("2 CPUs"), "{m:?}");
        let mut d = b.clone();
        d.host.kernel_release = "6.19".into();
        let Differences {
            mismatches: m,
            notes: n,
        } = differences(&a, &d);
        assert!(m.is_empty());
        assert_eq!(n, vec!["kernel: 6.18 vs 6.19".to_string()]);
    }
}
