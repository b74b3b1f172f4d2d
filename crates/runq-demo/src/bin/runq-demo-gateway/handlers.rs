//! The gateway's routes, behind a middleware that stamps each response
//! and a concurrency limit. Each one calls a function that blocks its
//! worker in a known way (each `#[inline(never)]`, so its frame is kept):
//!
//! - `/report`, [`render_report_page`]: a sleep under a stack at least
//!   24 KiB deep (nested sections, 1 KiB of locals each);
//! - `/login`, [`verify_login`]: a sleep inside `block_in_place` (the
//!   worker hands its core off first: not a blocker), or directly;
//! - `/token`, [`sign_token`]: a password hash, CPU-bound pure Rust;
//! - `/resolve`, [`resolve_upstream`]: name lookups through
//!   `ToSocketAddrs` (glibc's `getaddrinfo`);
//! - `/import`, [`import_catalog`]: a 24 MiB `std::fs::read` and parse;
//! - `/archive`, [`archive_batch`]: a sleep run through `spawn_blocking`
//!   (never a blocker);
//! - `/rotate`, [`rotate_logs`]: a sleep as the last statement of a
//!   function, which the compiler turns into a tail call (`jmp`): the
//!   function leaves no frame, and the sleep is its caller's.

use std::fs::File;
use std::net::ToSocketAddrs;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use runq_demo::Truth;
use tower::limit::ConcurrencyLimitLayer;

use crate::{wait_well, Mode, BLOCK};

static REPORT: Truth = Truth::new("render_report_page");
static LOGIN: Truth = Truth::new("verify_login");
static TOKEN: Truth = Truth::new("sign_token");
static RESOLVE: Truth = Truth::new("resolve_upstream");
static IMPORT: Truth = Truth::new("import_catalog");
static ARCHIVE: Truth = Truth::new("archive_batch");
static ROTATE: Truth = Truth::new("rotate");

/// What the routes measured, to print at the end.
pub(crate) static TRUTHS: [&Truth; 7] = [
    &REPORT, &LOGIN, &TOKEN, &RESOLVE, &IMPORT, &ARCHIVE, &ROTATE,
];

/// CPU time of one password hash (its cost parameter), ns: the same in
/// a debug and a release build.
const HASH_CPU_NS: u64 = 20_000_000;
/// How long a resolve keeps looking names up.
const RESOLVE_FOR: Duration = Duration::from_millis(20);
/// The catalog's size.
const CATALOG_BYTES: usize = 24 << 20;

/// What the routes share.
pub(crate) struct Config {
    /// How the blocking parts wait.
    pub(crate) mode: Mode,
    /// Sections of a report page.
    pub(crate) depth: u32,
    /// The login check runs inside `block_in_place`.
    pub(crate) login_in_place: bool,
    /// The file `/import` reads.
    pub(crate) catalog: Catalog,
}

/// A catalog of `item,price` lines in an unlinked file, reachable by path
/// through `/proc/self/fd` while this process lives (a killed gateway
/// leaves nothing behind).
pub(crate) struct Catalog {
    _file: File,
    path: PathBuf,
}

impl Catalog {
    /// Writes [`CATALOG_BYTES`] of lines into a new temporary file.
    pub(crate) fn new() -> std::io::Result<Self> {
        let at = std::env::temp_dir().join(format!("runq-gateway-{}.csv", std::process::id()));
        let mut text = String::with_capacity(CATALOG_BYTES + 32);
        let mut i = 0u64;
        while text.len() < CATALOG_BYTES {
            text.push_str(&format!("item-{i:08},{}\n", i % 997));
            i += 1;
        }
        std::fs::write(&at, text)?;
        let file = File::open(&at)?;
        std::fs::remove_file(&at)?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        Ok(Catalog { _file: file, path })
    }
}

/// The gateway's routes and layers.
pub(crate) fn router(config: Config) -> Router {
    Router::new()
        .route("/report", get(report))
        .route("/login", get(login))
        .route("/token", get(token))
        .route("/resolve", get(resolve))
        .route("/import", get(import))
        .route("/archive", get(archive))
        .route("/rotate", get(rotate))
        .layer(axum::middleware::from_fn(stamp))
        .layer(ConcurrencyLimitLayer::new(64))
        .with_state(Arc::new(config))
}

/// The middleware: marks each response as the gateway's.
async fn stamp(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let mark = HeaderValue::from_static("runq-demo-gateway");
    response.headers_mut().insert("x-served-by", mark);
    response
}

/// Runs the blocking part `block` of a route, timed into `truth`; in the
/// well-behaved modes waits `len` well instead.
async fn part<R: ToString>(
    config: &Config,
    truth: &'static Truth,
    len: Duration,
    block: impl FnOnce() -> R,
) -> String {
    if config.mode == Mode::Blocking {
        return truth.time(block).to_string();
    }
    let t = Instant::now();
    wait_well(config.mode, len).await;
    truth.add(t.elapsed(), Default::default());
    String::from("ok")
}

async fn report(State(config): State<Arc<Config>>) -> String {
    part(&config, &REPORT, BLOCK, || render_report_page(config.depth)).await
}

async fn login(State(config): State<Arc<Config>>) -> String {
    let in_place = config.login_in_place;
    part(&config, &LOGIN, BLOCK, || {
        if in_place {
            tokio::task::block_in_place(verify_login)
        } else {
            verify_login()
        }
    })
    .await
}

async fn token(State(config): State<Arc<Config>>) -> String {
    let len = Duration::from_millis(20);
    part(&config, &TOKEN, len, || sign_token(b"hunter2", b"gateway")).await
}

async fn resolve(State(config): State<Arc<Config>>) -> String {
    part(&config, &RESOLVE, RESOLVE_FOR, resolve_upstream).await
}

async fn import(State(config): State<Arc<Config>>) -> String {
    let len = Duration::from_millis(30);
    part(&config, &IMPORT, len, || import_catalog(&config.catalog)).await
}

async fn rotate(State(config): State<Arc<Config>>) -> String {
    let rotated = || {
        rotate_logs();
        "rotated"
    };
    part(&config, &ROTATE, BLOCK, rotated).await
}

async fn archive() -> String {
    let archived = tokio::task::spawn_blocking(|| ARCHIVE.time(archive_batch)).await;
    archived.unwrap_or_default().to_string()
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

/// A slow password check.
#[inline(never)]
fn verify_login() -> u64 {
    std::thread::sleep(BLOCK);
    std::hint::black_box(1)
}

/// An iterated password hash (FNV-1a over the password and salt, then
/// rounds of a 64-bit mix for [`HASH_CPU_NS`] of CPU): CPU-bound pure
/// Rust.
#[inline(never)]
fn sign_token(password: &[u8], salt: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in password.iter().chain(salt) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let start = runq_demo::thread_cpu_ns();
    let mut round = 0u64;
    while runq_demo::thread_cpu_ns() - start < HASH_CPU_NS {
        // The clock is read about once a millisecond: its system call is
        // no part of the hash.
        for _ in 0..1 << 18 {
            round += 1;
            h ^= round;
            h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            h ^= h >> 31;
        }
    }
    std::hint::black_box(h)
}

/// Looks the upstream's name up (`ToSocketAddrs`, glibc's `getaddrinfo`)
/// again and again for [`RESOLVE_FOR`]; returns the addresses found.
#[inline(never)]
fn resolve_upstream() -> usize {
    let t = Instant::now();
    let mut found = 0;
    while t.elapsed() < RESOLVE_FOR {
        found += ("localhost", 80).to_socket_addrs().map_or(0, |a| a.count());
    }
    std::hint::black_box(found)
}

/// Reads the whole catalog with `std::fs::read` and sums its prices.
#[inline(never)]
fn import_catalog(catalog: &Catalog) -> u64 {
    let Ok(bytes) = std::fs::read(&catalog.path) else {
        return 0;
    };
    let prices = bytes.split(|b| *b == b'\n').filter_map(|line| {
        let comma = line.iter().position(|b| *b == b',')?;
        std::str::from_utf8(&line[comma + 1..])
            .ok()?
            .parse::<u64>()
            .ok()
    });
    std::hint::black_box(prices.sum())
}

/// The same sleep as [`verify_login`], run on the blocking pool.
#[inline(never)]
fn archive_batch() -> u64 {
    std::thread::sleep(BLOCK);
    std::hint::black_box(2)
}

/// Rotates the logs: its last statement, the sleep, is compiled as a
/// tail call, so no frame of this function is on the sleep's stack.
#[inline(never)]
fn rotate_logs() {
    ROTATIONS.fetch_add(1, Ordering::Relaxed);
    std::thread::sleep(BLOCK)
}

/// Log rotations so far.
static ROTATIONS: AtomicU64 = AtomicU64::new(0);
