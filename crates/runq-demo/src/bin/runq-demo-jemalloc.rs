//! jemalloc-linked test program for ctprof's allocator counters (built
//! only with the `jemalloc` feature).
//!
//! `runq-demo-jemalloc N BYTES` starts N threads; each allocates and keeps
//! BYTES in 4 KiB blocks (and frees half of them), prints `ready <pid>
//! <tid,tid,...>` once all are done, then waits for stdin to close.

use std::io::{Read, Write};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let bytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..n {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut keep: Vec<Vec<u8>> = (0..bytes / 4096).map(|i| vec![i as u8; 4096]).collect();
            let half = keep.len() / 2;
            keep.truncate(half);
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::gettid() }).unwrap();
            std::thread::park();
            drop(keep);
        });
    }
    let tids: Vec<i32> = (0..n).map(|_| rx.recv().unwrap()).collect();
    println!(
        "ready {} {}",
        std::process::id(),
        tids.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}
