//! What a run and a sweep write: the one-run JSON object (the CSV line's
//! fields with units and the counter's facts) and the sweep's CSV and JSON.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use runq_common::json::{to_pretty, JsonDocument};
use runq_common::safefile::{write_atomic, Replace};
use serde::Serialize;

use crate::runner::RunResult;
use crate::sweep::SweepResult;
use crate::tsc::TscInfo;

/// The `--json` document of one run (`runq collatz --json`).
#[derive(Debug, Serialize)]
pub struct RunDocument {
    /// Processes.
    pub procs: usize,
    /// Outer iterations.
    pub outer: u64,
    /// Inner iterations per outer one.
    pub inner: u64,
    /// The start value, a string: start values pass 2^53 (see `Target`).
    pub target: String,
    /// Calls made, over every process.
    pub total_calls: u64,
    /// Time stamp counter ticks, summed over processes.
    pub ticks: u64,
    /// `ticks / total_calls`.
    pub ticks_per_call: f64,
    /// `ticks_per_call` converted with `tsc_hz`.
    pub ns_per_call: f64,
    /// Ticks per second.
    pub tsc_hz: f64,
    /// Whether the counter is invariant.
    pub tsc_invariant: bool,
    /// What the figures above measure.
    pub units: Units,
}

/// The units of a [`RunDocument`]'s figures, in words.
#[derive(Debug, Serialize)]
pub struct Units {
    /// Of `ticks`.
    pub ticks: &'static str,
    /// Of `ticks_per_call`.
    pub ticks_per_call: &'static str,
    /// Of `ns_per_call`.
    pub ns_per_call: &'static str,
    /// Of `tsc_hz`.
    pub tsc_hz: &'static str,
}

impl JsonDocument for RunDocument {
    const TOOL: &'static str = "runq collatz";
    const SCHEMA_VERSION: u32 = 1;
}

impl JsonDocument for SweepResult {
    const TOOL: &'static str = "runq collatz sweep";
    const SCHEMA_VERSION: u32 = 1;
}

impl RunDocument {
    /// The document of run `r`, timed by the counter `tsc`.
    pub fn new(r: &RunResult, tsc: &TscInfo) -> Self {
        RunDocument {
            procs: r.config.procs,
            outer: r.config.outer,
            inner: r.config.inner,
            target: r.config.target.as_number().to_string(),
            total_calls: r.total_calls,
            ticks: r.ticks,
            ticks_per_call: r.ticks_per_call,
            ns_per_call: r.ticks_per_call / tsc.hz * 1e9,
            tsc_hz: tsc.hz,
            tsc_invariant: tsc.invariant,
            units: Units {
                ticks: "time stamp counter ticks, summed over processes",
                ticks_per_call: "ticks / total_calls",
                ns_per_call: "ticks_per_call converted with tsc_hz",
                tsc_hz: "ticks per second, calibrated against CLOCK_MONOTONIC",
            },
        }
    }
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
    let json = to_pretty(s).map_err(io::Error::other)?;
    write_atomic(&paths[1], (json + "\n").as_bytes(), Replace::OwnFile)?;
    let svg = crate::plot::render_svg(s).map_err(io::Error::other)?;
    write_atomic(&paths[2], svg.as_bytes(), Replace::OwnFile)?;
    Ok(paths)
}
