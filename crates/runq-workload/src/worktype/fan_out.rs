//! One-to-many wakeups on a shared generation word: FutexFanOut,
//! FanOutCompute, ThunderingHerd and AsymmetricWaker.
//!
//! Worker 0 is the messenger. Each cycle it does its own step (a spin
//! burst, or a sleep for the herd), writes a CLOCK_MONOTONIC timestamp,
//! bumps the generation and wakes every receiver with one `FUTEX_WAKE`,
//! then waits until all receivers have acknowledged the cycle. Receivers
//! wait for the generation to move, record their wake latency (from the
//! messenger's timestamp to running again, when a wake ended their wait:
//! see [`crate::wake_stamp`]) and do their share of work (a spin burst or
//! matrix multiplies).

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{PreparedWork, WorkerBody};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::stop::stop_requested;
use crate::telemetry::{Telemetry, CHUNK_UNITS};
use crate::wake_stamp::WakeStamp;

const GEN: usize = 0;
const ACKS: usize = 4;
const STAMP: usize = 8;
/// Longest single futex wait, so a stop is noticed promptly.
const WAIT_SLICE_NS: u64 = 10_000_000;

/// What the messenger does before each fan-out.
#[derive(Debug, Clone, Copy)]
pub(super) enum MessengerStep {
    /// `tel.spin(n)`; reports `n` units.
    Spin(u64),
    /// Sleep this long; reports one unit per herd released.
    Sleep(Duration),
}

/// What a receiver does after each wake.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReceiverStep {
    /// `tel.spin(n)` before waiting (FutexFanOut's shared first step).
    SpinFirst(u64),
    /// `ops` multiplies of `size` x `size` matrices after waking.
    Matmul {
        /// Multiplies per wake (one unit each).
        ops: u64,
        /// Matrix dimension.
        size: usize,
    },
    /// `tel.spin(n)` after waking.
    SpinAfter(u64),
    /// `i * n` spin units after waking, for receiver `i` (AsymmetricWaker:
    /// unequal work per receiver, each its own role).
    SpinScaled(u64),
}

/// The shape of one fan-out group.
#[derive(Debug, Clone, Copy)]
pub(super) struct FanOutSpec {
    pub messenger: MessengerStep,
    pub receiver: ReceiverStep,
}

struct Group {
    region: SharedRegion,
    receivers: u32,
    spec: FanOutSpec,
}

impl PreparedWork for Group {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let shared = Shared(self.region.clone());
        if idx == 0 {
            return Ok(Box::new(Messenger {
                shared,
                receivers: self.receivers,
                step: self.spec.messenger,
            }));
        }
        let matrices = match self.spec.receiver {
            ReceiverStep::Matmul { size, .. } => Some(Matrices::new(size)),
            _ => None,
        };
        // Generation 0 is the one before the first fan-out; a receiver
        // built late must still answer the messenger's first cycle.
        Ok(Box::new(Receiver {
            idx: idx as u64,
            seen: 0,
            shared,
            spec: self.spec,
            matrices,
        }))
    }
}

/// Maps the generation/ack/timestamp words for a group of `workers`
/// (one messenger, the rest receivers).
pub(super) fn prepare(spec: FanOutSpec, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(Group {
        region: SharedRegion::new(64)?,
        receivers: u32::try_from(workers.saturating_sub(1)).unwrap_or(u32::MAX),
        spec,
    }))
}

struct Shared(SharedRegion);

impl Shared {
    fn generation(&self) -> &AtomicU32 {
        self.0.atomic_u32(GEN)
    }
    fn acks(&self) -> &AtomicU32 {
        self.0.atomic_u32(ACKS)
    }
    fn stamp(&self) -> WakeStamp<'_> {
        WakeStamp::new(self.0.atomic_u64(STAMP))
    }
}

struct Messenger {
    shared: Shared,
    receivers: u32,
    step: MessengerStep,
}

impl Messenger {
    /// Waits until every receiver acknowledged, or STOP.
    fn wait_for_acks(&self) {
        let acks = self.shared.acks();
        loop {
            let seen = acks.load(Ordering::Acquire);
            if seen >= self.receivers || stop_requested() {
                return;
            }
            futex_wait(acks, seen, WAIT_SLICE_NS);
        }
    }
}

impl WorkerBody for Messenger {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = match self.step {
            MessengerStep::Spin(n) => tel.spin(n),
            MessengerStep::Sleep(d) => {
                tel.plan(d.as_nanos().try_into().unwrap_or(u64::MAX));
                crate::stop::sleep_unless_stopped(d);
                1
            }
        };
        self.shared.acks().store(0, Ordering::Release);
        self.shared.stamp().mark();
        let generation = self.shared.generation();
        generation.fetch_add(1, Ordering::AcqRel);
        futex_wake(generation, i32::MAX);
        self.wait_for_acks();
        units
    }

    fn is_messenger(&self) -> bool {
        true
    }
}

struct Receiver {
    /// The worker's index in its group (1 for the first receiver).
    idx: u64,
    shared: Shared,
    seen: u32,
    spec: FanOutSpec,
    matrices: Option<Matrices>,
}

impl Receiver {
    /// Waits for a new generation; `Some(woken)` once it came (`woken`: a
    /// wake ended the wait), `None` on STOP.
    fn wait_generation(&mut self) -> Option<bool> {
        let generation = self.shared.generation();
        let mut woken = false;
        loop {
            let now = generation.load(Ordering::Acquire);
            if now != self.seen {
                self.seen = now;
                return Some(woken);
            }
            if stop_requested() {
                return None;
            }
            woken = futex_wait(generation, now, WAIT_SLICE_NS);
        }
    }

    fn acknowledge(&self) {
        let acks = self.shared.acks();
        acks.fetch_add(1, Ordering::AcqRel);
        futex_wake(acks, 1);
    }
}

impl WorkerBody for Receiver {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let mut units = match self.spec.receiver {
            ReceiverStep::SpinFirst(n) => tel.spin(n),
            _ => 0,
        };
        if let MessengerStep::Sleep(d) = self.spec.messenger {
            // The messenger's planned sleep is this receiver's planned wait.
            tel.plan(d.as_nanos().try_into().unwrap_or(u64::MAX));
        }
        let Some(woken) = self.wait_generation() else {
            return units;
        };
        if woken {
            tel.record_wake_stamped(self.shared.stamp().read());
        }
        units += match (self.spec.receiver, self.matrices.as_mut()) {
            (ReceiverStep::Matmul { ops, .. }, Some(m)) => m.multiply_ops(ops, tel),
            (ReceiverStep::SpinAfter(n), _) => tel.spin(n),
            (ReceiverStep::SpinScaled(n), _) => tel.spin(n.saturating_mul(self.idx)),
            _ => 0,
        };
        self.acknowledge();
        units
    }

    fn role(&self) -> u8 {
        match self.spec.receiver {
            // Unequal duties: each receiver is judged on its own.
            ReceiverStep::SpinScaled(_) => u8::try_from(self.idx + 1).unwrap_or(u8::MAX),
            _ => 0,
        }
    }
}

/// Two input matrices and an output, multiplied naively (FanOutCompute's
/// receivers, Schbench's workers).
pub(super) struct Matrices {
    size: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Matrices {
    /// `size` x `size` matrices (at least 1 x 1).
    pub(super) fn new(size: usize) -> Self {
        let n = size.max(1);
        let fill = |k: usize| (0..n * n).map(|i| ((i * k) % 17) as f64 * 0.25).collect();
        Matrices {
            size: n,
            a: fill(3),
            b: fill(5),
            c: vec![0.0; n * n],
        }
    }

    /// `ops` products `c = a * b`, one work unit each, done row by row
    /// in chunks of about [`CHUNK_UNITS`] multiply-adds, so a stop is seen
    /// within ms even for 1024 x 1024 matrices; a product cut short by the
    /// stop is not counted.
    pub(super) fn multiply_ops(&mut self, ops: u64, tel: &mut Telemetry) -> u64 {
        let n = self.size as u64;
        let rows_per_chunk = (CHUNK_UNITS / (n * n)).max(1);
        let mut row = 0u64;
        let rows = tel.work_in_chunks(ops.saturating_mul(n), rows_per_chunk, |count| {
            for _ in 0..count {
                self.multiply_row((row % n) as usize);
                row += 1;
            }
            count
        });
        std::hint::black_box(&self.c);
        rows / n
    }

    /// Row `i` of `c = a * b`.
    fn multiply_row(&mut self, i: usize) {
        let n = self.size;
        for j in 0..n {
            let mut sum = 0.0;
            for k in 0..n {
                sum += self.a[i * n + k] * self.b[k * n + j];
            }
            self.c[i * n + j] = sum;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_matches_a_hand_computed_product() {
        let mut m = Matrices::new(2);
        m.a = vec![1.0, 2.0, 3.0, 4.0];
        m.b = vec![5.0, 6.0, 7.0, 8.0];
        let mut tel = Telemetry::start();
        assert_eq!(m.multiply_ops(1, &mut tel), 1);
        assert_eq!(m.c, vec![19.0, 22.0, 43.0, 50.0]);
    }
}
