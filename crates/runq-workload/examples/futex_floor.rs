//! FutexPingPong against its floor: a bare two-process futex ping-pong
//! (the same turn protocol, no telemetry), both pinned to CPU 0, in
//! alternating rounds with runq's FutexPingPong at `spin_iters=0`. Prints
//! round trips per second and CPU time per round trip of each, and the
//! ratios (above 1: runq is the faster).
//!
//! `cargo run --release -p runq-workload --example futex_floor [SECONDS] [ROUNDS]`

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use runq_workload::primitives::{futex_wait, futex_wake, SharedRegion};

/// The turn value that tells the partner to exit.
const DONE: u32 = 2;

/// Two bare processes taking turns on a futex.
fn bare_round_trips(secs: f64) -> common::Trips {
    let region = SharedRegion::new(64).expect("shared page");
    common::in_child(move || {
        let word = region.atomic_u32(0);
        let cpu_start = common::process_cpu_ns();
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
        let wall_s = start.elapsed().as_secs_f64();
        // SAFETY: reaping the partner.
        unsafe { libc::waitpid(partner, std::ptr::null_mut(), 0) };
        common::bare_trips(trips, wall_s, cpu_start)
    })
}

fn main() {
    let (secs, rounds) = common::args();
    let mut tally = common::Tally::default();
    for round in 0..rounds {
        let b = bare_round_trips(secs);
        let r = common::engine_round_trips("FutexPingPong", &[("spin_iters", "0")], secs);
        let ratios = tally.add(r, b);
        println!(
            "round {round}: bare {}; runq FutexPingPong {}; {ratios}",
            b.text(),
            r.text()
        );
    }
    println!("runq/bare: {}", tally.summary());
}
