//! `runq hud --serve NAME`: continuous mode, hud as a host's service. It
//! watches every process of each name (restarts included) and exports
//! its blockers as OpenMetrics on `--metrics-addr` and/or to a textfile
//! for node_exporter (`--metrics-file`), rotating its window.

use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use runq_hud::fleet::{self, ServeOptions};
use runq_hud::session::Options;

use super::HudArgs;
use crate::exit;

/// The shortest rotation window.
const MIN_WINDOW: Duration = Duration::from_secs(1);

/// Binds the scrape endpoint; a bad or busy address is the user's to fix.
fn listen(addr: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| {
        exit::usage(format!(
            "--metrics-addr {addr}: cannot listen there: {e}; give a free HOST:PORT, e.g. 0.0.0.0:9464"
        ))
    })
}

/// Checks continuous mode's arguments; returns the scrape listener.
fn check(args: &HudArgs) -> anyhow::Result<Option<TcpListener>> {
    if args.metrics_addr.is_none() && args.metrics_file.is_none() {
        return Err(exit::usage(
            "--serve exports its figures: give --metrics-addr HOST:PORT, --metrics-file FILE, or both",
        ));
    }
    if args.window < MIN_WINDOW {
        return Err(exit::usage(format!(
            "--window {:?}: continuous mode rotates at least every second; give 1s or more",
            args.window
        )));
    }
    if let Some(path) = &args.metrics_file {
        runq_common::safefile::check_destination(path, runq_common::safefile::Replace::OwnFile)
            .map_err(|e| {
                exit::usage(format!(
                    "--metrics-file {}: cannot be written: {e}; name a file in a writable directory",
                    path.display()
                ))
            })?;
    }
    args.metrics_addr.as_deref().map(listen).transpose()
}

/// Runs continuous mode until SIGINT, SIGTERM, SIGHUP or SIGQUIT, and
/// ends with 128+N as every long command does.
pub(super) fn execute(args: &HudArgs, session: Options) -> anyhow::Result<ExitCode> {
    let listener = check(args)?;
    if !super::privileged() {
        return Err(exit::no_privilege(
            "runq hud needs root, or CAP_BPF and CAP_PERFMON, to load its BPF programs",
        ));
    }
    let stop = runq_kernel::signal::install().context("installing signal handlers")?;
    let metrics: fleet::Shared = Arc::new(Mutex::new(Default::default()));
    let mut outputs = Vec::new();
    let server = match listener {
        Some(l) => {
            outputs.push(format!("http://{}/metrics", l.local_addr()?));
            Some(fleet::http::spawn(l, metrics.clone(), stop)?)
        }
        None => None,
    };
    if let Some(path) = &args.metrics_file {
        outputs.push(path.display().to_string());
    }
    crate::errln!(
        "hud --serve: watching {} (every {:?} window); figures at {}",
        args.serve.join(", "),
        args.window,
        outputs.join(" and ")
    );
    let cfg = ServeOptions {
        names: args.serve.clone(),
        session,
        window: args.window,
        textfile: args.metrics_file.clone(),
    };
    fleet::serve(&cfg, stop, &metrics);
    if let Some(s) = server {
        let _ = s.join();
    }
    Ok(match runq_kernel::signal::received_signal() {
        Some(sig) => exit::Exit::Interrupted(sig).exit_code(),
        None => ExitCode::SUCCESS,
    })
}
