//! What `runq hud` writes: the exports, the flame graph, the printed report
//! and a replayed report.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use runq_common::safefile::{write_atomic, AtomicFile, Replace};
use runq_hud::session::Session;

use super::HudArgs;
use crate::exit;

/// Writes `--output`, `--output-folded` and `--flamegraph`.
pub fn write_exports(args: &HudArgs, session: &Session) -> anyhow::Result<()> {
    if let Some(path) = &args.export {
        let doc = runq_hud::export::trace_json(&session.report, &session.findings);
        let text = serde_json::to_string(&doc)? + "\n";
        write_atomic(path, text.as_bytes(), Replace::OwnFile)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.export_folded.is_none() && args.flamegraph.is_none() {
        return Ok(());
    }
    let folded = runq_hud::export::folded(&session.findings);
    if let Some(path) = &args.export_folded {
        write_atomic(path, folded.as_bytes(), Replace::OwnFile)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.flamegraph {
        let mut options = inferno::flamegraph::Options::default();
        options.title = format!(
            "runq hud: time blocked, on CPU (sampled) and waiting for a CPU in pid {}",
            session.report.pid
        );
        options.count_name = "µs".into();
        let mut file = AtomicFile::create(path, Replace::OwnFile)
            .with_context(|| format!("writing {}", path.display()))?;
        if folded.is_empty() {
            // inferno refuses empty input; an empty graph says "nothing found".
            options.title.push_str(" (no blockers)");
        }
        let lines: Vec<&str> = if folded.is_empty() {
            vec!["(none) 1"]
        } else {
            folded.lines().collect()
        };
        inferno::flamegraph::from_lines(&mut options, lines, std::io::BufWriter::new(&mut file))
            .with_context(|| format!("rendering {}", path.display()))?;
        file.commit()
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Prints the session's report (text or JSON).
pub fn print_report(session: &Session, json: bool) -> anyhow::Result<()> {
    if json {
        crate::outln!("{}", runq_common::json::to_pretty(&session.report)?);
    } else {
        print_text(&session.report)?;
        if let Some(max) = session.detection_latency_ns.iter().max() {
            crate::errln!(
                "detection latency: max {} after the interval ended",
                runq_common::units::fmt_ms(*max)
            );
        }
    }
    Ok(())
}

/// Prints a report as text on stdout (a closed pipe ends it quietly).
fn print_text(report: &runq_hud::report::Report) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(runq_common::output::Stdout::new());
    runq_hud::report::render(report, &mut out)?;
    out.flush()
}

/// The largest export read (a 10-minute session at 99 Hz on 16 workers
/// writes tens of MiB).
const MAX_EXPORT_BYTES: u64 = 512 << 20;

/// Reads an `--output` file: its JSON document.
pub fn read_export(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = runq_common::infile::read_text(path, MAX_EXPORT_BYTES, "a hud export")?;
    serde_json::from_str(&text).map_err(|e| {
        exit::usage(format!(
            "{} is not JSON ({e}); pass a file written by --output",
            path.display()
        ))
    })
}

/// Prints the report saved in an export (`--replay --headless`).
pub fn replay_report(path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let doc = read_export(path)?;
    let report = runq_hud::export::report_from_trace(&doc)
        .map_err(|e| exit::usage(format!("{}: {e}", path.display())))?;
    if json {
        crate::outln!("{}", runq_common::json::to_pretty(&report)?);
    } else {
        print_text(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}
