//! `runq run --list` and `--explain TYPE`: the work types, their
//! parameters and defaults, from the engine's own descriptions.

use std::fmt::Write;

use runq_common::json::{to_pretty, JsonDocument};
use runq_common::text::{hanging, wrap, LIST_WIDTH};
use runq_workload::WorkType;
use serde_json::{json, Value};

/// The parameters of a type with their defaults, as `key=value` pairs.
fn params_of(work: &WorkType) -> Vec<(String, Value)> {
    let value = serde_json::to_value(work).unwrap_or(Value::Null);
    value
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| *k != "type")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `key=default`, with the valid range after a numeric key:
/// `burst_ms=50[1..3600000]`.
fn params_text(work: &WorkType) -> String {
    let p = params_of(work);
    if p.is_empty() {
        return "-".into();
    }
    let ranges = work.info().params;
    p.iter()
        .map(|(k, v)| {
            // A list of tables (Sequence phases) breaks between its items.
            let default = v.to_string().replace("},{", "}, {");
            match ranges.iter().find(|r| r.name == k) {
                Some(r) => format!("{k}={default}[{}]", r.bounds_text()),
                None => format!("{k}={default}"),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Each numeric parameter's range, for `--json`.
fn ranges_json(work: &WorkType) -> Value {
    let ranges = work.info().params.iter();
    Value::Object(
        ranges
            .map(|r| (r.name.to_string(), json!({"min": r.min, "max": r.max})))
            .collect(),
    )
}

fn as_json(work: &WorkType) -> Value {
    let info = work.info();
    json!({
        "name": info.name,
        "summary": info.summary,
        "units": info.units,
        "wake_latency": info.wakes,
        "wake_figure": info.wake_figure,
        "workers": info.workers.describe(),
        "defaults": params_of(work).into_iter().collect::<serde_json::Map<_, _>>(),
        "ranges": ranges_json(work),
    })
}

/// `runq run --list --json`: every work type under `work_types`.
#[derive(serde::Serialize)]
struct WorkTypeList {
    work_types: Vec<Value>,
}

impl JsonDocument for WorkTypeList {
    const TOOL: &'static str = "runq run --list";
    const SCHEMA_VERSION: u32 = 1;
}

/// `runq run --explain TYPE --json`: one work type's description.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct Explained(Value);

impl JsonDocument for Explained {
    const TOOL: &'static str = "runq run --explain";
    const SCHEMA_VERSION: u32 = 1;
}

/// Every work type (or, with `json`, a document listing them under
/// `work_types`): its name, whether it samples wake latency, and its
/// summary wrapped within 100 columns, then its parameters with their
/// defaults and valid ranges on the lines below.
pub fn render_list(json: bool) -> anyhow::Result<String> {
    let all = WorkType::all_defaults();
    if json {
        let doc = WorkTypeList {
            work_types: all.iter().map(as_json).collect(),
        };
        return Ok(to_pretty(&doc)? + "\n");
    }
    let name_width = all.iter().map(|t| t.name().len()).max().unwrap_or(4);
    let indent = name_width + 2 + "wakes".len() + 2;
    let mut out = format!(
        "{:<name_width$}  wakes  summary / parameters=default[valid range]\n",
        "type"
    );
    for t in &all {
        let info = t.info();
        let wakes = if info.wakes.is_some() { "yes" } else { "-" };
        let mut lines = wrap(info.summary, LIST_WIDTH - indent);
        lines.extend(wrap(&params_text(t), LIST_WIDTH - indent));
        let first = format!("{:<name_width$}  {wakes:<5}  {}", info.name, lines[0]);
        out.push_str(&hanging(&first, &lines[1..], indent));
    }
    let _ = writeln!(
        out,
        "\n`runq run --explain TYPE` for details; override a default with --param KEY=VALUE."
    );
    Ok(out)
}

/// One work type in detail.
pub fn render_explain(work: &WorkType, json: bool) -> anyhow::Result<String> {
    if json {
        return Ok(to_pretty(&Explained(as_json(work)))? + "\n");
    }
    let info = work.info();
    let workers = info
        .workers
        .describe()
        .unwrap_or_else(|| "any number, at least 1".into());
    let latency = match info.wakes {
        Some(w) => format!("{}: {w}", info.wake_figure.label()),
        None => "none: the type takes no latency sample".into(),
    };
    let mut out = String::new();
    // The lines after the first are indented by 2: wrap them all 2 short.
    let title = wrap(&format!("{}: {}", info.name, info.summary), LIST_WIDTH - 2);
    out.push_str(&hanging(&title[0], &title[1..], 2));
    for (label, text) in [
        ("work units:", info.units),
        ("latency:", &latency),
        ("workers:", &workers),
        ("parameters:", &params_text(work)),
    ] {
        out.push_str(&explain_row(label, text));
    }
    Ok(out)
}

/// One `--explain` row: the label in a column of its own, the text
/// wrapped within [`LIST_WIDTH`] under itself.
fn explain_row(label: &str, text: &str) -> String {
    const INDENT: usize = 16;
    let lines = wrap(text, LIST_WIDTH - INDENT);
    let first = format!("  {label:<13} {}", lines[0]);
    hanging(&first, &lines[1..], INDENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_keeps_within_the_list_width() {
        for t in WorkType::all_defaults() {
            let text = render_explain(&t, false).unwrap();
            for line in text.lines() {
                assert!(line.chars().count() <= LIST_WIDTH, "{}: {line}", t.name());
            }
        }
    }

    #[test]
    fn list_has_every_type_with_defaults() {
        let text = render_list(false).unwrap();
        for t in WorkType::all_defaults() {
            assert!(text.contains(t.name()), "{}", t.name());
        }
        assert!(
            text.contains("burst_iters=1024[0..1000000000000]"),
            "{text}"
        );
        assert!(text.contains("period_us=1000[1..3600000000]"), "{text}");
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= LIST_WIDTH, "{widest} columns:\n{text}");
        let v: Value = serde_json::from_str(&render_list(true).unwrap()).unwrap();
        assert_eq!(v["tool"], "runq run --list");
        assert!(v["schema_version"].is_u64());
        let types = v["work_types"].as_array().unwrap();
        assert_eq!(types.len(), WorkType::all_defaults().len());
    }

    #[test]
    fn explain_names_wake_point() {
        let text = render_explain(&WorkType::from_name("PipeIo").unwrap(), false).unwrap();
        assert!(text.contains("pipe read"), "{text}");
        assert!(text.contains("even number"), "{text}");
        let json = render_explain(&WorkType::from_name("PipeIo").unwrap(), true).unwrap();
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (v["tool"].as_str(), v["name"].as_str()),
            (Some("runq run --explain"), Some("PipeIo"))
        );
    }
}
