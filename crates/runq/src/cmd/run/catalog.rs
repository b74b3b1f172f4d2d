//! `runq run --list` and `--explain TYPE`: the work types, their
//! parameters and defaults, from the engine's own descriptions.

use std::fmt::Write;

use runq_kernel::util::table::{Align, Table};
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
        .map(|(k, v)| format!("{k}={v}"))
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

/// Every work type, one line each (or a JSON array). The parameters come
/// last: a few types have long lists, which would push every summary out.
pub fn render_list(json: bool) -> anyhow::Result<String> {
    let all = WorkType::all_defaults();
    if json {
        return Ok(
            serde_json::to_string_pretty(&all.iter().map(as_json).collect::<Vec<_>>())? + "\n",
        );
    }
    let mut table = Table::new(&[
        ("type", Align::Left),
        ("wakes", Align::Left),
        ("summary", Align::Left),
        ("parameters (defaults)", Align::Left),
    ]);
    for t in &all {
        let info = t.info();
        let wakes = if info.wakes.is_some() { "yes" } else { "-" };
        table.row(vec![
            info.name.to_string(),
            wakes.to_string(),
            info.summary.to_string(),
            params_text(t),
        ]);
    }
    let mut out = table.render(str::to_string);
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
