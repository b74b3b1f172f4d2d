//! What a run and a sweep write: the one-run JSON object (the CSV line's
//! fields with units and the counter's facts) and the sweep's CSV and JSON.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use runq_common::safefile::{write_atomic, Replace};
use serde_json::{json, Value};

use crate::runner::RunResult;
use crate::sweep::SweepResult;
use crate::tsc::TscInfo;

/// The schema version of the run document (`runq collatz --json`) and of
/// `sweep.json`: bumped when a field is renamed or removed.
pub const SCHEMA_VERSION: u32 = 1;

/// The `--json` object of one run.
pub fn run_json(r: &RunResult, tsc: &TscInfo) -> Value {
    json!({
        "tool": "runq collatz",
        "schema_version": SCHEMA_VERSION,
        "procs": r.config.procs,
        "outer": r.config.outer,
        "inner": r.config.inner,
        // A string: start values pass 2^53 (see Target).
        "target": r.config.target.as_number().to_string(),
        "total_calls": r.total_calls,
        "ticks": r.ticks,
        "ticks_per_call": r.ticks_per_call,
        "ns_per_call": r.ticks_per_call / tsc.hz * 1e9,
        "tsc_hz": tsc.hz,
        "tsc_invariant": tsc.invariant,
        "units": {
            "ticks": "time stamp counter ticks, summed over processes",
            "ticks_per_call": "ticks / total_calls",
            "ns_per_call": "ticks_per_call converted with tsc_hz",
            "tsc_hz": "ticks per second, calibrated against CLOCK_MONOTONIC",
        },
    })
}

/// Header of the sweep CSV, rows in the order the runs ran; `profiler` is
/// the index of the run's profiler (in the order given, from 0), empty for
/// baseline runs; `wall_s` is the timed window by the counter,
/// `cpu_window_s` the window the profiler's CPU was read over.
pub const CSV_HEADER: &str =
    "procs,repeat,profiler,outer,inner,target,total_calls,ticks,ticks_per_call,wall_s,cpu_window_s,profiler_cpu_s";

/// Every point of a sweep as CSV.
pub fn sweep_csv(s: &SweepResult) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    for p in &s.points {
        let c = &p.result.config;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{:.6},{:.3},{:.3},{}",
            p.procs,
            p.repeat,
            p.profiler.map(|k| k.to_string()).unwrap_or_default(),
            c.outer,
            c.inner,
            c.target.as_number(),
            p.result.total_calls,
            p.result.ticks,
            p.result.ticks_per_call,
            p.wall_s,
            p.cpu_window_s,
            p.profiler_cpu_s
                .map(|v| format!("{v:.3}"))
                .unwrap_or_default()
        );
    }
    out
}

/// Writes `sweep.csv`, `sweep.json` and `sweep.svg` into `dir`; returns
/// their paths.
pub fn write_sweep(dir: &Path, s: &SweepResult) -> io::Result<[PathBuf; 3]> {
    std::fs::create_dir_all(dir)?;
    let paths = [
        dir.join("sweep.csv"),
        dir.join("sweep.json"),
        dir.join("sweep.svg"),
    ];
    write_atomic(&paths[0], sweep_csv(s).as_bytes(), Replace::OwnFile)?;
    let doc = runq_common::json::Document {
        tool: "runq collatz sweep",
        schema_version: SCHEMA_VERSION,
        body: s,
    };
    let json = serde_json::to_string_pretty(&doc).map_err(io::Error::other)?;
    write_atomic(&paths[1], (json + "\n").as_bytes(), Replace::OwnFile)?;
    let svg = crate::plot::render_svg(s).map_err(io::Error::other)?;
    write_atomic(&paths[2], svg.as_bytes(), Replace::OwnFile)?;
    Ok(paths)
}
