//! FutexPingPong: pairs of workers take turns on a shared futex word. Each
//! worker waits for its turn, spins, stamps the time, hands the turn over
//! and wakes its partner. A wait that a wake ended is a wake sample, from
//! the partner's stamp to running again (see [`crate::wake_stamp`]); the
//! partner's turn, which the wait also held, is not in it.

use std::io;
use std::sync::atomic::Ordering;

use super::{PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::shared::{SharedRegion, SharedWord};
use crate::stop::stop_requested;
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "FutexPingPong",
    summary: "pairs of workers alternate turns on a shared futex (futex wait/wake round trips)",
    units: "spin_iters units per turn (1 when spin_iters = 0); checkpoint every iteration at the default 1024",
    wakes: Some(
        "futex wait that a wake ended: from the partner's stamp, taken just before its FUTEX_WAKE, to running again",
    ),
    workers: super::WorkerRule::PAIRS,
    wake_figure: super::WakeFigure::Latency,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// Bytes between the futex words of different pairs (one cache line):
/// the turn word at +0, the waker's stamp at +8.
const SLOT: usize = 64;

struct Pairs {
    region: SharedRegion,
    spin: u64,
}

struct Body {
    word: SharedWord,
    /// The pair's region, for the stamp next to the word.
    region: SharedRegion,
    stamp_at: usize,
    side: u32,
    spin: u64,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let word = self.word.get();
        let stamp = WakeStamp::new(self.region.atomic_u64(self.stamp_at));
        let mut woken = false;
        loop {
            let turn = word.load(Ordering::Acquire);
            if turn == self.side {
                break;
            }
            if stop_requested() {
                return 0;
            }
            woken = crate::shared::futex_wait(word, turn, 100_000_000);
        }
        if woken {
            tel.record_wake_stamped(stamp.read());
        }
        let units = tel.spin(self.spin);
        stamp.mark();
        word.store(1 - self.side, Ordering::Release);
        crate::shared::futex_wake(word, 1);
        units
    }
}

impl PreparedWork for Pairs {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        Ok(Box::new(Body {
            word: self.region.word_u32((idx / 2) * SLOT),
            region: self.region.clone(),
            stamp_at: (idx / 2) * SLOT + 8,
            side: u32::try_from(idx % 2).unwrap_or(0),
            spin: self.spin,
        }))
    }
}

/// Maps one shared futex word per pair.
pub fn prepare(p: &SpinParams, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let region = SharedRegion::new((workers / 2).max(1) * SLOT)?;
    Ok(Box::new(Pairs {
        region,
        spin: p.spin_iters,
    }))
}
