//! A gateway with two runtimes, the shape of many services: a
//! multi-thread runtime (threads named `gw-rt`, the blocking pool's too)
//! serves the handlers, and a `current_thread` runtime on a thread of its
//! own (`gw-audit`) flushes an audit log. The tests build it with cargo's
//! defaults (no frame pointers). Each handler blocks in a known way:
//!
//! - `verify_login`: `block_in_place` around a slow password check (the
//!   worker hands its core off first: not a blocker);
//! - `render_report_page`: a sleep under a stack at least 24 KiB deep (pages
//!   of a report rendered recursively, 1 KiB of locals each);
//! - `archive_batch`: the same sleep in `spawn_blocking` (never a
//!   blocker);
//! - `flush_audit_log`: a sleep in the `current_thread` runtime's task.
//!
//! `runq-demo-gateway [SECONDS] [tokio-names|deep|calm|cooperative]`; prints
//! its pid first, and at the end the time each call spent in its blocking
//! part as it measured it (`truth NAME CALLS TOTAL_NS`). With
//! `tokio-names` the multi-thread runtime keeps Tokio's default thread
//! names. `deep` renders twice as deep (48 KiB of sections: deeper than
//! the stack hud copies). `calm` and `cooperative` replace each blocking part of the
//! handlers and of the audit flush by what well-behaved code does: a
//! Tokio timer of the same length, or that long of work in 1 ms slices
//! with a `yield_now` between them (no blocker either way).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long each blocking part lasts.
const BLOCK: Duration = Duration::from_millis(25);
/// Pause between two calls of a handler.
const PERIOD: Duration = Duration::from_millis(100);
/// Nesting of the recursive renderer (1 KiB of locals per level).
const DEPTH: u32 = 24;
/// The same with `deep`.
const DEEP: u32 = 48;

/// Calls and total ns of one blocking part, as the service measured them.
struct Truth {
    name: &'static str,
    calls: AtomicU64,
    ns: AtomicU64,
}

impl Truth {
    const fn new(name: &'static str) -> Self {
        Truth {
            name,
            calls: AtomicU64::new(0),
            ns: AtomicU64::new(0),
        }
    }

    /// Runs `f`, adding its wall time.
    fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let r = f();
        self.add(t.elapsed());
        r
    }

    /// Adds one call of length `d`.
    fn add(&self, d: Duration) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// How the handlers wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// They block, each in its own way.
    Blocking,
    /// A Tokio timer instead.
    Calm,
    /// Work in 1 ms slices with a `yield_now` between them instead.
    Cooperative,
}

/// The mode the second argument names.
fn mode() -> Mode {
    match std::env::args().nth(2).as_deref() {
        Some("calm") => Mode::Calm,
        Some("cooperative") => Mode::Cooperative,
        _ => Mode::Blocking,
    }
}

/// Spends [`BLOCK`] as well-behaved async code does.
async fn wait_well(mode: Mode) {
    if mode == Mode::Calm {
        tokio::time::sleep(BLOCK).await;
        return;
    }
    for _ in 0..BLOCK.as_millis() {
        std::hint::black_box(runq_demo::burn(Duration::from_millis(1)));
        tokio::task::yield_now().await;
    }
}

/// A handler that waits well every [`PERIOD`], timed into `truth`.
async fn well_behaved(truth: &'static Truth, mode: Mode) {
    loop {
        let t = Instant::now();
        wait_well(mode).await;
        truth.add(t.elapsed());
        tokio::time::sleep(PERIOD).await;
    }
}

static LOGIN: Truth = Truth::new("verify_login");
static REPORT: Truth = Truth::new("render_report_page");
static ARCHIVE: Truth = Truth::new("archive_batch");
static AUDIT: Truth = Truth::new("flush_audit_log");

fn main() {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_time();
    if std::env::args().nth(2).as_deref() != Some("tokio-names") {
        builder.thread_name("gw-rt");
    }
    let runtime = builder.build().expect("tokio runtime");
    println!("{}", std::process::id());
    std::thread::Builder::new()
        .name("gw-audit".into())
        .spawn(audit_runtime)
        .expect("audit thread");
    runtime.block_on(serve());
    for t in [&LOGIN, &REPORT, &ARCHIVE, &AUDIT] {
        let (calls, ns) = (
            t.calls.load(Ordering::Relaxed),
            t.ns.load(Ordering::Relaxed),
        );
        println!("truth {} {calls} {ns}", t.name);
    }
    // Exits with the handlers still running: shutting the runtime down
    // under a block_in_place would fail its timers.
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

async fn serve() {
    match mode() {
        Mode::Blocking => {
            tokio::spawn(every(|| {
                LOGIN.time(|| tokio::task::block_in_place(verify_login));
            }));
            let depth = match std::env::args().nth(2).as_deref() {
                Some("deep") => DEEP,
                _ => DEPTH,
            };
            tokio::spawn(every(move || {
                REPORT.time(|| render_report_page(depth));
            }));
        }
        well => {
            tokio::spawn(well_behaved(&LOGIN, well));
            tokio::spawn(well_behaved(&REPORT, well));
        }
    }
    tokio::spawn(async {
        loop {
            let archived = tokio::task::spawn_blocking(|| ARCHIVE.time(archive_batch));
            let _ = archived.await;
            tokio::time::sleep(PERIOD).await;
        }
    });
    match runq_demo::duration_from_args() {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

/// Calls `handler` every [`PERIOD`], in task code.
async fn every(mut handler: impl FnMut()) {
    loop {
        handler();
        tokio::time::sleep(PERIOD).await;
    }
}

/// The `current_thread` runtime: its `block_on` runs the audit task on
/// this thread until the service's time is up.
fn audit_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("audit runtime");
    let lifetime = runq_demo::duration_from_args().unwrap_or(Duration::MAX);
    rt.block_on(async move {
        let until = Instant::now() + lifetime;
        let mode = mode();
        while Instant::now() < until {
            match mode {
                Mode::Blocking => {
                    AUDIT.time(flush_audit_log);
                }
                well => {
                    let t = Instant::now();
                    wait_well(well).await;
                    AUDIT.add(t.elapsed());
                }
            }
            tokio::time::sleep(PERIOD).await;
        }
    });
}

/// A slow password check, run inside `block_in_place`.
#[inline(never)]
fn verify_login() -> u64 {
    std::thread::sleep(BLOCK);
    std::hint::black_box(1)
}

/// Renders a page of a report, one nested section per level, each with
/// 1 KiB of locals, and waits for the data at the deepest one.
#[inline(never)]
fn render_report_page(depth: u32) -> u64 {
    let mut section = [0u8; 1024];
    section[depth as usize % 1024] = depth as u8;
    let section = std::hint::black_box(&mut section);
    if depth == 0 {
        std::thread::sleep(BLOCK);
        return u64::from(section[0]) + 1;
    }
    render_report_page(depth - 1) + u64::from(section[depth as usize % 1024])
}

/// The same wait, run on the blocking pool.
#[inline(never)]
fn archive_batch() -> u64 {
    std::thread::sleep(BLOCK);
    std::hint::black_box(2)
}

/// Writes the audit log out, blocking the `current_thread` runtime.
#[inline(never)]
fn flush_audit_log() -> u64 {
    std::thread::sleep(BLOCK);
    std::hint::black_box(3)
}
