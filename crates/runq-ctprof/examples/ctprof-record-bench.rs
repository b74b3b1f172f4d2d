//! Recording-cost benchmark:
//! `ctprof-record-bench COUNT THREADS RUNQ [RUNQ...]`.
//!
//! Starts THREADS parked threads plus 4 busy ones (10 ms of work every
//! 100 ms) in this process, then runs, for each RUNQ binary in turn (two
//! alternating rounds), `RUNQ ctprof record --interval 1s --count COUNT
//! --no-jemalloc` into a fresh directory. Prints each round's CPU use (the
//! recorder's user + system time from getrusage(RUSAGE_CHILDREN), as a share of one core over
//! its wall time), the bytes it left on disk and that rate per hour of
//! 1-second intervals (COUNT = 60 is one full snapshot and 59 deltas, the
//! proportion of an hour), with the load average. With `CTPROF_RECORD_BENCH_KEEP` set, the
//! recording directories are kept (and named on stderr).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn busy() {
    loop {
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(10) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        std::thread::sleep(Duration::from_millis(90));
    }
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// User + system seconds of the children waited for so far.
fn children_cpu() -> f64 {
    // SAFETY: ru is plain data filled by getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs one recording; returns (cpu seconds, wall seconds, bytes, files).
fn round(runq: &str, count: u64) -> (f64, f64, u64, usize) {
    static ROUND: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = ROUND.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("ctprof-record-bench-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let before = children_cpu();
    let t = Instant::now();
    let child = Command::new(runq)
        .args([
            "ctprof",
            "record",
            "--interval",
            "1s",
            "--no-jemalloc",
            "--count",
        ])
        .arg(count.to_string())
        .arg("--output")
        .arg(&out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{runq}: {e}"));
    let status = child.wait_with_output().map(|o| o.status);
    let wall = t.elapsed().as_secs_f64();
    let cpu = children_cpu() - before;
    if !status.as_ref().is_ok_and(|s| s.success()) {
        eprintln!("{runq}: recording failed ({status:?})");
    }
    let bytes = dir_bytes(&out);
    let files = std::fs::read_dir(&out).map_or(0, |rd| rd.count());
    if std::env::var_os("CTPROF_RECORD_BENCH_KEEP").is_some() {
        eprintln!("kept {}", out.display());
    } else {
        let _ = std::fs::remove_dir_all(&out);
    }
    (cpu, wall, bytes, files)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: ctprof-record-bench COUNT THREADS RUNQ [RUNQ...]");
        std::process::exit(2);
    }
    let count: u64 = args[0].parse().expect("COUNT");
    let n: usize = args[1].parse().expect("THREADS");
    for _ in 0..n {
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| loop {
                std::thread::park();
            })
            .expect("spawn a parked thread");
    }
    for _ in 0..4 {
        std::thread::spawn(busy);
    }
    for r in 0..2 {
        for runq in &args[2..] {
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            let (cpu, wall, bytes, files) = round(runq, count);
            println!(
                "round {r} {runq}: cpu {cpu:.2} s over {wall:.1} s = {:.1}% of a core; \
                 {files} files, {bytes} bytes = {:.1} MB/hour; load {}",
                100.0 * cpu / wall,
                bytes as f64 * 3600.0 / count as f64 / 1e6,
                load.split(' ').take(3).collect::<Vec<_>>().join(" ")
            );
        }
    }
}
