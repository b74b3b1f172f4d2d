//! Framework cost of the worker engine: SpinWait work units per second
//! through the full engine (fork, telemetry, checkpoints, reservoirs)
//! against a bare loop doing the same spin bursts with no telemetry, in
//! alternating rounds on the same machine.
//!
//! `cargo run --release -p runq-workload --example framework_cost [SECONDS] [ROUNDS]`

use std::time::{Duration, Instant};

use runq_workload::primitives::spin_burst;
use runq_workload::{WorkSpec, WorkType, WorkloadHandle};

/// Units per second of one SpinWait worker run through the engine.
fn engine_rate(secs: f64) -> f64 {
    let spec = WorkSpec::new(0, WorkType::from_name("SpinWait").expect("type"), 1);
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let reports = handle.stop_and_collect(Duration::from_secs(5));
    let r = &reports[0];
    r.work_units as f64 * 1e9 / r.wall_time_ns as f64
}

/// Units per second of a bare loop of the same bursts, in a forked child so
/// both sides run as a fresh process.
fn bare_rate(secs: f64) -> f64 {
    let (rx, tx) = runq_workload::primitives::pipe().expect("pipe");
    // SAFETY: the child only spins, writes one number and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(rx);
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let start = Instant::now();
        let mut units = 0u64;
        // Check the clock as rarely as the engine checks its stop flag.
        while Instant::now() < deadline {
            for _ in 0..64 {
                units += spin_burst(1024);
            }
        }
        let rate = units as f64 / start.elapsed().as_secs_f64();
        let bytes = rate.to_le_bytes();
        // SAFETY: writing 8 bytes from a valid buffer, then exiting.
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&tx),
                bytes.as_ptr().cast(),
                8,
            );
            libc::_exit(0);
        }
    }
    drop(tx);
    let mut buf = [0u8; 8];
    let mut f = std::fs::File::from(rx);
    std::io::Read::read_exact(&mut f, &mut buf).expect("child rate");
    // SAFETY: reaping our child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    f64::from_le_bytes(buf)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let (mut engine, mut bare) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let b = bare_rate(secs);
        let e = engine_rate(secs);
        println!(
            "round {round}: bare {:.2} Munits/s, engine {:.2} Munits/s, ratio {:.3}",
            b / 1e6,
            e / 1e6,
            e / b
        );
        bare.push(b);
        engine.push(e);
    }
    let (b, e) = (median(bare), median(engine));
    println!(
        "median: bare {:.2} Munits/s, engine {:.2} Munits/s, engine/bare {:.3}",
        b / 1e6,
        e / 1e6,
        e / b
    );
}
