//! PipeIo against its floor: a bare two-process pipe ping-pong and `perf
//! bench sched pipe` (when perf is installed), all pinned to CPU 0, in
//! alternating rounds with runq's PipeIo at `burst_iters=0`. Prints round
//! trips per second and the ratios.
//!
//! `cargo run --release -p runq-workload --example pipe_floor [SECONDS] [ROUNDS]`

mod common;

use std::os::fd::OwnedFd;
use std::process::Command;
use std::time::{Duration, Instant};

use runq_workload::fd::{pipe, read_byte, write_byte, ReadByte};

/// Round trips per second of two bare processes bouncing a byte.
fn bare_round_trips(secs: f64) -> f64 {
    common::in_child(move || {
        let ((ab_r, ab_w), (ba_r, ba_w)) = (pipe().expect("pipe"), pipe().expect("pipe"));
        // SAFETY: the partner only echoes bytes and exits on EOF.
        let partner = unsafe { libc::fork() };
        if partner == 0 {
            drop((ab_w, ba_r));
            while got_byte(&ab_r) && write_byte(&ba_w) {}
            // SAFETY: the partner exits without running the caller's code.
            unsafe { libc::_exit(0) };
        }
        drop((ab_r, ba_w));
        let rate = bounce(&ab_w, &ba_r, secs);
        drop(ab_w); // EOF ends the partner
                    // SAFETY: reaping the partner.
        unsafe { libc::waitpid(partner, std::ptr::null_mut(), 0) };
        rate
    })
}

/// True when a byte arrived (false on EOF, a signal or an error).
fn got_byte(rx: &OwnedFd) -> bool {
    matches!(read_byte(rx), Ok(ReadByte::Byte))
}

/// Writes and reads back one byte until `secs` have passed.
fn bounce(tx: &OwnedFd, rx: &OwnedFd, secs: f64) -> f64 {
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
    trips as f64 / start.elapsed().as_secs_f64()
}

/// `perf bench sched pipe` pinned to CPU 0, sized to run about `secs`
/// at `guess` trips/s; `None` without perf.
fn perf_round_trips(secs: f64, guess: f64) -> Option<f64> {
    let loops = ((secs * guess) as u64).max(10_000).to_string();
    let out = Command::new("taskset")
        .args(["-c", "0", "perf", "bench", "sched", "pipe", "-l", &loops])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.trim_end().ends_with("ops/sec"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
}

fn main() {
    let (secs, rounds) = common::args();
    let (mut bare, mut perf, mut runq) = (Vec::new(), Vec::new(), Vec::new());
    let (mut vs_bare, mut vs_perf) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let b = bare_round_trips(secs);
        let r = common::engine_round_trips("PipeIo", &[("burst_iters", "0")], secs);
        let p = perf_round_trips(secs, b);
        let perf_text = p.map_or("perf: not installed".into(), |p| {
            format!("perf {:.1}k trips/s, runq/perf {:.3}", p / 1e3, r / p)
        });
        println!(
            "round {round}: bare {:.1}k trips/s, runq PipeIo {:.1}k trips/s, runq/bare {:.3}; {perf_text}",
            b / 1e3,
            r / 1e3,
            r / b
        );
        bare.push(b);
        runq.push(r);
        vs_bare.push(r / b);
        perf.extend(p);
        vs_perf.extend(p.map(|p| r / p));
    }
    let (b, r) = (common::median(bare), common::median(runq));
    print!(
        "median: bare {:.1}k trips/s, runq {:.1}k trips/s, runq/bare {:.3} (of round ratios {:.3})",
        b / 1e3,
        r / 1e3,
        r / b,
        common::median(vs_bare)
    );
    if perf.is_empty() {
        println!();
    } else {
        let p = common::median(perf);
        println!(
            "; perf {:.1}k trips/s, runq/perf {:.3} (of round ratios {:.3})",
            p / 1e3,
            r / p,
            common::median(vs_perf)
        );
    }
}
