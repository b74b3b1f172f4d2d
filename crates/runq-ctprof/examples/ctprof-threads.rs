//! Test program for ctprof: spawns N parked threads and waits.
//!
//! `ctprof-threads N [SECONDS]` starts N threads that block (parked), prints
//! `ready <pid>` on stdout once all exist, and exits after SECONDS (default:
//! when stdin closes). Used to measure capture cost on a 10,000-thread host.

use std::io::{Read, Write};
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = match args.next().map(|a| a.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: ctprof-threads N [SECONDS]");
            std::process::exit(2);
        }
    };
    let secs: Option<u64> = args.next().and_then(|s| s.parse().ok());
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let spawned = std::thread::Builder::new()
            .name(format!("parked-{i}"))
            .stack_size(64 * 1024)
            .spawn(|| loop {
                std::thread::park();
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("ctprof-threads: spawning thread {i} failed: {e}; raise ulimit -u or kernel.threads-max");
                std::process::exit(1);
            }
        }
    }
    println!("ready {}", std::process::id());
    let _ = std::io::stdout().flush();
    match secs {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => {
            let _ = std::io::stdin().read(&mut [0u8; 1]);
        }
    }
    std::process::exit(0);
}
