//! A gRPC service as others build theirs, to try hud on: tonic (HTTP/2)
//! serving a hand-written `runq.demo.Vault` service (see [`service`]) on
//! a multi-thread runtime of 4 workers, whose workers and blocking-pool
//! threads share one numbered name (`rpc-0`, `rpc-1`, ...: Tokio's
//! `thread_name_fn`), and a `current_thread` runtime on a thread of its
//! own (`vault-client`) calling each method over a tonic `Channel`. Each
//! method blocks its worker in a known way, in a function of its own
//! (see [`handlers`], [`cpu`] and [`io`]); the index rebuild runs through
//! `spawn_blocking` (never a blocker).
//!
//! `runq-demo-tonic [SECONDS] [MODE]` prints its pid first, once it
//! serves, and at the end what each blocking part cost as it measured it
//! (`truth NAME CALLS WALL_NS CPU_NS WAIT_NS`, see [`runq_demo::Truth`]);
//! every 250 ms the running totals, each line after `at NS`
//! (`CLOCK_MONOTONIC`), and the threads that ran handlers and pool work
//! (`threads workers TID,... pool TID,...`: the threads that unparked
//! as workers, and those that ran `spawn_blocking` work). In the `calm` mode every
//! blocking part runs through `spawn_blocking`: nothing blocks a worker.

mod client;
mod cpu;
mod handlers;
mod io;
mod proto;
mod service;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where the handlers' blocking parts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// On the worker: each blocks it in its own way.
    Blocking,
    /// On the blocking pool, through `spawn_blocking`.
    Calm,
}

/// The tids of `threads`, comma-separated.
fn tids(threads: &Mutex<BTreeSet<i32>>) -> String {
    let threads = threads.lock().unwrap_or_else(|e| e.into_inner());
    let tids: Vec<String> = threads.iter().map(i32::to_string).collect();
    tids.join(",")
}

/// Prints what every part measured so far, each line after `at NS` (the
/// `CLOCK_MONOTONIC` time, the clock of hud's findings) when `running`,
/// and the threads seen in the runtime's two roles.
fn print_truths(running: bool) {
    let at = runq_demo::monotonic_ns();
    for t in handlers::TRUTHS {
        match running {
            true => println!("at {at} {}", t.line()),
            false => println!("{}", t.line()),
        }
    }
    let (workers, pool) = (tids(&handlers::WORKERS), tids(&handlers::POOL));
    println!("threads workers {workers} pool {pool}");
}

/// The multi-thread runtime: 4 workers, and every thread of it (workers
/// and blocking pool alike) named `rpc-N`.
fn runtime() -> tokio::runtime::Runtime {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .thread_name_fn(|| format!("rpc-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
        // Only a worker parks and unparks: the truth of which `rpc-N`
        // threads are workers, whether or not they ran a handler.
        .on_thread_unpark(|| handlers::note(&handlers::WORKERS))
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The handlers' state in `mode`, with its threads started.
fn state(mode: Mode) -> handlers::State {
    handlers::State {
        mode,
        manifest: cpu::manifest(2000),
        pattern: cpu::route_pattern(200),
        backend: io::start_echo().expect("the echo thread"),
        journal: io::Journal::start().expect("the journal file"),
        ledger: io::Ledger::start(),
        records: AtomicU64::new(0),
    }
}

fn main() {
    let lifetime = runq_demo::duration_from_args();
    let mode = match std::env::args().nth(2).as_deref() {
        Some("calm") => Mode::Calm,
        _ => Mode::Blocking,
    };
    let server = service::VaultServer::new(state(mode));
    runtime().block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let addr = listener.local_addr().expect("the local address");
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let router = tonic::transport::Server::builder().add_service(server);
        tokio::spawn(router.serve_with_incoming(incoming));
        client::start(addr);
        runq_demo::report_while_serving(lifetime, print_truths).await;
    });
    runq_demo::finish(print_truths)
}
