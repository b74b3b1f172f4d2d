//! WakeChain: the workers form a ring and pass one token around it, so a
//! lap is N serialized wakeups (schbench-style wake chains). How a worker
//! wakes its successor is the `wake` parameter:
//!
//! - `futex` (the default): each worker sleeps on its own futex word until
//!   its predecessor stamps the time, sets the word and calls
//!   `FUTEX_WAKE`.
//! - `pipe`: each link is a pipe; the predecessor writes an 8-byte message
//!   holding its stamp, and the successor blocks in `read`. A pipe write
//!   wakes its reader with a synchronous wakeup (`WF_SYNC`: the waker says
//!   it is about to sleep), a hint the scheduler may use to run the wakee
//!   on the waker's CPU; the futex path gives no such hint.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::fd::{pipe, read_stamp, write_stamp, ReadStamp};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::stop::{request_stop, stop_requested};
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;
use runq_kernel::clock::fast::now_ns;

/// Bytes per link: the token word at +0, the waker's stamp at +8.
const SLOT: usize = 64;

/// How a worker wakes the next one in the ring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WakeMode {
    /// A futex word per worker and `FUTEX_WAKE`.
    #[default]
    Futex,
    /// A pipe per link: the write's synchronous (`WF_SYNC`) wakeup.
    Pipe,
}

/// WakeChain parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Spin units per hop.
    pub spin_iters: u64,
    /// How the token wakes the next worker.
    pub wake: WakeMode,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            spin_iters: 1024,
            wake: WakeMode::Futex,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "WakeChain",
    summary: "a ring of workers passes one token; each wakes the next after a spin (serial wake \
              chain); wake = futex (FUTEX_WAKE) or pipe (a pipe write's WF_SYNC wakeup)",
    units: "spin_iters units per hop (at least 1); checkpoint every iteration at the default 1024",
    wakes: Some(
        "per hop whose wait a wake ended: from the predecessor's stamp, taken just before its \
         FUTEX_WAKE (futex) or its pipe write (pipe), to running again",
    ),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "the ring",
    },
    wake_figure: super::WakeFigure::Latency,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// Builds the ring for `workers` workers, its token at worker 0.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let workers = workers.max(1);
    match p.wake {
        WakeMode::Futex => {
            let region = SharedRegion::new(workers * SLOT)?;
            region.atomic_u32(0).store(1, Ordering::Release);
            Ok(Box::new(FutexChain {
                region,
                workers,
                spin: p.spin_iters,
            }))
        }
        WakeMode::Pipe => prepare_pipes(p.spin_iters, workers),
    }
}

struct FutexChain {
    region: SharedRegion,
    workers: usize,
    spin: u64,
}

impl PreparedWork for FutexChain {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        Ok(Box::new(FutexLink {
            region: self.region.clone(),
            me: idx * SLOT,
            next: ((idx + 1) % self.workers) * SLOT,
            spin: self.spin,
        }))
    }
}

struct FutexLink {
    region: SharedRegion,
    me: usize,
    next: usize,
    spin: u64,
}

impl FutexLink {
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

impl WorkerBody for FutexLink {
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

/// Link `i` is the pipe into worker `i`: worker `i` holds its read end
/// and worker `i - 1` its write end.
struct PipeChain {
    reads: Vec<Option<OwnedFd>>,
    writes: Vec<Option<OwnedFd>>,
    spin: u64,
}

/// One pipe per link, the token (an unstamped message) already in link 0.
fn prepare_pipes(spin: u64, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let mut chain = PipeChain {
        reads: Vec::with_capacity(workers),
        writes: Vec::with_capacity(workers),
        spin,
    };
    for _ in 0..workers {
        let (r, w) = pipe()?;
        chain.reads.push(Some(r));
        chain.writes.push(Some(w));
    }
    if let Some(Some(first)) = chain.writes.first() {
        if !write_stamp(first, 0) {
            return Err(io::Error::other(
                "could not put the token in the first pipe",
            ));
        }
    }
    Ok(Box::new(chain))
}

impl PreparedWork for PipeChain {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let n = self.reads.len();
        let missing = || io::Error::other("pipe end already taken");
        let rx = self.reads.get_mut(idx).and_then(Option::take);
        let tx = self.writes.get_mut((idx + 1) % n).and_then(Option::take);
        Ok(Box::new(PipeLink {
            rx: rx.ok_or_else(missing)?,
            tx: tx.ok_or_else(missing)?,
            spin: self.spin,
            predecessor: (idx + n - 1) % n,
            partner_lost: false,
        }))
    }

    fn release_parent_copies(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }
}

struct PipeLink {
    rx: OwnedFd,
    tx: OwnedFd,
    spin: u64,
    /// The worker that writes into this one's pipe.
    predecessor: usize,
    /// Set once the ring broke: the predecessor's write end closed, or
    /// the successor's read end did.
    partner_lost: bool,
}

impl WorkerBody for PipeLink {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let read_start = now_ns();
        match read_stamp(&self.rx) {
            Ok(ReadStamp::Stamp(stamp)) => tel.record_wake_if_waited(read_start, stamp),
            Ok(ReadStamp::Eof) => {
                self.partner_lost = true;
                return 0;
            }
            Ok(ReadStamp::Interrupted) => return 0,
            Err(_) => {
                request_stop();
                return 0;
            }
        }
        let units = tel.spin(self.spin);
        if !write_stamp(&self.tx, now_ns()) && !stop_requested() {
            self.partner_lost = true;
        }
        units
    }

    fn partner_lost(&self) -> Option<usize> {
        self.partner_lost.then_some(self.predecessor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkType;

    #[test]
    fn futex_stays_the_default_and_pipe_is_chosen_by_name() {
        let t = WorkType::from_name("WakeChain").unwrap();
        assert_eq!(t, WorkType::WakeChain(Params::default()));
        let piped = t.with_params(&[("wake".into(), "pipe".into())]).unwrap();
        let WorkType::WakeChain(p) = piped else {
            panic!("{piped:?}")
        };
        assert_eq!(p.wake, WakeMode::Pipe);
        let err = t
            .with_params(&[("wake".into(), "signal".into())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("futex") && err.contains("pipe"), "{err}");
    }

    #[test]
    fn the_pipe_ring_hands_each_worker_its_own_ends_and_the_token_to_worker_0() {
        let mut prepared = prepare_pipes(1, 3).unwrap();
        let mut bodies: Vec<_> = (0..3).map(|i| prepared.worker(i).unwrap()).collect();
        assert!(prepared.worker(0).is_err(), "an end was handed out twice");
        prepared.release_parent_copies();
        let mut tel = Telemetry::start();
        // Three hops go round the ring once: each finds its message
        // waiting (no wait, so no wake sample) and passes it on.
        for body in bodies.iter_mut() {
            assert_eq!(body.iterate(&mut tel), 1);
        }
        assert_eq!(bodies[0].iterate(&mut tel), 1, "the token came back to 0");
        let report = tel.finish(0, false);
        assert_eq!(report.wake_sample_total, 0, "no read blocked");
    }

    #[test]
    fn a_closed_predecessor_is_named_as_the_lost_partner() {
        let mut prepared = prepare_pipes(1, 2).unwrap();
        let mut first = prepared.worker(0).unwrap();
        let second = prepared.worker(1).unwrap();
        prepared.release_parent_copies();
        let mut tel = Telemetry::start();
        assert_eq!(first.iterate(&mut tel), 1, "worker 0 holds the token");
        drop(second);
        // Worker 1 held the only write end into worker 0's pipe.
        assert_eq!(first.iterate(&mut tel), 0);
        assert_eq!(first.partner_lost(), Some(1));
    }
}
