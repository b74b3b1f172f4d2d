//! Shared by the floor benchmarks: the runq side of a pinned pair, forked
//! bare references that report their figures through a pipe, CPU clocks,
//! and medians.
//!
//! Each side is measured twice: round trips per second of wall time (the
//! issue's figure, which other load on CPU 0 disturbs), and CPU time of
//! both processes per round trip (which such load barely moves, so it
//! shows runq's own cost even on a busy machine).

use std::collections::BTreeSet;
use std::time::Duration;

use runq_workload::{Affinity, WorkSpec, WorkType, WorkloadHandle};

/// One side's figures.
#[derive(Debug, Clone, Copy)]
pub struct Trips {
    /// Round trips per second of wall time.
    pub per_s: f64,
    /// CPU time of both processes per round trip, ns.
    pub cpu_ns: f64,
}

impl Trips {
    /// "123.4k trips/s, 7.90 µs CPU/trip".
    pub fn text(self) -> String {
        format!(
            "{:.1}k trips/s, {:.2} µs CPU/trip",
            self.per_s / 1e3,
            self.cpu_ns / 1e3
        )
    }

    /// runq's figures against a floor's: (rate ratio, CPU ratio), both
    /// above 1 when runq is the faster.
    pub fn against(self, floor: Trips) -> (f64, f64) {
        (self.per_s / floor.per_s, floor.cpu_ns / self.cpu_ns)
    }
}

/// A runq pair of `work` (with `params`), both workers pinned to CPU 0:
/// the first worker's iterations (one per round trip) over its wall time,
/// and both workers' CPU time per iteration.
pub fn engine_round_trips(work: &str, params: &[(&str, &str)], secs: f64) -> Trips {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let work = WorkType::from_name(work)
        .expect("type")
        .with_params(&params)
        .expect("params");
    let mut spec = WorkSpec::new(0, work, 2);
    spec.setup.affinity = Affinity::Cpus(BTreeSet::from([0]));
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let reports = handle.stop_and_collect(Duration::from_secs(5));
    let r = &reports[0];
    assert!(r.exit_info.is_none(), "worker died: {r:?}");
    let cpu: u64 = reports.iter().map(|w| w.cpu_time_ns).sum();
    Trips {
        per_s: r.iterations as f64 * 1e9 / r.wall_time_ns as f64,
        cpu_ns: cpu as f64 / r.iterations as f64,
    }
}

/// CPU time of the calling process so far, ns.
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the caller's reaped children so far, ns.
pub fn children_cpu_ns() -> u64 {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs `body` in a forked child pinned to CPU 0 and returns the figures
/// it produced (sent back through a pipe).
pub fn in_child(body: impl FnOnce() -> Trips) -> Trips {
    let (rx, tx) = runq_workload::primitives::pipe().expect("pipe");
    // SAFETY: the child runs `body`, writes 16 bytes and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(rx);
        runq_workload::primitives::set_affinity(&BTreeSet::from([0])).expect("pin to CPU 0");
        let t = body();
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&t.per_s.to_le_bytes());
        bytes[8..].copy_from_slice(&t.cpu_ns.to_le_bytes());
        // SAFETY: writing 16 bytes from a valid buffer, then exiting.
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&tx),
                bytes.as_ptr().cast(),
                16,
            );
            libc::_exit(0);
        }
    }
    drop(tx);
    let mut buf = [0u8; 16];
    let mut f = std::fs::File::from(rx);
    std::io::Read::read_exact(&mut f, &mut buf).expect("child result");
    // SAFETY: reaping our child.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    let half = |r: std::ops::Range<usize>| f64::from_le_bytes(buf[r].try_into().expect("8 bytes"));
    Trips {
        per_s: half(0..8),
        cpu_ns: half(8..16),
    }
}

/// Figures of a bare pair measured inside [`in_child`]: `trips` round
/// trips in `wall_s` seconds, CPU from `cpu_start` (this process) plus
/// the reaped partner's.
pub fn bare_trips(trips: u64, wall_s: f64, cpu_start: u64) -> Trips {
    let cpu = process_cpu_ns() - cpu_start + children_cpu_ns();
    Trips {
        per_s: trips as f64 / wall_s,
        cpu_ns: cpu as f64 / trips as f64,
    }
}

/// Rounds of figures and prints the medians of a floor and runq.
#[derive(Default)]
pub struct Tally {
    rate: Vec<f64>,
    cpu: Vec<f64>,
}

impl Tally {
    /// Adds one round's (rate, CPU) ratios and returns them as text.
    pub fn add(&mut self, runq: Trips, floor: Trips) -> String {
        let (rate, cpu) = runq.against(floor);
        self.rate.push(rate);
        self.cpu.push(cpu);
        format!("rate ratio {rate:.3}, CPU ratio {cpu:.3}")
    }

    /// "median rate ratio R, median CPU ratio C (N rounds)", or "no
    /// rounds".
    pub fn summary(&self) -> String {
        if self.rate.is_empty() {
            return "no rounds".into();
        }
        format!(
            "median rate ratio {:.3}, median CPU ratio {:.3} ({} rounds)",
            median(self.rate.clone()),
            median(self.cpu.clone()),
            self.rate.len()
        )
    }
}

/// The median of `v` (the upper one for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `[SECONDS] [ROUNDS]` from the command line (defaults 2 s, 5 rounds).
pub fn args() -> (f64, usize) {
    let mut args = std::env::args().skip(1);
    let secs = args.next().and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    (secs, rounds)
}
