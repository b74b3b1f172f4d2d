//! Continuous mode (`runq hud --serve NAME`): hud as a host's service.
//! Every few seconds it looks for the processes of each name it was given
//! (by comm or executable name, as `runq hud NAME` does) and runs a
//! session on each new one, in a thread of its own, until the process
//! exits (a restarted target is a new process, attached when it appears)
//! or hud is stopped. Each session rotates its window: every `window` its
//! findings become a report, added to the fleet's figures ([`metrics`])
//! and let go, so memory holds one window's findings per process and at
//! most [`metrics::MAX_ROWS`] blocker rows per name. The figures are
//! served as OpenMetrics ([`http`]) and/or written to a textfile for
//! node_exporter after every window (atomic rename).

pub mod http;
pub mod metrics;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::discovery::processes_named;
use crate::session::{self, Options, Update};
use metrics::{Dialect, FleetMetrics};

/// How often the names are looked for.
const SCAN: Duration = Duration::from_secs(2);

/// How long a process that could not be attached (no workers yet, say)
/// waits before it is tried again.
const RETRY: Duration = Duration::from_secs(10);

/// What continuous mode watches and where its figures go.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The targets' names.
    pub names: Vec<String>,
    /// How each session is run (its `pid` is each process's; `rotate` is
    /// set to `window`).
    pub session: Options,
    /// The rotation period.
    pub window: Duration,
    /// node_exporter's textfile, rewritten after each window.
    pub textfile: Option<PathBuf>,
}

/// The figures shared by the sessions, the scrape endpoint and the
/// textfile writer.
pub type Shared = Arc<Mutex<FleetMetrics>>;

/// One process's session, in its own thread.
struct Watch {
    handle: JoinHandle<()>,
}

/// Writes the textfile (Prometheus text 0.0.4) atomically.
fn write_textfile(path: &std::path::Path, metrics: &Shared) {
    let text = match metrics.lock() {
        Ok(m) => m.render(Dialect::Prometheus),
        Err(_) => return,
    };
    let replace = runq_common::safefile::Replace::OwnFile;
    if let Err(e) = runq_common::safefile::write_atomic(path, text.as_bytes(), replace) {
        log::warn!("hud --serve: writing {}: {e}", path.display());
    }
}

/// Runs one process's session to its end, adding each window to the
/// figures. Returns false when the session could not start.
fn watch_process(cfg: &ServeOptions, name: &str, pid: u32, stop: &AtomicBool, m: &Shared) -> bool {
    let opts = Options {
        pid,
        duration: None,
        rotate: Some(cfg.window),
        ..cfg.session.clone()
    };
    let add = |r: &crate::report::Report| {
        if let Ok(mut g) = m.lock() {
            g.add_window(name, r);
        }
        if let Some(path) = &cfg.textfile {
            write_textfile(path, m);
        }
    };
    if let Ok(mut g) = m.lock() {
        g.attached(name, pid);
    }
    log::info!("hud --serve: watching {name} (pid {pid})");
    let outcome = session::run(&opts, stop, |u| {
        if let Update::Window(r) = u {
            add(r);
        }
    });
    let started = match outcome {
        Ok(s) => {
            add(&s.report);
            true
        }
        Err(e) => {
            log::warn!("hud --serve: {name} (pid {pid}): {e}");
            false
        }
    };
    if let Ok(mut g) = m.lock() {
        g.down(name, pid);
    }
    if let Some(path) = &cfg.textfile {
        write_textfile(path, m);
    }
    started
}

/// The parent of process `pid` (from `PROC/PID/stat`), if it still runs.
fn parent_of(proc_root: &std::path::Path, pid: u32) -> Option<u32> {
    let text = std::fs::read(proc_root.join(format!("{pid}/stat"))).ok()?;
    u32::try_from(runq_kernel::proc::stat::parse_stat(&text)?.ppid).ok()
}

/// Runs continuous mode until `stop` is set: watches every process of
/// every name, the new ones as they appear.
pub fn serve(cfg: &ServeOptions, stop: &'static AtomicBool, metrics: &Shared) {
    if let Ok(mut g) = metrics.lock() {
        cfg.names.iter().for_each(|n| g.named(n));
    }
    if let Some(path) = &cfg.textfile {
        write_textfile(path, metrics);
    }
    let mut watching: BTreeMap<u32, Watch> = BTreeMap::new();
    let failed: Arc<Mutex<BTreeMap<u32, Instant>>> = Arc::default();
    while !stop.load(Ordering::Relaxed) {
        watching.retain(|_, w| !w.handle.is_finished());
        let now = Instant::now();
        if let Ok(mut f) = failed.lock() {
            f.retain(|_, at| now.duration_since(*at) < RETRY);
        }
        let skip: BTreeSet<u32> = failed
            .lock()
            .map(|f| f.keys().copied().collect())
            .unwrap_or_default();
        for name in &cfg.names {
            for (pid, _) in processes_named(&cfg.session.proc_root, name) {
                if watching.contains_key(&pid) || skip.contains(&pid) {
                    continue;
                }
                // A watched process's child under its name is a fork on its
                // way to exec (a service running a command), no new
                // instance: attaching to it would cost a BPF load for a
                // process gone in a moment.
                let parent = parent_of(&cfg.session.proc_root, pid);
                if parent.is_some_and(|p| watching.contains_key(&p)) {
                    continue;
                }
                let (cfg, name, m, failed) =
                    (cfg.clone(), name.clone(), metrics.clone(), failed.clone());
                let handle = std::thread::spawn(move || {
                    if !watch_process(&cfg, &name, pid, stop, &m) {
                        if let Ok(mut f) = failed.lock() {
                            f.insert(pid, Instant::now());
                        }
                    }
                });
                watching.insert(pid, Watch { handle });
            }
        }
        let until = Instant::now() + SCAN;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    for (_, w) in watching {
        let _ = w.handle.join();
    }
}

#[cfg(test)]
mod tests {
    use super::parent_of;
    use std::path::Path;

    #[test]
    fn a_process_parent_is_read_from_its_stat() {
        let me = std::process::id();
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() } as u32;
        assert_eq!(parent_of(Path::new("/proc"), me), Some(parent));
        assert_eq!(parent_of(Path::new("/nonexistent"), me), None);
    }
}
