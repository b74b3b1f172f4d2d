//! Schbench: a port of schbench's model (masoncl/schbench, Chris Mason;
//! written from its description, none of its code). Worker 0 is the
//! message thread; every other worker is a worker thread. A worker posts
//! a message (marks itself waiting and wakes the message thread), sleeps
//! until the message thread answers, then serves one request: it sleeps
//! `sleep_us` (schbench's simulated networking) and does `operations`
//! multiplies of matrices sized to `cache_footprint_kb` under a per-CPU
//! lock (schbench's `do_work`). The message thread sweeps the waiting
//! workers, stamps the time and posts each one, then sleeps until the
//! next message.
//!
//! The wake sample is schbench's wakeup latency: from the message thread's
//! stamp, taken just before it posts the worker, to the worker running
//! again (see [`crate::wake_stamp`]), for every answer as schbench counts
//! it, also one that came before the worker went to sleep (the other wake
//! types count only waits a wake ended). A request is one work unit, so
//! work/s is schbench's RPS; its request latency, from the wake to the
//! end of the work (think time included, as schbench's), is the report's
//! `request_latencies_ns` and the group's `request_p50_ns`/`request_p99_ns`.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fan_out::Matrices;
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::stop::stop_requested;
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;
use runq_kernel::clock::fast::now_ns;

/// Schbench parameters, named after schbench's options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Think time before each request's work, µs (schbench `-s`).
    pub sleep_us: u64,
    /// Matrix multiplies per request (schbench `-n`).
    pub operations: u64,
    /// Each worker's matrices, KiB (schbench `-f`): three square matrices
    /// of 8-byte elements.
    pub cache_footprint_kb: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            sleep_us: 100,
            operations: 5,
            cache_footprint_kb: 256,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "Schbench",
    summary: "schbench's model: a message thread wakes worker threads, each of which sleeps \
              sleep_us, then does operations matrix multiplies of cache_footprint_kb under a \
              per-CPU lock, and messages again",
    units: "workers: one unit per request (work/s is schbench's RPS); message thread: one unit \
            per sweep; checkpoint every 1024 iterations",
    wakes: Some(
        "workers only, every answer as schbench counts it: from the message thread's stamp, \
         taken just before it posts them, to running again (schbench's wakeup latency)",
    ),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "worker 0 is the message thread",
    },
    wake_figure: super::WakeFigure::Latency,
    params: &[
        super::ranges::ParamRange::new("sleep_us", 0, super::ranges::MAX_US),
        super::ranges::ParamRange::new("operations", 0, 1_000_000),
        super::ranges::ParamRange::new("cache_footprint_kb", 1, 24_576),
    ],
    needs: super::HostNeed::Nothing,
};

/// One cache line per futex slot: the message thread's at 0, worker i's
/// at `i * SLOT` (its futex at +0, its "posted" flag at +4, the message
/// thread's stamp for it at +8); the per-CPU locks follow.
const SLOT: usize = 64;
/// The futex states schbench uses.
pub(super) const BLOCKED: u32 = 0;
const RUNNING: u32 = 1;
/// Longest single futex wait, so a stop is seen.
const WAIT_SLICE_NS: u64 = 10_000_000;

/// Posts `word`: wakes its owner if it was blocked (Schbench's and
/// Taobench's hand-over).
pub(super) fn post(word: &AtomicU32) {
    if word
        .compare_exchange(BLOCKED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        futex_wake(word, 1);
    }
}

/// Waits until `word` is posted and takes the post: `Some(woken)` (a wake
/// ended the wait), `None` on STOP.
pub(super) fn wait_posted(word: &AtomicU32) -> Option<bool> {
    let mut woken = false;
    loop {
        if word
            .compare_exchange(RUNNING, BLOCKED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Some(woken);
        }
        if stop_requested() {
            return None;
        }
        woken = futex_wait(word, BLOCKED, WAIT_SLICE_NS);
    }
}

struct Group {
    region: SharedRegion,
    workers: usize,
    cpus: usize,
    params: Params,
}

impl PreparedWork for Group {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        if idx == 0 {
            return Ok(Box::new(MessageThread {
                region: self.region.clone(),
                workers: self.workers,
            }));
        }
        let kib = self.params.cache_footprint_kb as f64;
        let size = (kib * 1024.0 / 3.0 / 8.0).sqrt() as usize;
        Ok(Box::new(Worker {
            region: self.region.clone(),
            me: idx * SLOT,
            locks_at: (self.workers + 1) * SLOT,
            cpus: self.cpus,
            sleep: Duration::from_micros(self.params.sleep_us),
            operations: self.params.operations,
            matrices: Matrices::new(size.max(1)),
        }))
    }
}

/// Maps the futex slots and one lock per CPU.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    // SAFETY: sysconf has no preconditions.
    let cpus = usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) })
        .unwrap_or(1)
        .max(1);
    let region = SharedRegion::new((workers + 1 + cpus) * SLOT)?;
    Ok(Box::new(Group {
        region,
        workers,
        cpus,
        params: p.clone(),
    }))
}

struct MessageThread {
    region: SharedRegion,
    workers: usize,
}

impl WorkerBody for MessageThread {
    #[inline(always)]
    fn iterate(&mut self, _tel: &mut Telemetry) -> u64 {
        let own = self.region.atomic_u32(0);
        own.store(BLOCKED, Ordering::Release);
        for i in 1..self.workers {
            if self
                .region
                .atomic_u32(i * SLOT + 4)
                .swap(0, Ordering::AcqRel)
                == 1
            {
                WakeStamp::new(self.region.atomic_u64(i * SLOT + 8)).mark();
                post(self.region.atomic_u32(i * SLOT));
            }
        }
        let _ = wait_posted(own);
        1
    }

    fn is_messenger(&self) -> bool {
        true
    }
}

struct Worker {
    region: SharedRegion,
    me: usize,
    locks_at: usize,
    cpus: usize,
    sleep: Duration,
    operations: u64,
    matrices: Matrices,
}

impl Worker {
    /// Takes the lock of the CPU it runs on (schbench's `lock_this_cpu`:
    /// spin on it, and retry if the worker moved meanwhile): the lock's
    /// offset, `None` on STOP.
    fn lock_this_cpu(&self) -> Option<usize> {
        loop {
            let cpu = runq_kernel::clock::current_cpu() % self.cpus;
            let at = self.locks_at + cpu * SLOT;
            let lock = self.region.atomic_u32(at);
            while lock
                .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                if stop_requested() {
                    return None;
                }
                std::hint::spin_loop();
            }
            if runq_kernel::clock::current_cpu() % self.cpus == cpu {
                return Some(at);
            }
            lock.store(0, Ordering::Release);
        }
    }
}

impl WorkerBody for Worker {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let own = self.region.atomic_u32(self.me);
        own.store(BLOCKED, Ordering::Release);
        self.region
            .atomic_u32(self.me + 4)
            .store(1, Ordering::Release);
        post(self.region.atomic_u32(0));
        if wait_posted(own).is_none() {
            return 0;
        }
        // As schbench does: every answer is a sample, whether the wait
        // slept or the answer came first.
        tel.record_wake_stamped(WakeStamp::new(self.region.atomic_u64(self.me + 8)).read());
        let request_start = now_ns();
        if !self.sleep.is_zero() {
            tel.plan(u64::try_from(self.sleep.as_nanos()).unwrap_or(u64::MAX));
            crate::stop::sleep_unless_stopped(self.sleep);
        }
        let Some(lock) = self.lock_this_cpu() else {
            return 0;
        };
        self.matrices.multiply_ops(self.operations, tel);
        self.region.atomic_u32(lock).store(0, Ordering::Release);
        tel.record_request(now_ns().saturating_sub(request_start));
        1
    }
}
