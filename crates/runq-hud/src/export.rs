//! `--export FILE.json`: Chrome trace-event JSON (loads in Perfetto and
//! chrome://tracing) with one complete event per finding, its stack in
//! `args`, thread names for the workers, and the report under `runq_hud`.

use serde_json::{json, Value};

use crate::detect::Finding;
use crate::report::Report;

/// The trace document.
pub fn trace_json(report: &Report, findings: &[Finding]) -> Value {
    let mut events: Vec<Value> = report
        .workers
        .iter()
        .map(|w| {
            json!({"ph": "M", "name": "thread_name", "pid": report.pid, "tid": w.tid,
                   "args": {"name": format!("{} ({})", w.comm, w.tid)}})
        })
        .collect();
    events.push(
        json!({"ph": "M", "name": "process_name", "pid": report.pid, "tid": report.pid,
                       "args": {"name": report.comm}}),
    );
    for f in findings {
        let culprit = f.culprit();
        events.push(json!({
            "ph": "X",
            "name": culprit.map_or("[runtime]", |c| c.function.as_str()),
            "cat": f.category.label(),
            "pid": report.pid,
            "tid": f.tid,
            "ts": f.start_ns as f64 / 1000.0,
            "dur": f.duration_ns as f64 / 1000.0,
            "args": {
                "category": f.category,
                "location": culprit.and_then(|c| c.location()),
                "stack": f.stack.iter().map(|fr| match fr.location() {
                    Some(l) => format!("{} ({l})", fr.function),
                    None => fr.function.clone(),
                }).collect::<Vec<_>>(),
            },
        }));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms", "runq_hud": report})
}
