//! FutexPingPong against its floor: a bare two-process futex ping-pong
//! (the same turn protocol, no telemetry), both pinned to CPU 0, in
//! alternating rounds with runq's FutexPingPong at `spin_iters=0`. Prints
//! round trips per second and the ratio runq/bare.
//!
//! `cargo run --release -p runq-workload --example futex_floor [SECONDS] [ROUNDS]`

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use runq_workload::shared::{futex_wait, futex_wake, SharedRegion};

/// The turn value that tells the partner to exit.
const DONE: u32 = 2;

/// Round trips per second of two bare processes taking turns on a futex.
fn bare_round_trips(secs: f64) -> f64 {
    let region = SharedRegion::new(64).expect("shared page");
    common::in_child(move || {
        let word = region.atomic_u32(0);
        // SAFETY: the partner only waits on and flips the shared word.
        let partner = unsafe { libc::fork() };
        let side = u32::from(partner == 0);
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let start = Instant::now();
        let mut trips = 0u64;
        loop {
            let turn = word.load(Ordering::Acquire);
            if turn == DONE {
                break;
            }
            if turn != side {
                futex_wait(word, turn, 100_000_000);
                continue;
            }
            trips += 1;
            let done = side == 0 && trips % 256 == 0 && Instant::now() >= deadline;
            word.store(if done { DONE } else { 1 - side }, Ordering::Release);
            futex_wake(word, 1);
            if done {
                break;
            }
        }
        if partner == 0 {
            // SAFETY: the partner exits without running the caller's code.
            unsafe { libc::_exit(0) };
        }
        let rate = trips as f64 / start.elapsed().as_secs_f64();
        // SAFETY: reaping the partner.
        unsafe { libc::waitpid(partner, std::ptr::null_mut(), 0) };
        rate
    })
}

fn main() {
    let (secs, rounds) = common::args();
    let (mut bare, mut runq, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let b = bare_round_trips(secs);
        let r = common::engine_round_trips("FutexPingPong", &[("spin_iters", "0")], secs);
        println!(
            "round {round}: bare {:.1}k trips/s, runq FutexPingPong {:.1}k trips/s, ratio {:.3}",
            b / 1e3,
            r / 1e3,
            r / b
        );
        bare.push(b);
        runq.push(r);
        ratios.push(r / b);
    }
    let (b, r) = (common::median(bare), common::median(runq));
    println!(
        "median: bare {:.1}k trips/s, runq {:.1}k trips/s, runq/bare {:.3} (median of round ratios {:.3})",
        b / 1e3,
        r / 1e3,
        r / b,
        common::median(ratios)
    );
}
