//! Test program for ctprof's exited-thread tally: one thread that burns
//! CPU and exits while its process lives on.
//!
//! `exiting-thread MS` prints `ready`, waits for a line on stdin, then runs
//! one thread that spins for MS milliseconds and exits, prints that
//! thread's own CPU time (`cpu_ns N`), and exits when stdin closes.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

fn main() {
    let Some(ms) = std::env::args().nth(1).and_then(|a| a.parse::<u64>().ok()) else {
        eprintln!("usage: exiting-thread MS");
        std::process::exit(2);
    };
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    stdin.read_line(&mut line).expect("stdin");
    let cpu_ns = std::thread::spawn(move || spin(Duration::from_millis(ms)))
        .join()
        .expect("the spinning thread");
    println!("cpu_ns {cpu_ns}");
    std::io::stdout().flush().expect("stdout");
    while stdin.read_line(&mut line).is_ok_and(|n| n > 0) {}
}

/// Spins for `d` of wall time; returns the calling thread's CPU time, ns.
fn spin(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    // SAFETY: ts is a valid out-pointer.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
