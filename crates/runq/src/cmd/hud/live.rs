//! The live view of `runq hud`: the session on its own thread feeding the
//! screen through a bounded channel, and the replay of an export.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use runq_hud::live::app::App;
use runq_hud::live::model::{LiveModel, Status};
use runq_hud::session::{self, Options, Session};

use super::{output, HudArgs};
use crate::exit;

fn require_tty() -> anyhow::Result<()> {
    if !crate::style::stdout_is_tty() {
        return Err(exit::usage(
            "the live view needs a terminal: add --headless for a report",
        ));
    }
    Ok(())
}

/// Runs a session with the live view; returns the session when the user
/// quits, the duration ends or the target exits.
pub fn live_screen(
    opts: Options,
    args: &HudArgs,
    stop: &'static AtomicBool,
) -> anyhow::Result<Session> {
    require_tty()?;
    let (feed, rx, shared) = runq_hud::live::channel();
    let discovery = "discovering workers".to_string();
    let status = Status {
        target: format!("pid {}", opts.pid),
        discovery,
        threshold_ns: opts.threshold_ns,
        health: "live".into(),
        app: session::app_code(&opts),
        ..Default::default()
    };
    let model = LiveModel::new(args.window.as_nanos() as u64, status);
    let app = App::new(model, crate::style::color_enabled());
    let worker = std::thread::spawn(move || {
        let result = session::run(&opts, stop, |u| feed.update(u));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    });
    runq_hud::live::run_screen(
        app,
        &rx,
        &shared,
        stop,
        Some(runq_kernel::clock::monotonic_ns),
    )?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let result = worker
        .join()
        .map_err(|_| anyhow::anyhow!("the hud session thread panicked"))?;
    Ok(result?)
}

/// Opens the live view on a saved export.
pub fn replay_screen(path: &Path, args: &HudArgs) -> anyhow::Result<ExitCode> {
    require_tty()?;
    let doc = output::read_export(path)?;
    let report = runq_hud::export::report_from_trace(&doc)
        .map_err(|e| exit::usage(format!("{}: {e}", path.display())))?;
    let findings = runq_hud::live::replay::findings(&doc);
    let span = findings
        .iter()
        .map(|f| f.start_ns + f.duration_ns)
        .max()
        .unwrap_or(0)
        - findings.iter().map(|f| f.start_ns).min().unwrap_or(0);
    let status = Status {
        target: format!("pid {} ({})", report.pid, report.comm),
        discovery: report.discovery.clone(),
        threshold_ns: report.threshold_ns,
        lost: report.lost_events,
        health: format!("replay of {}", path.display()),
        stacks: format!(
            "stacks: {} ({})",
            report.stacks.source.label(),
            report.stacks.reason
        ),
        app: runq_hud::culprit::AppCode::named(report.app_crates.iter().cloned()),
        ..Default::default()
    };
    let mut model = LiveModel::new(span.max(args.window.as_nanos() as u64) + 1, status);
    for f in findings {
        model.push(f);
    }
    let (_feed, rx, shared) = runq_hud::live::channel();
    let stop = AtomicBool::new(false);
    let app = App::new(model, crate::style::color_enabled());
    runq_hud::live::run_screen(app, &rx, &shared, &stop, None)?;
    Ok(ExitCode::SUCCESS)
}
