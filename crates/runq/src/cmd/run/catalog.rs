//! `runq run --list` and `--explain TYPE`: the work types, their
//! parameters and defaults, from the engine's own descriptions.

use std::fmt::Write;

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

fn params_text(work: &WorkType) -> String {
    let p = params_of(work);
    if p.is_empty() {
        return "-".into();
    }
    p.iter()
        // A list of tables (Sequence phases) breaks between its items.
        .map(|(k, v)| format!("{k}={}", v.to_string().replace("},{", "}, {")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn as_json(work: &WorkType) -> Value {
    let info = work.info();
    json!({
        "name": info.name,
        "summary": info.summary,
        "units": info.units,
        "wake_latency": info.wakes,
        "workers": info.workers.describe(),
        "defaults": params_of(work).into_iter().collect::<serde_json::Map<_, _>>(),
    })
}

/// Every work type (or a JSON array): its name, whether it samples wake
/// latency, and its summary wrapped within 100 columns, then its
/// parameters with their defaults on the lines below.
pub fn render_list(json: bool) -> anyhow::Result<String> {
    let all = WorkType::all_defaults();
    if json {
        return Ok(
            serde_json::to_string_pretty(&all.iter().map(as_json).collect::<Vec<_>>())? + "\n",
        );
    }
    let name_width = all.iter().map(|t| t.name().len()).max().unwrap_or(4);
    let indent = name_width + 2 + "wakes".len() + 2;
    let mut out = format!(
        "{:<name_width$}  wakes  summary / parameters (defaults)\n",
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
        return Ok(serde_json::to_string_pretty(&as_json(work))? + "\n");
    }
    let info = work.info();
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", info.name, info.summary);
    let _ = writeln!(out, "  work units:   {}", info.units);
    let _ = writeln!(
        out,
        "  wake latency: {}",
        info.wakes.unwrap_or("not sampled (no blocking step)")
    );
    let _ = writeln!(
        out,
        "  workers:      {}",
        info.workers
            .describe()
            .unwrap_or_else(|| "any number, at least 1".into())
    );
    let _ = writeln!(out, "  parameters:   {}", params_text(work));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_has_every_type_with_defaults() {
        let text = render_list(false).unwrap();
        for t in WorkType::all_defaults() {
            assert!(text.contains(t.name()), "{}", t.name());
        }
        assert!(text.contains("burst_iters=1024"), "{text}");
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= LIST_WIDTH, "{widest} columns:\n{text}");
        let v: Value = serde_json::from_str(&render_list(true).unwrap()).unwrap();
        assert_eq!(v.as_array().unwrap().len(), WorkType::all_defaults().len());
    }

    #[test]
    fn explain_names_wake_point() {
        let text = render_explain(&WorkType::from_name("PipeIo").unwrap(), false).unwrap();
        assert!(text.contains("pipe read"), "{text}");
        assert!(text.contains("even number"), "{text}");
    }
}
