//! PipeIo against its floor: a bare two-process pipe ping-pong and `perf
//! bench sched pipe` (when perf is installed), all pinned to CPU 0, in
//! alternating rounds with runq's PipeIo at `burst_iters=0`. Prints round
//! trips per second and CPU time per round trip of each, and the ratios
//! (above 1: runq is the faster).
//!
//! `cargo run --release -p runq-workload --example pipe_floor [SECONDS] [ROUNDS]`

mod common;

use std::os::fd::OwnedFd;
use std::process::Command;
use std::time::{Duration, Instant};

use runq_workload::primitives::{pipe, read_byte, write_byte, ReadByte};

/// Two bare processes bouncing a byte.
fn bare_round_trips(secs: f64) -> common::Trips {
    common::in_child(move || {
        let ((ab_r, ab_w), (ba_r, ba_w)) = (pipe().expect("pipe"), pipe().expect("pipe"));
        let cpu_start = common::process_cpu_ns();
        // SAFETY: the partner only echoes bytes and exits on EOF.
        let partner = unsafe { libc::fork() };
        if partner == 0 {
            drop((ab_w, ba_r));
            while got_byte(&ab_r) && write_byte(&ba_w) {}
            // SAFETY: the partner exits without running the caller's code.
            unsafe { libc::_exit(0) };
        }
        drop((ab_r, ba_w));
        let (trips, wall_s) = bounce(&ab_w, &ba_r, secs);
        drop(ab_w); // EOF ends the partner
                    // SAFETY: reaping the partner.
        unsafe { libc::waitpid(partner, std::ptr::null_mut(), 0) };
        common::bare_trips(trips, wall_s, cpu_start)
    })
}

/// True when a byte arrived (false on EOF, a signal or an error).
fn got_byte(rx: &OwnedFd) -> bool {
    matches!(read_byte(rx), Ok(ReadByte::Byte))
}

/// Writes and reads back one byte until `secs` have passed: the round
/// trips and the seconds they took.
fn bounce(tx: &OwnedFd, rx: &OwnedFd, secs: f64) -> (u64, f64) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut trips = 0u64;
    loop {
        if !write_byte(tx) || !got_byte(rx) {
            break;
        }
        trips += 1;
        if trips % 256 == 0 && Instant::now() >= deadline {
            break;
        }
    }
    (trips, start.elapsed().as_secs_f64())
}

/// `perf bench sched pipe` pinned to CPU 0, sized to run about `secs`
/// at `guess` trips/s; `None` without perf. Its CPU is that of the
/// reaped `taskset`/`perf` tree (start-up included, a few ms).
fn perf_round_trips(secs: f64, guess: f64) -> Option<common::Trips> {
    let loops = ((secs * guess) as u64).max(10_000);
    let cpu_before = common::children_cpu_ns();
    let out = Command::new("taskset")
        .args(["-c", "0", "perf", "bench", "sched", "pipe", "-l"])
        .arg(loops.to_string())
        .output()
        .ok()?;
    let cpu = common::children_cpu_ns() - cpu_before;
    let text = String::from_utf8_lossy(&out.stdout);
    let per_s = text
        .lines()
        .find(|l| l.trim_end().ends_with("ops/sec"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())?;
    Some(common::Trips {
        per_s,
        cpu_ns: cpu as f64 / loops as f64,
    })
}

fn main() {
    let (secs, rounds) = common::args();
    let (mut vs_bare, mut vs_perf) = (common::Tally::default(), common::Tally::default());
    for round in 0..rounds {
        let b = bare_round_trips(secs);
        let r = common::engine_round_trips("PipeIo", &[("burst_iters", "0")], secs);
        let p = perf_round_trips(secs, b.per_s);
        println!("round {round}: bare {}; runq PipeIo {}", b.text(), r.text());
        println!("  runq/bare: {}", vs_bare.add(r, b));
        match p {
            Some(p) => println!("  perf {}; runq/perf: {}", p.text(), vs_perf.add(r, p)),
            None => println!("  perf: not installed"),
        }
    }
    println!("runq/bare: {}", vs_bare.summary());
    println!("runq/perf: {}", vs_perf.summary());
}
