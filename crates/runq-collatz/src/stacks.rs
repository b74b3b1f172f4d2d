//! How deep a profiler's stacks reach, read where the profiler writes
//! them: the text of `perf script` (one header line per sample, then one
//! indented line per frame, innermost first, a blank line after), or the
//! trace-event JSON of `runq hud --export` (one stack per finding, under
//! `args.stack`, innermost first, inlined functions as frames of their own).
//!
//! A graph frame is one whose symbol is a graph function (`...::f123`). A
//! stack whose outermost frame is still a graph function never reached
//! `main`: the unwinder stopped (or was cut) inside the chain.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Serialize;

/// The depths seen over every sample of a profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DepthReport {
    /// Samples read.
    pub samples: u64,
    /// Samples with at least one graph frame.
    pub graph_samples: u64,
    /// Most frames in one sample (all frames, kernel ones included).
    pub deepest_frames: usize,
    /// Samples that have exactly `deepest_frames` frames.
    pub samples_at_deepest: u64,
    /// Most graph frames in one sample.
    pub deepest_graph_frames: usize,
    /// Graph samples whose outermost frame is a graph function.
    pub cut_in_graph: u64,
    /// Graph samples by their number of graph frames: `[frames, samples]`
    /// pairs, ascending.
    #[serde(serialize_with = "as_pairs")]
    pub graph_frames_histogram: BTreeMap<usize, u64>,
}

/// The `--json` document of `runq collatz depth-report`.
#[derive(Debug, Serialize)]
pub struct DepthDocument<'a> {
    /// The depths seen.
    pub report: &'a DepthReport,
    /// [`DepthReport::median_graph_frames`].
    pub median_graph_frames: usize,
    /// The chain's depth in calls, for a `--target` start value.
    pub chain_calls: Option<u64>,
}

impl runq_common::json::JsonDocument for DepthDocument<'_> {
    const TOOL: &'static str = "runq collatz depth-report";
    const SCHEMA_VERSION: u32 = 1;
}

impl<'a> DepthDocument<'a> {
    /// The document of `report`, with the chain depth of the target if
    /// one was given.
    pub fn new(report: &'a DepthReport, chain_calls: Option<u64>) -> Self {
        DepthDocument {
            report,
            median_graph_frames: report.median_graph_frames(),
            chain_calls,
        }
    }
}

/// Writes a map as a list of pairs (JSON object keys would be strings and
/// lose their numeric order).
fn as_pairs<S: serde::Serializer>(map: &BTreeMap<usize, u64>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(map.iter())
}

/// Whether a perf script frame line (`ADDR SYMBOL+OFF (DSO)`) is a graph
/// function.
pub fn is_graph_frame(line: &str) -> bool {
    let line = line.trim();
    // Drop the address, then the DSO and the offset.
    let sym = line.split_once(char::is_whitespace).map_or("", |(_, s)| s);
    is_graph_symbol(sym)
}

/// Whether a symbol, maybe followed by `+0xOFF` and ` (where)`, names a
/// graph function (`...callgraph::...::fNNN`).
pub fn is_graph_symbol(sym: &str) -> bool {
    let sym = sym.rfind(" (").map_or(sym, |i| &sym[..i]);
    let sym = sym.rfind("+0x").map_or(sym, |i| &sym[..i]);
    let Some((path, name)) = sym.rsplit_once("::") else {
        return false;
    };
    let digits = name.strip_prefix('f').unwrap_or("");
    path.contains("callgraph") && digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit())
}

impl DepthReport {
    /// Counts one stack, given per frame (innermost first) whether it is
    /// a graph function.
    pub fn add_sample(&mut self, frames: &[bool]) {
        if frames.is_empty() {
            return;
        }
        self.samples += 1;
        match frames.len().cmp(&self.deepest_frames) {
            std::cmp::Ordering::Greater => {
                self.deepest_frames = frames.len();
                self.samples_at_deepest = 1;
            }
            std::cmp::Ordering::Equal => self.samples_at_deepest += 1,
            std::cmp::Ordering::Less => {}
        }
        let graph = frames.iter().filter(|g| **g).count();
        if graph == 0 {
            return;
        }
        self.graph_samples += 1;
        self.deepest_graph_frames = self.deepest_graph_frames.max(graph);
        *self.graph_frames_histogram.entry(graph).or_default() += 1;
        if frames.last() == Some(&true) {
            self.cut_in_graph += 1;
        }
    }

    /// The median number of graph frames over the graph samples.
    pub fn median_graph_frames(&self) -> usize {
        let mut left = self.graph_samples.div_ceil(2);
        for (&frames, &n) in &self.graph_frames_histogram {
            if n >= left {
                return frames;
            }
            left -= n;
        }
        0
    }
}

/// Reads `perf script` text.
pub fn read_perf_script(input: impl BufRead) -> std::io::Result<DepthReport> {
    let mut report = DepthReport::default();
    let mut frames: Vec<bool> = Vec::new();
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() || !line.starts_with(char::is_whitespace) {
            // A blank line or the next sample's header ends a sample.
            report.add_sample(&frames);
            frames.clear();
        } else {
            frames.push(is_graph_frame(&line));
        }
    }
    report.add_sample(&frames);
    Ok(report)
}

/// Reads the stacks of a `runq hud --export` document.
pub fn read_hud_export(doc: &serde_json::Value) -> Option<DepthReport> {
    let events = doc.get("traceEvents")?.as_array()?;
    let mut report = DepthReport::default();
    for stack in events
        .iter()
        .filter_map(|e| e.get("args")?.get("stack")?.as_array())
    {
        let frames: Vec<bool> = stack
            .iter()
            .map(|f| f.as_str().is_some_and(is_graph_symbol))
            .collect();
        report.add_sample(&frames);
    }
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
runq 20710  2911.446382:     250000 cpu-clock:ppp: 
\t          5aa306 runq_collatz::callgraph::GRID::f574+0x46 (/x/runq)
\t          5a1de6 runq_collatz::callgraph::GRID::f148+0x46 (/x/runq)
\t          5a1de6 runq_collatz::callgraph::GRID::f148+0x46 (/x/runq)

runq 20710  2911.446620:     250000 cpu-clock:ppp: 
\t          5a6080 runq_collatz::callgraph::GRID::f362+0x0 (/x/runq)
\t          5aa306 runq_collatz::callgraph::GRID::f574+0x46 (/x/runq)
\t          68ab47 runq_collatz::runner::work+0x47 (/x/runq)
\t          68ab47 <F as core::ops::FnOnce<()>>::call_once+0x3e7 (/x/runq)
\t          1c9234 main+0x34 (/x/runq)

runq 20710  2911.447118:     250000 cpu-clock:ppp: 
\tffffffff82252ac3 xas_start+0xa3 ([kernel.kallsyms])
\t            3000 [unknown] (/usr/lib/x86_64-linux-gnu/libgcc_s.so.1)
";

    #[test]
    fn counts_frames_graph_frames_and_cut_stacks() {
        let r = read_perf_script(SCRIPT.as_bytes()).unwrap();
        assert_eq!(r.samples, 3);
        assert_eq!(r.graph_samples, 2);
        assert_eq!(r.deepest_frames, 5);
        assert_eq!(r.samples_at_deepest, 1);
        assert_eq!(r.deepest_graph_frames, 3);
        assert_eq!(r.cut_in_graph, 1, "the first stack ends inside the graph");
        assert_eq!(r.graph_frames_histogram, BTreeMap::from([(2, 1), (3, 1)]));
        assert_eq!(r.median_graph_frames(), 2);
    }

    #[test]
    fn recognizes_graph_symbols_only() {
        assert!(is_graph_frame(
            "  5aa306 runq_collatz::callgraph::GRID::f574+0x46 (/x/runq)"
        ));
        assert!(is_graph_frame("  5aa306 runq_collatz::callgraph::f000"));
        assert!(!is_graph_frame(
            "  5aa306 runq_collatz::runner::f574+0x1 (/x)"
        ));
        assert!(!is_graph_frame(
            "  5aa306 runq_collatz::callgraph::f57+0x1 (/x)"
        ));
        assert!(!is_graph_frame(
            "  5aa306 runq_collatz::callgraph::fabc (/x)"
        ));
        assert!(!is_graph_frame("  3000 [unknown] (/lib/libgcc_s.so.1)"));
    }

    #[test]
    fn reads_hud_export_stacks() {
        let doc = serde_json::json!({"traceEvents": [
            {"ph": "M", "name": "thread_name", "args": {"name": "runq"}},
            {"ph": "X", "args": {"stack": [
                "[unknown] 0x55d496bb79b0",
                "node_body (/src/callgraph.rs:43)",
                "runq_collatz::callgraph::GRID::f840 (/src/callgraph.rs:51)",
                "node_body (/src/callgraph.rs:43)",
                "runq_collatz::callgraph::GRID::f613 (/src/callgraph.rs:54)",
            ]}},
        ]});
        let r = read_hud_export(&doc).unwrap();
        assert_eq!((r.samples, r.graph_samples), (1, 1));
        assert_eq!((r.deepest_frames, r.deepest_graph_frames), (5, 2));
        assert_eq!(r.cut_in_graph, 1);
        assert!(read_hud_export(&serde_json::json!({"x": 1})).is_none());
    }

    #[test]
    fn empty_input_is_an_empty_report() {
        let r = read_perf_script(&b""[..]).unwrap();
        assert_eq!(r, DepthReport::default());
        assert_eq!(r.median_graph_frames(), 0);
    }
}
