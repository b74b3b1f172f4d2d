//! `--output FILE.json`: Chrome trace-event JSON (loads in Perfetto and
//! chrome://tracing) with one complete event per finding, its stack in
//! `args`, thread names for the workers, and the report under `runq_hud`
//! (which `--replay` reads back). `--output-folded FILE`: folded stacks of
//! the findings weighted by their time in µs, under a root frame that
//! names what the time was (blocked, on CPU, waiting for a CPU, in
//! `block_in_place`), for flame graph tools.

use serde_json::{json, Value};

use crate::culprit::AppCode;
use crate::detect::Finding;
use crate::report::{row_of, Report};

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
    // Each event is named as the report names the row it counts toward.
    let app = AppCode::named(report.app_crates.iter().cloned());
    for f in findings {
        let (idx, name) = row_of(&f.stack, &app);
        let culprit = idx.map(|i| &f.stack[i]);
        events.push(json!({
            "ph": "X",
            "name": name,
            "cat": f.category.label(),
            "pid": report.pid,
            "tid": f.tid,
            "ts": f.start_ns as f64 / 1000.0,
            "dur": f.duration_ns as f64 / 1000.0,
            "args": {
                "category": f.category,
                "location": culprit.and_then(|c| c.location()),
                "holder": f.holder,
                "task_id": f.task_id,
                "call": f.call,
                "stack": f.stack.iter().map(|fr| match fr.location() {
                    Some(l) => format!("{} ({l})", fr.function),
                    None => fr.function.to_string(),
                }).collect::<Vec<_>>(),
                // Whole frames (with their objects), so that a replay
                // names culprits exactly as the saved report did.
                "frames": f.stack,
            },
        }));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms", "runq_hud": runq_common::json::Stamped(report)})
}

/// Folded stacks (`root;outer;...;inner weight`) of the findings,
/// weighted by their duration in microseconds, each under a root frame
/// that says what the time was.
pub fn folded(findings: &[Finding]) -> String {
    let mut weights: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for f in findings {
        let Some(root) = f.category.info().folded_root else {
            continue;
        };
        let line: Vec<String> = std::iter::once(root.to_string())
            .chain(f.stack.iter().rev().map(|fr| fr.function.replace(';', ":")))
            .collect();
        *weights.entry(line.join(";")).or_default() += f.duration_ns / 1000;
    }
    weights
        .into_iter()
        .map(|(stack, w)| format!("{stack} {w}\n"))
        .collect()
}

/// The report saved in an export, for `--replay`.
pub fn report_from_trace(doc: &Value) -> Result<Report, String> {
    let report = doc
        .get("runq_hud")
        .ok_or("not a runq hud export: no \"runq_hud\" report in it")?;
    serde_json::from_value(report.clone()).map_err(|e| format!("unreadable hud report: {e}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::detect::{Category, Tally};
    use crate::report::{group, RunQueueStats};
    use crate::symbols::Frame;

    pub(crate) fn finding(category: Category, dur_ms: u64) -> Finding {
        let frame = |n: &str, file: &str| Frame {
            function: n.into(),
            file: Some(file.into()),
            line: Some(7),
            module: None,
            inlined: false,
        };
        Finding {
            category,
            tid: 11,
            start_ns: 1_000_000,
            duration_ns: dur_ms * 1_000_000,
            stack: vec![
                frame(
                    "std::thread::sleep",
                    "/rustc/x/library/std/src/thread/mod.rs",
                ),
                frame("app::load", "/src/app.rs"),
                frame("app::main::{{closure}}", "/src/main.rs"),
            ]
            .into(),
            holder: None,
            task_id: None,
            call: None,
        }
    }

    pub(crate) fn report(findings: &[Finding]) -> Report {
        Report {
            pid: 1,
            comm: "app".into(),
            discovery: "Tokio default thread names".into(),
            threshold_ns: 5_000_000,
            frequency_hz: 99,
            duration_s: 2.0,
            target_exited: false,
            interrupted_by: None,
            blockers: group(findings, &crate::culprit::AppCode::default()),
            block_in_place: Vec::new(),
            workers: vec![],
            run_queue: RunQueueStats::default(),
            events: Tally::default(),
            lost_events: 0,
            symbol_hint: None,
            debug_file: None,
            stacks: Default::default(),
            poll_timing: Default::default(),
            app_crates: Vec::new(),
            task_ids: Default::default(),
            withheld: Vec::new(),
        }
    }

    #[test]
    fn export_round_trips_through_replay() {
        let fs = [
            finding(Category::BlockingCall, 20),
            finding(Category::TaskCpuSampled, 10),
        ];
        let r = report(&fs);
        let doc = trace_json(&r, &fs);
        let text = serde_json::to_string(&doc).unwrap();
        let back = report_from_trace(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(crate::report::text(&back), crate::report::text(&r));
        let events = doc["traceEvents"].as_array().unwrap();
        let x: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 2);
        assert_eq!(x[0]["dur"], 20_000.0);
        assert_eq!(x[0]["name"], "app::load");
        assert!(report_from_trace(&serde_json::json!({"traceEvents": []})).is_err());
    }

    #[test]
    fn a_replay_groups_findings_as_the_saved_report_did() {
        // A stack of only the system's frames: its culprit is chosen by
        // the frames' objects, which the replay must keep.
        let libc = Frame {
            function: "clock_nanosleep".into(),
            file: None,
            line: None,
            module: Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into()),
            inlined: false,
        };
        let mut bare = finding(Category::BlockingCall, 7);
        bare.stack = vec![libc, Frame::unknown(0x10)].into();
        let fs = [finding(Category::BlockingCall, 20), bare];
        let doc = trace_json(&report(&fs), &fs);
        let back = crate::live::replay::findings(&doc);
        let app = crate::culprit::AppCode::default();
        let rows = |f: &[Finding]| -> Vec<(String, u64, u64)> {
            group(f, &app)
                .into_iter()
                .map(|b| (b.function, b.count, b.total_ns))
                .collect()
        };
        assert_eq!(rows(&back), rows(&fs));
    }

    #[test]
    fn each_event_is_named_as_the_row_it_counts_toward() {
        // A library's frame inside the program's: the row is the program's
        // function, and so is the event; a long poll no sample named is
        // unnamed in both.
        let lib = Frame {
            function: "serde_json::de::from_str".into(),
            file: None,
            line: None,
            module: None,
            inlined: false,
        };
        let mut parse = finding(Category::BlockingCall, 9);
        let mut stack = parse.stack.to_vec();
        stack.insert(0, lib);
        parse.stack = stack.into();
        let mut unnamed = finding(Category::LongPoll, 16);
        unnamed.stack = vec![Frame {
            function: crate::poll_culprit::UNNAMED.into(),
            file: None,
            line: None,
            module: None,
            inlined: false,
        }]
        .into();
        let fs = [parse, unnamed, finding(Category::BlockingCall, 20)];
        let mut r = report(&fs);
        r.app_crates = vec!["app".into()];
        r.blockers = group(&fs, &crate::culprit::AppCode::named(r.app_crates.clone()));
        let doc = trace_json(&r, &fs);
        let events: Vec<(String, String)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| (e["cat"].to_string(), e["name"].to_string()))
            .collect();
        let names: Vec<&str> = events.iter().map(|(_, n)| n.trim_matches('"')).collect();
        assert_eq!(
            names,
            ["app::load", crate::poll_culprit::UNNAMED, "app::load"]
        );
        // Event for event: the events of each row are as many as its count.
        let mut by_row = std::collections::BTreeMap::new();
        for e in &events {
            *by_row.entry(e.clone()).or_insert(0u64) += 1;
        }
        let rows: std::collections::BTreeMap<_, _> = r
            .blockers
            .iter()
            .map(|b| {
                let cat = serde_json::json!(b.category.label()).to_string();
                ((cat, serde_json::json!(b.function).to_string()), b.count)
            })
            .collect();
        assert_eq!(by_row, rows);
    }

    #[test]
    fn folded_stacks_are_outermost_first_and_weighted() {
        let fs = [
            finding(Category::BlockingCall, 20),
            finding(Category::BlockingCall, 5),
            finding(Category::RunQueueDelay, 9),
            finding(Category::LongPoll, 30),
        ];
        let stack = "app::main::{{closure}};app::load;std::thread::sleep";
        assert_eq!(
            folded(&fs),
            format!(
                "[blocked: blocking call];{stack} 25000\n\
                 [waiting for a CPU: run-queue delay];{stack} 9000\n"
            )
        );
    }
}
