//! Findings back from an `--export` file, for replaying a session in the
//! live view: each complete event's category, worker, times and stack.

use serde_json::Value;

use crate::detect::{Category, Finding};
use crate::symbols::Frame;

/// Parses `function (file:line)` as written by the export.
fn frame_from(text: &str) -> Frame {
    let (function, file, line) = match text.rsplit_once(" (") {
        Some((name, loc)) if loc.ends_with(')') => {
            let loc = &loc[..loc.len() - 1];
            match loc.rsplit_once(':') {
                Some((file, line)) if line.parse::<u32>().is_ok() => {
                    (name.to_string(), Some(file.to_string()), line.parse().ok())
                }
                _ => (text.to_string(), None, None),
            }
        }
        _ => (text.to_string(), None, None),
    };
    Frame {
        function: function.into(),
        file: file.map(Into::into),
        line,
        module: None,
        inlined: false,
    }
}

/// The findings of an export document.
pub fn findings(doc: &Value) -> Vec<Finding> {
    let events = doc["traceEvents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| {
            let category: Category = serde_json::from_value(e["args"]["category"].clone()).ok()?;
            // Whole frames where the export has them (their objects name
            // culprits), else the printed stack.
            let stack = match serde_json::from_value(e["args"]["frames"].clone()) {
                Ok(frames) => frames,
                Err(_) => e["args"]["stack"]
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(frame_from)
                    .collect(),
            };
            Some(Finding {
                category,
                tid: e["tid"].as_u64()? as u32,
                start_ns: (e["ts"].as_f64()? * 1000.0) as u64,
                duration_ns: (e["dur"].as_f64()? * 1000.0) as u64,
                stack,
                holder: serde_json::from_value(e["args"]["holder"].clone())
                    .ok()
                    .flatten(),
                task_id: e["args"]["task_id"].as_u64(),
                call: serde_json::from_value(e["args"]["call"].clone())
                    .ok()
                    .flatten(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_events_come_back() {
        let f = frame_from("app::load (/src/app.rs:12)");
        assert_eq!(
            (&*f.function, f.file.as_deref(), f.line),
            ("app::load", Some("/src/app.rs"), Some(12))
        );
        assert_eq!(
            frame_from("clock_nanosleep").function.as_ref(),
            "clock_nanosleep"
        );
        let doc = serde_json::json!({"traceEvents": [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "w"}},
            {"ph": "X", "name": "app::load", "tid": 2, "ts": 1000.0, "dur": 20000.0,
             "args": {"category": "blocking_call", "stack": ["std::thread::sleep", "app::load (/src/app.rs:12)"]}}
        ]});
        let fs = findings(&doc);
        assert_eq!(fs.len(), 1);
        assert_eq!(
            (fs[0].tid, fs[0].start_ns, fs[0].duration_ns),
            (2, 1_000_000, 20_000_000)
        );
        assert_eq!(fs[0].culprit().unwrap().function.as_ref(), "app::load");
    }
}
