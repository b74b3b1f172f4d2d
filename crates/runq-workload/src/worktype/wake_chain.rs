//! WakeChain: the workers form a ring and pass one token around it. Each
//! worker sleeps on its own futex word until its predecessor stamps the
//! time and wakes it, spins, then does the same for its successor, so a
//! lap is N serialized wakeups (schbench-style wake chains).

use std::io;
use std::sync::atomic::Ordering;

use super::{PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::stop::stop_requested;
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;

/// Bytes per link: the token word at +0, the waker's stamp at +8.
const SLOT: usize = 64;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "WakeChain",
    summary:
        "a ring of workers passes one token; each wakes the next after a spin (serial wake chain)",
    units: "spin_iters units per hop (at least 1); checkpoint every iteration at the default 1024",
    wakes: Some(
        "per hop whose wait a wake ended: from the predecessor's stamp, taken just before its FUTEX_WAKE, to running again",
    ),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "the ring",
    },
    wake_figure: super::WakeFigure::Latency,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

struct Chain {
    region: SharedRegion,
    workers: usize,
    spin: u64,
}

impl PreparedWork for Chain {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        Ok(Box::new(Link {
            region: self.region.clone(),
            me: idx * SLOT,
            next: ((idx + 1) % self.workers) * SLOT,
            spin: self.spin,
        }))
    }
}

/// Maps the ring and hands the token to worker 0.
pub fn prepare(p: &SpinParams, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let region = SharedRegion::new(workers.max(1) * SLOT)?;
    region.atomic_u32(0).store(1, Ordering::Release);
    Ok(Box::new(Chain {
        region,
        workers: workers.max(1),
        spin: p.spin_iters,
    }))
}

struct Link {
    region: SharedRegion,
    me: usize,
    next: usize,
    spin: u64,
}

impl Link {
    /// Waits for the token: `Some(woken)` once it came (`woken`: a wake
    /// ended the wait), `None` on STOP.
    fn wait_token(&self) -> Option<bool> {
        let word = self.region.atomic_u32(self.me);
        let mut woken = false;
        while word.load(Ordering::Acquire) == 0 {
            if stop_requested() {
                return None;
            }
            woken = futex_wait(word, 0, 10_000_000);
        }
        word.store(0, Ordering::Release);
        Some(woken)
    }
}

impl WorkerBody for Link {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let Some(woken) = self.wait_token() else {
            return 0;
        };
        if woken {
            tel.record_wake_stamped(WakeStamp::new(self.region.atomic_u64(self.me + 8)).read());
        }
        let units = tel.spin(self.spin);
        WakeStamp::new(self.region.atomic_u64(self.next + 8)).mark();
        let word = self.region.atomic_u32(self.next);
        word.store(1, Ordering::Release);
        futex_wake(word, 1);
        units
    }
}
