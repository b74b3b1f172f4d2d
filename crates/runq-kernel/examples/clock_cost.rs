//! Cost of one reading of each clock in a hot loop: CLOCK_MONOTONIC
//! through the vDSO, the work loops' clock (`clock::fast`), and the bare
//! counter.
//!
//! `cargo run --release -p runq-kernel --example clock_cost [READS]`

use std::hint::black_box;
use std::time::Instant;

use runq_kernel::clock::{fast, monotonic_ns};

fn ns_per_read(reads: u64, read: impl Fn() -> u64) -> f64 {
    let start = Instant::now();
    let mut acc = 0u64;
    for _ in 0..reads {
        acc = acc.wrapping_add(read());
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / reads as f64
}

fn main() {
    let reads: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let source = fast::init();
    for _ in 0..3 {
        println!(
            "CLOCK_MONOTONIC {:.1} ns, fast ({}) {:.1} ns, counter {:.1} ns",
            ns_per_read(reads, monotonic_ns),
            source.name(),
            ns_per_read(reads, fast::now_ns),
            ns_per_read(reads, runq_kernel::tsc::ticks),
        );
    }
}
