//! Test programs for `runq hud`: functions that block a thread in known
//! ways, under names a report can be checked against.
//!
//! Each blocker exists twice: `demo_*` is called from async task code on a
//! Tokio worker thread (a real blocker), `twin_*` does the same through
//! `spawn_blocking` (not a blocker: that is what the blocking pool is for).
//! Every function is `#[inline(never)]` and uses a value after its
//! blocking call, so it keeps its own frame (no tail call into std); each
//! twin differs from its `demo_*` function by a constant, so the compiler
//! cannot fold the two into one symbol.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long each blocker blocks.
pub const BLOCK: Duration = Duration::from_millis(20);

/// Burns CPU for `d` without yielding.
#[inline(never)]
pub fn burn(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

/// Reads one byte from a FIFO whose writer sends it after [`BLOCK`].
#[inline(never)]
pub fn read_fifo(path: &Path) -> std::io::Result<u8> {
    let writer_path = path.to_path_buf();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut f = OpenOptions::new().write(true).open(&writer_path)?;
        std::thread::sleep(BLOCK);
        f.write_all(b"x")
    });
    let mut f = OpenOptions::new().read(true).open(path)?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b)?;
    writer
        .join()
        .map_err(|_| std::io::Error::other("fifo writer panicked"))??;
    Ok(b[0])
}

/// A mutex that a background thread holds for [`BLOCK`] out of every
/// 2 x [`BLOCK`].
pub fn contended_mutex() -> Arc<Mutex<u64>> {
    let m = Arc::new(Mutex::new(0u64));
    let holder = m.clone();
    std::thread::Builder::new()
        .name("demo-holder".into())
        .spawn(move || loop {
            if let Ok(mut g) = holder.lock() {
                *g += 1;
                std::thread::sleep(BLOCK);
            }
            std::thread::sleep(BLOCK);
        })
        .expect("spawn the mutex holder");
    m
}

/// A FIFO that leaves nothing behind: an anonymous pipe, reachable by
/// path through `/proc/self/fd`, whose two ends this process keeps open
/// for its whole life. Opening the path opens the same pipe, with FIFO
/// semantics, and a killed demo leaves no file in the temporary directory.
/// `tag` names the pipe in error messages.
pub fn make_fifo(tag: &str) -> std::io::Result<PathBuf> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("pipe for {tag}: {e}"),
        ));
    }
    // Both ends stay open on purpose: the path is valid while they are.
    Ok(PathBuf::from(format!("/proc/self/fd/{}", fds[0])))
}

/// Blocker 1 (CPU-bound poll): spins in task code.
#[inline(never)]
pub fn demo_cpu_spin() -> u64 {
    burn(BLOCK).wrapping_add(std::hint::black_box(1))
}

/// Blocker 2 (blocking call): `std::thread::sleep` in task code.
#[inline(never)]
pub fn demo_thread_sleep() -> Duration {
    let t = Instant::now();
    std::thread::sleep(BLOCK);
    t.elapsed()
}

/// Blocker 3 (blocking call): a synchronous file read in task code.
#[inline(never)]
pub fn demo_file_read(fifo: &Path) -> u8 {
    read_fifo(fifo)
        .unwrap_or(0)
        .wrapping_add(std::hint::black_box(1))
}

/// Blocker 4 (blocking call): a contended `std::sync::Mutex` in task code.
#[inline(never)]
pub fn demo_mutex_lock(m: &Mutex<u64>) -> u64 {
    m.lock()
        .map(|g| *g)
        .unwrap_or(0)
        .wrapping_add(std::hint::black_box(1))
}

/// Twin of [`demo_cpu_spin`], run through `spawn_blocking`.
#[inline(never)]
pub fn twin_cpu_spin() -> u64 {
    burn(BLOCK).wrapping_add(std::hint::black_box(2))
}

/// Twin of [`demo_thread_sleep`].
#[inline(never)]
pub fn twin_thread_sleep() -> Duration {
    let t = Instant::now();
    std::thread::sleep(BLOCK);
    t.elapsed() + Duration::from_nanos(std::hint::black_box(2))
}

/// Twin of [`demo_file_read`].
#[inline(never)]
pub fn twin_file_read(fifo: &Path) -> u8 {
    read_fifo(fifo)
        .unwrap_or(0)
        .wrapping_add(std::hint::black_box(2))
}

/// Twin of [`demo_mutex_lock`].
#[inline(never)]
pub fn twin_mutex_lock(m: &Mutex<u64>) -> u64 {
    m.lock()
        .map(|g| *g)
        .unwrap_or(0)
        .wrapping_add(std::hint::black_box(2))
}

/// Seconds to run from the first argument (default: until killed).
pub fn duration_from_args() -> Option<Duration> {
    std::env::args()
        .nth(1)
        .and_then(|s| s.parse::<f64>().ok())
        .map(Duration::from_secs_f64)
}

/// A multi-thread Tokio runtime with `workers` workers and timers, after
/// printing this process's pid (the tests read it).
pub fn runtime(workers: usize) -> tokio::runtime::Runtime {
    named_runtime(workers, None)
}

/// The same runtime, its threads named `name` (no `-N` suffix) when given.
pub fn named_runtime(workers: usize, name: Option<&str>) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(workers).enable_time();
    if let Some(n) = name {
        builder.thread_name(n);
    }
    let rt = builder.build().expect("tokio runtime");
    println!("{}", std::process::id());
    rt
}

/// How often a service prints its running totals.
pub const TRUTH_EVERY: Duration = Duration::from_millis(250);

/// A service's life once it serves: prints its pid (a tool attached now
/// sees it at work), then `print(true)` (its running totals) every
/// [`TRUTH_EVERY`] until `lifetime` ends (never without one).
pub async fn report_while_serving(lifetime: Option<Duration>, print: impl Fn(bool)) {
    println!("{}", std::process::id());
    let started = std::time::Instant::now();
    while lifetime.is_none_or(|d| started.elapsed() < d) {
        tokio::time::sleep(TRUTH_EVERY).await;
        print(true);
    }
}

/// A service's end: `print(false)` (its final totals), stdout flushed,
/// exit 0 with its handlers still running (shutting the runtime down
/// under a `block_in_place` would fail its timers).
pub fn finish(print: impl Fn(bool)) -> ! {
    print(false);
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

/// Calls, wall time, thread CPU time and run-queue wait of one blocking
/// part of a service, as the service measured them itself (the figures
/// hud's are held against): its time off CPU, blocked, is the wall time
/// less the other two.
pub struct Truth {
    name: &'static str,
    calls: AtomicU64,
    wall_ns: AtomicU64,
    cpu_ns: AtomicU64,
    wait_ns: AtomicU64,
}

/// A thread's clocks at one moment: CPU time and run-queue wait, ns
/// (`/proc/thread-self/schedstat`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadClocks {
    /// Time on CPU.
    pub cpu_ns: u64,
    /// Time runnable, waiting for a CPU.
    pub wait_ns: u64,
}

impl ThreadClocks {
    /// This thread's clocks now (zero where the kernel does not say).
    pub fn now() -> Self {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let mut fields = text.split_whitespace().map(|f| f.parse().unwrap_or(0));
        ThreadClocks {
            cpu_ns: fields.next().unwrap_or(0),
            wait_ns: fields.next().unwrap_or(0),
        }
    }

    /// The clocks' advance since `earlier`.
    pub fn since(self, earlier: ThreadClocks) -> ThreadClocks {
        ThreadClocks {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
        }
    }
}

impl Truth {
    /// A part named `name` (the function the service calls for it).
    pub const fn new(name: &'static str) -> Self {
        Truth {
            name,
            calls: AtomicU64::new(0),
            wall_ns: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
        }
    }

    /// Runs `f` on this thread, adding its wall time and this thread's
    /// CPU time and run-queue wait over it.
    pub fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        let (t, clocks) = (Instant::now(), ThreadClocks::now());
        let r = f();
        self.add(t.elapsed(), ThreadClocks::now().since(clocks));
        r
    }

    /// Adds one call of `wall` time, with `clocks` of it on CPU and
    /// waiting for one.
    pub fn add(&self, wall: Duration, clocks: ThreadClocks) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.wall_ns
            .fetch_add(wall.as_nanos() as u64, Ordering::Relaxed);
        self.cpu_ns.fetch_add(clocks.cpu_ns, Ordering::Relaxed);
        self.wait_ns.fetch_add(clocks.wait_ns, Ordering::Relaxed);
    }

    /// The line the tests read: `truth NAME CALLS WALL_NS CPU_NS WAIT_NS`.
    pub fn line(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "truth {} {} {} {} {}",
            self.name,
            load(&self.calls),
            load(&self.wall_ns),
            load(&self.cpu_ns),
            load(&self.wait_ns)
        )
    }
}

/// This thread's CPU time, ns (`CLOCK_THREAD_CPUTIME_ID`: cheaper than
/// [`ThreadClocks::now`]).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `CLOCK_MONOTONIC` now, ns: the clock of hud's findings.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The clock `id` now, ns.
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to write.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
