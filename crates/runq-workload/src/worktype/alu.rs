//! CPU-bound types that differ in instructions per cycle: AluHot (integer
//! and floating-point arithmetic kept in registers) and IpcVariance
//! (phases of that arithmetic alternating with dependent pointer chasing
//! over a buffer larger than the caches).

use std::hint::black_box;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS, MAX_MS};
use super::{independent, since, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// AluHot parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AluParams {
    /// Arithmetic rounds per iteration (one unit each).
    pub rounds: u64,
}

impl Default for AluParams {
    fn default() -> Self {
        AluParams { rounds: 1024 }
    }
}

/// AluHot description.
pub const ALU_HOT: TypeInfo = TypeInfo {
    name: "AluHot",
    summary: "integer multiply/xor/shift and floating-point multiply-add chains kept in \
              registers: high IPC, no memory traffic",
    units: "one unit per arithmetic round (16 dependent operations); checkpoint every \
            iteration at the default 1024",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[ParamRange::new("rounds", 1, MAX_ITERS)],
    needs: super::HostNeed::Nothing,
};

/// `rounds` rounds of register-only arithmetic; returns `rounds`.
#[inline(never)]
fn alu_rounds(rounds: u64) -> u64 {
    let mut a: u64 = black_box(0x2545_F491_4F6C_DD1D);
    let mut b: u64 = black_box(0x9E37_79B9);
    let mut x: f64 = black_box(1.000_001);
    let mut y: f64 = black_box(0.999_999);
    for _ in 0..rounds {
        for _ in 0..4 {
            a = a.wrapping_mul(0x5851_F42D_4C95_7F2D) ^ (b >> 7);
            b = b.wrapping_add(a).rotate_left(11);
            x = x.mul_add(y, 1e-9);
            y = y.mul_add(0.999_999_9, 1e-12);
        }
        // Keeps the chains alive without sending them to memory.
        a = black_box(a);
        x = black_box(x);
    }
    black_box((a, b, x, y));
    rounds
}

/// Rounds per progress point (16 dependent operations each: a few tens
/// of µs per thousand).
const ROUND_CHUNK: u64 = 1 << 14;

struct AluBody {
    rounds: u64,
}

impl WorkerBody for AluBody {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        tel.work_in_chunks(self.rounds, ROUND_CHUNK, alu_rounds)
    }
}

/// Builds AluHot bodies.
pub fn prepare_alu(p: &AluParams) -> Box<dyn PreparedWork> {
    let rounds = p.rounds;
    independent(move |_| Ok(Box::new(AluBody { rounds })))
}

/// IpcVariance parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IpcParams {
    /// Length of each phase (arithmetic, then pointer chasing), ms.
    pub phase_ms: u64,
    /// Size of each worker's pointer-chasing buffer, KiB (meant to exceed
    /// the last-level cache).
    pub buffer_kb: u64,
}

impl Default for IpcParams {
    fn default() -> Self {
        IpcParams {
            phase_ms: 50,
            buffer_kb: 32 * 1024,
        }
    }
}

/// IpcVariance description.
pub const IPC_VARIANCE: TypeInfo = TypeInfo {
    name: "IpcVariance",
    summary: "alternates phase_ms of register arithmetic (high IPC) with phase_ms of \
              dependent loads over a random cycle through buffer_kb (low IPC)",
    units: "1024 units per iteration: arithmetic rounds in the high phase, dependent loads \
            in the low one; checkpoint every iteration",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[
        ParamRange::new("phase_ms", 1, MAX_MS),
        ParamRange::new("buffer_kb", 1, MAX_CHASE_KB),
    ],
    needs: super::HostNeed::Nothing,
};

/// The largest chase buffer, KiB: 1 GiB, several times the largest
/// caches a worker's loads can reach, built in about a second.
const MAX_CHASE_KB: i64 = 1 << 20;

/// Units of work per IpcVariance iteration.
const CHUNK: u64 = 1024;

/// A single random cycle through the cache lines of `len` words
/// (Sattolo's algorithm): from any line's first word, following `next[i]`
/// visits every line before returning.
fn random_cycle(len: usize, mut rng: u64) -> Vec<usize> {
    // One link per cache line (the line's first word), so that every load
    // of the chase misses a line of its own and the build shuffles an
    // eighth of the words: a 1 GiB buffer is 16 M links, not 128 M.
    let lines = len.div_ceil(LINE_WORDS).max(1);
    let mut next = vec![0usize; len.max(1)];
    for l in 0..lines {
        next[l * LINE_WORDS] = l * LINE_WORDS;
    }
    // Sattolo's shuffle over the links: one cycle through every line.
    for i in (1..lines).rev() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let j = (rng % i as u64) as usize;
        next.swap(i * LINE_WORDS, j * LINE_WORDS);
    }
    next
}

/// Words per 64-byte cache line.
const LINE_WORDS: usize = 64 / std::mem::size_of::<usize>();

struct IpcBody {
    phase_ns: u64,
    phase_start: u64,
    chasing: bool,
    next: Arc<Vec<usize>>,
    at: usize,
}

impl IpcBody {
    /// `CHUNK` dependent loads along the cycle.
    fn chase(&mut self) -> u64 {
        let mut at = self.at;
        for _ in 0..CHUNK {
            at = self.next[at];
        }
        self.at = black_box(at);
        CHUNK
    }
}

impl WorkerBody for IpcBody {
    #[inline(always)]
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        if since(self.phase_start) >= self.phase_ns {
            self.chasing = !self.chasing;
            self.phase_start = now_ns();
        }
        if self.chasing {
            self.chase()
        } else {
            alu_rounds(CHUNK)
        }
    }
}

/// Builds IpcVariance bodies. The chase buffer is built once, before the
/// run, and shared read-only (fork shares its pages); each worker starts
/// at its own point of the cycle.
pub fn prepare_ipc(p: &IpcParams, workers: usize) -> std::io::Result<Box<dyn PreparedWork>> {
    let bytes = usize::try_from(p.buffer_kb * 1024).map_err(std::io::Error::other)?;
    let len = (bytes / std::mem::size_of::<usize>()).max(1);
    let seed = runq_kernel::clock::monotonic_ns() | 1;
    let next = Arc::new(random_cycle(len, seed));
    let phase_ns = p.phase_ms * 1_000_000;
    Ok(independent(move |idx| {
        Ok(Box::new(IpcBody {
            phase_ns,
            phase_start: now_ns(),
            chasing: false,
            next: Arc::clone(&next),
            at: (idx * len / workers.max(1) % len) / LINE_WORDS * LINE_WORDS,
        }))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        for len in [1, 2, 7, 8, 9, 1000] {
            let next = random_cycle(len, 0x1234_5678_9ABC_DEF1);
            let lines = len.div_ceil(LINE_WORDS);
            let (mut at, mut seen) = (0, vec![false; lines]);
            for _ in 0..lines {
                assert_eq!(at % LINE_WORDS, 0, "a link starts a line");
                assert!(
                    !seen[at / LINE_WORDS],
                    "line {at} visited twice (len {len})"
                );
                seen[at / LINE_WORDS] = true;
                at = next[at];
            }
            assert_eq!(at, 0);
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn alu_rounds_count_their_rounds() {
        assert_eq!(alu_rounds(3), 3);
    }
}
