//! An HTTP gateway of the most common kind, to try hud on: axum over
//! hyper 1 with tower layers (a middleware and a concurrency limit), under
//! steady HTTP/1.1 load from client threads of its own. A multi-thread
//! runtime of 4 workers (threads named `gw-rt`, the blocking pool's too)
//! serves the routes, and a `current_thread` runtime on a thread of its
//! own (`gw-audit`) flushes an audit log. The tests build it with cargo's
//! defaults (no frame pointers). Each route blocks in a known way (see
//! [`handlers`] and [`audit`]).
//!
//! `runq-demo-gateway [SECONDS] [MODE]` prints its pid first, once it
//! serves, and at the end what each blocking part cost as it measured it
//! (`truth NAME CALLS WALL_NS CPU_NS WAIT_NS`, see [`runq_demo::Truth`]);
//! every 250 ms the running totals, each line after `at NS`
//! (`CLOCK_MONOTONIC`). Modes:
//!
//! - `tokio-names`: the multi-thread runtime keeps Tokio's thread names;
//! - `deep`: the report renders twice as deep (48 KiB of sections, deeper
//!   than the stack hud copies);
//! - `no-block-in-place`: the login check blocks its worker directly;
//! - `calm`, `cooperative`: each blocking part is replaced by what
//!   well-behaved code does: a Tokio timer of the same length, or that
//!   long of work in 1 ms slices with a `yield_now` between them.

mod audit;
mod client;
mod handlers;

use std::time::Duration;

/// How long each blocking part lasts.
const BLOCK: Duration = Duration::from_millis(25);

/// How the gateway's blocking parts wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// They block, each in its own way.
    Blocking,
    /// A Tokio timer instead.
    Calm,
    /// Work in 1 ms slices with a `yield_now` between them instead.
    Cooperative,
}

/// Spends `d` as well-behaved async code does.
async fn wait_well(mode: Mode, d: Duration) {
    if mode == Mode::Calm {
        tokio::time::sleep(d).await;
        return;
    }
    for _ in 0..d.as_millis() {
        std::hint::black_box(runq_demo::burn(Duration::from_millis(1)));
        tokio::task::yield_now().await;
    }
}

/// Prints what every part measured so far, each line after `at NS` (the
/// `CLOCK_MONOTONIC` time, the clock of hud's findings) when `running`:
/// the running totals that let a test take the figures of a window.
fn print_truths(running: bool) {
    let at = runq_demo::monotonic_ns();
    for t in handlers::TRUTHS.iter().copied().chain([&audit::AUDIT]) {
        match running {
            true => println!("at {at} {}", t.line()),
            false => println!("{}", t.line()),
        }
    }
}

fn main() {
    let option = std::env::args().nth(2).unwrap_or_default();
    let mode = match option.as_str() {
        "calm" => Mode::Calm,
        "cooperative" => Mode::Cooperative,
        _ => Mode::Blocking,
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(4).enable_all();
    if option != "tokio-names" {
        builder.thread_name("gw-rt");
    }
    let runtime = builder.build().expect("tokio runtime");
    let lifetime = runq_demo::duration_from_args();
    audit::start(mode, lifetime.unwrap_or(Duration::MAX));
    let config = handlers::Config {
        mode,
        depth: if option == "deep" { 48 } else { 24 },
        login_in_place: option != "no-block-in-place",
        catalog: handlers::Catalog::new().expect("the catalog file"),
    };
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let addr = listener.local_addr().expect("the local address");
        let app = handlers::router(config);
        tokio::spawn(async move { axum::serve(listener, app).await });
        client::start(addr);
        runq_demo::report_while_serving(lifetime, print_truths).await;
    });
    runq_demo::finish(print_truths)
}
