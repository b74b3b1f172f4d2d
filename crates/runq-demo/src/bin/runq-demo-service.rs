//! A service hud has never seen, built the way cargo builds by default (the
//! tests build it without frame pointers and without debug info). Its
//! runtime threads carry a custom name that the blocking pool shares, and
//! its handlers block inside real code that is not theirs:
//!
//! - `compress_orders`: zstd compression, a C library linked statically;
//! - `checksum_archive`: zlib's `compress2` and `crc32`, the system's
//!   stripped shared library (`libz.so.1`, opened at run time, so the
//!   build needs no zlib headers);
//! - `render_invoice`: a child process waited on;
//! - `update_ledger`: a parking_lot mutex held by another thread;
//! - `cooperative_batch`: well-behaved code, 1 ms of work per poll and a
//!   `yield_now`, on more tasks than workers: never a blocker.
//!
//! `runq-demo-service [SECONDS]`; prints its pid first.

use std::ffi::{c_int, c_ulong, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runtime threads' name, shared by the workers and the blocking pool.
const THREAD_NAME: &str = "orders-rt";
/// How long each blocker blocks.
const BLOCK: Duration = Duration::from_millis(30);
/// Pause between two calls of a handler.
const PERIOD: Duration = Duration::from_millis(100);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(THREAD_NAME)
        .enable_time()
        .build()
        .expect("tokio runtime");
    println!("{}", std::process::id());
    runtime.block_on(serve());
    runtime.shutdown_timeout(Duration::from_millis(100));
}

async fn serve() {
    let ledger = contended_ledger();
    let zlib = Arc::new(Zlib::open());
    every(PERIOD, || {
        std::hint::black_box(compress_orders());
    });
    every(PERIOD, move || {
        std::hint::black_box(checksum_archive(&zlib));
    });
    every(PERIOD, || {
        std::hint::black_box(render_invoice());
    });
    every(PERIOD, move || {
        std::hint::black_box(update_ledger(&ledger));
    });
    for _ in 0..6 {
        tokio::spawn(cooperative_batch());
    }
    match runq_demo::duration_from_args() {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

/// Runs `handler` in a task every `period`.
fn every(period: Duration, mut handler: impl FnMut() + Send + 'static) {
    tokio::spawn(async move {
        loop {
            handler();
            tokio::time::sleep(period).await;
        }
    });
}

/// Compresses an order batch with zstd until [`BLOCK`] has passed.
#[inline(never)]
fn compress_orders() -> usize {
    let orders: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    let start = Instant::now();
    let mut total = 0;
    while start.elapsed() < BLOCK {
        total += zstd::bulk::compress(&orders, 19).map_or(0, |c| c.len());
    }
    total
}

/// zlib, opened at run time from the system's shared library.
struct Zlib {
    compress2:
        Option<unsafe extern "C" fn(*mut u8, *mut c_ulong, *const u8, c_ulong, c_int) -> c_int>,
    crc32: Option<unsafe extern "C" fn(c_ulong, *const u8, u32) -> c_ulong>,
}

impl Zlib {
    fn open() -> Self {
        // SAFETY: dlopen/dlsym with NUL-terminated names; the symbols have
        // zlib's documented signatures.
        unsafe {
            let lib = libc::dlopen(c"libz.so.1".as_ptr(), libc::RTLD_NOW);
            let sym = |name: &std::ffi::CStr| -> *mut c_void {
                if lib.is_null() {
                    std::ptr::null_mut()
                } else {
                    libc::dlsym(lib, name.as_ptr())
                }
            };
            let (c, k) = (sym(c"compress2"), sym(c"crc32"));
            Zlib {
                compress2: (!c.is_null()).then(|| std::mem::transmute(c)),
                crc32: (!k.is_null()).then(|| std::mem::transmute(k)),
            }
        }
    }
}

/// Compresses and checksums an archive with zlib until [`BLOCK`] has
/// passed.
#[inline(never)]
fn checksum_archive(z: &Zlib) -> u64 {
    let (Some(compress2), Some(crc32)) = (z.compress2, z.crc32) else {
        return 0;
    };
    let archive: Vec<u8> = (0..512 * 1024u32).map(|i| (i * 13 % 241) as u8).collect();
    let mut out = vec![0u8; archive.len() + 1024];
    let start = Instant::now();
    let mut sum = 0u64;
    while start.elapsed() < BLOCK {
        let mut len = out.len() as c_ulong;
        // SAFETY: buffers valid for the lengths given.
        unsafe {
            compress2(
                out.as_mut_ptr(),
                &mut len,
                archive.as_ptr(),
                archive.len() as c_ulong,
                9,
            );
            sum += crc32(0, out.as_ptr(), len as u32) as u64;
        }
    }
    sum
}

/// Renders an invoice by running a child process and waiting for it.
#[inline(never)]
fn render_invoice() -> bool {
    let secs = format!("{:.3}", BLOCK.as_secs_f64());
    std::process::Command::new("sleep")
        .arg(secs)
        .status()
        .is_ok_and(|s| s.success())
}

/// A ledger a background thread holds for [`BLOCK`] out of every 2 x
/// [`BLOCK`].
fn contended_ledger() -> Arc<parking_lot::Mutex<u64>> {
    let ledger = Arc::new(parking_lot::Mutex::new(0u64));
    let holder = ledger.clone();
    std::thread::Builder::new()
        .name("ledger-audit".into())
        .spawn(move || loop {
            {
                let mut g = holder.lock();
                *g += 1;
                std::thread::sleep(BLOCK);
            }
            std::thread::sleep(BLOCK);
        })
        .expect("ledger holder");
    ledger
}

/// Takes the ledger's lock (often held by the audit thread).
#[inline(never)]
fn update_ledger(ledger: &parking_lot::Mutex<u64>) -> u64 {
    let mut g = ledger.lock();
    *g += 1;
    *g
}

/// 1 ms of work per poll, then `yield_now`: cooperative, never a blocker.
async fn cooperative_batch() {
    loop {
        std::hint::black_box(runq_demo::burn(Duration::from_millis(1)));
        tokio::task::yield_now().await;
    }
}
