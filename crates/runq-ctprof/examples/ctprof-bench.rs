//! Capture-cost benchmark: `ctprof-bench [THREADS] [ROUNDS]`.
//!
//! Spawns THREADS parked threads (default 10000) in this process, then for
//! ROUNDS rounds (default 5) times, in the same run: a capture without
//! taskstats, a capture with taskstats, and `ps -eLo pid,tid,comm,stat,...`
//! over the same host. Prints the median wall time, the per-thread cost and
//! the compressed snapshot size per thread.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runq_ctprof::{capture, format::encode, CaptureOptions};

const PS_FORMAT: &str =
    "pid,tid,comm,stat,pri,ni,psr,rtprio,policy,min_flt,maj_flt,utime,stime,start_time";

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t = Instant::now();
    let out = f();
    (t.elapsed(), out)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    for _ in 0..n {
        let spawned = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| loop {
                std::thread::park();
            });
        if let Err(e) = spawned {
            eprintln!("ctprof-bench: cannot spawn {n} threads: {e}");
            std::process::exit(1);
        }
    }
    let no_ts = CaptureOptions {
        taskstats: false,
        ..CaptureOptions::default()
    };
    let with_ts = CaptureOptions::default();
    let (mut a, mut b, mut p) = (Vec::new(), Vec::new(), Vec::new());
    let (mut threads, mut bytes, mut ps_lines) = (0usize, 0usize, 0usize);
    let mut ts_ok = 0;
    for _ in 0..rounds {
        let (d, snap) = time(|| capture(&no_ts));
        a.push(d);
        threads = snap.threads.len();
        bytes = encode(&snap).map_or(0, |v| v.len());
        let (d, snap) = time(|| capture(&with_ts));
        b.push(d);
        ts_ok = snap.taskstats_summary.map_or(0, |t| t.ok_count);
        let (d, out) = time(|| {
            Command::new("ps")
                .args(["-eLo", PS_FORMAT])
                .stderr(Stdio::null())
                .output()
        });
        p.push(d);
        ps_lines = out.map_or(0, |o| {
            o.stdout.split(|&c| c == b'\n').count().saturating_sub(2)
        });
    }
    let per = |d: Duration, n: usize| d.as_secs_f64() * 1e6 / n.max(1) as f64;
    let (a, b, p) = (median(a), median(b), median(p));
    println!(
        "threads on host: {threads} (ps saw {ps_lines}); rounds: {rounds}; load: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "capture, no taskstats : {:8.1} ms  {:6.2} us/thread",
        a.as_secs_f64() * 1e3,
        per(a, threads)
    );
    println!(
        "capture, taskstats    : {:8.1} ms  {:6.2} us/thread  (taskstats ok {ts_ok})",
        b.as_secs_f64() * 1e3,
        per(b, threads)
    );
    println!(
        "ps -eLo {PS_FORMAT}: {:8.1} ms  {:6.2} us/thread",
        p.as_secs_f64() * 1e3,
        per(p, ps_lines)
    );
    println!(
        "snapshot (no taskstats): {bytes} bytes compressed, {:.1} B/thread",
        bytes as f64 / threads.max(1) as f64
    );
}
