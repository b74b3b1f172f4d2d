//! PipeIo: pairs of workers ping-pong one 8-byte message over two pipes.
//! The even worker of a pair writes then reads; the odd one reads then
//! writes. Each message carries its writer's clock reading taken just
//! before the write (the wake call); a read that blocked records the wake
//! latency from that stamp to running again, and a read that found its
//! message already waiting records nothing (see
//! [`crate::wake_stamp::waited_wake_latency_ns`]). CachePipe reuses the
//! pairs with a cache walk in place of the spin burst. A worker whose
//! partner's end closes (EOF on read, EPIPE on write) stops and reports
//! the partner's index, so the verdict can name a partner that died.

use std::io;
use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

use super::cache_pressure::{self, StridedBuffer};
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::fd::{pipe, read_stamp, write_stamp, ReadStamp};
use crate::stop::{request_stop, stop_requested};
use crate::telemetry::{Telemetry, CHUNK_UNITS};
use runq_kernel::clock::fast::now_ns;

/// PipeIo parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Spin units before each write.
    pub burst_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params { burst_iters: 1024 }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "PipeIo",
    summary: "pairs of workers ping-pong a stamped message over pipes after a spin burst (wakeup latency)",
    units: "burst_iters spin units per round trip (1 when burst_iters = 0); checkpoint every iteration at the default 1024",
    wakes: Some(
        "pipe read that blocked: from the writer's stamp, taken just before its write, to running again",
    ),
    workers: super::WorkerRule::PAIRS,
    wake_figure: super::WakeFigure::Latency,
    params: &[super::ranges::ParamRange::new("burst_iters", 0, super::ranges::MAX_ITERS)],
    needs: super::HostNeed::Nothing,
};

/// The four pipe ends of one pair; each worker takes its two.
#[derive(Default)]
struct PairFds {
    ab_r: Option<OwnedFd>,
    ab_w: Option<OwnedFd>,
    ba_r: Option<OwnedFd>,
    ba_w: Option<OwnedFd>,
}

/// What a worker does between round trips.
#[derive(Clone)]
pub(super) enum BurstSpec {
    /// `n` spin units (at least one).
    Spin(u64),
    /// `n` strided RMW steps over a private buffer.
    Cache(cache_pressure::Params, u64),
}

enum Burst {
    Spin(u64),
    Cache(StridedBuffer, u64),
}

impl Burst {
    fn new(spec: &BurstSpec) -> Self {
        match spec {
            BurstSpec::Spin(n) => Burst::Spin(*n),
            BurstSpec::Cache(p, n) => Burst::Cache(StridedBuffer::new(p), *n),
        }
    }

    #[inline(always)]
    fn run(&mut self, tel: &mut Telemetry) -> u64 {
        match self {
            Burst::Spin(n) => tel.spin(*n),
            Burst::Cache(buf, n) => tel.work_in_chunks(*n, CHUNK_UNITS, |k| buf.walk(k)),
        }
    }
}

struct Pairs {
    pairs: Vec<PairFds>,
    burst: BurstSpec,
}

struct Body {
    tx: OwnedFd,
    rx: OwnedFd,
    writes_first: bool,
    burst: Burst,
    /// The partner's index in the group.
    partner: usize,
    /// Set once the partner's end of a pipe closed under us.
    partner_lost: bool,
}

impl Body {
    #[inline(always)]
    fn timed_read(&mut self, tel: &mut Telemetry) -> bool {
        let read_start = now_ns();
        match read_stamp(&self.rx) {
            Ok(ReadStamp::Stamp(stamp)) => {
                tel.record_wake_if_waited(read_start, stamp);
                true
            }
            Ok(ReadStamp::Eof) => {
                self.partner_lost = true;
                false
            }
            Ok(ReadStamp::Interrupted) => false,
            Err(_) => {
                request_stop();
                false
            }
        }
    }

    /// Writes the message, stamped just before the write; a failure
    /// outside a stop means the partner's read end is gone (EPIPE).
    #[inline(always)]
    fn write(&mut self) -> bool {
        let ok = write_stamp(&self.tx, now_ns());
        if !ok && !stop_requested() {
            self.partner_lost = true;
        }
        ok
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = self.burst.run(tel);
        if self.writes_first {
            if self.write() {
                self.timed_read(tel);
            }
        } else if self.timed_read(tel) {
            self.write();
        }
        units
    }

    fn partner_lost(&self) -> Option<usize> {
        self.partner_lost.then_some(self.partner)
    }
}

impl PreparedWork for Pairs {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let missing = || io::Error::other("pipe end already taken");
        let pair = self.pairs.get_mut(idx / 2).ok_or_else(missing)?;
        let (tx, rx) = if idx % 2 == 0 {
            (pair.ab_w.take(), pair.ba_r.take())
        } else {
            (pair.ba_w.take(), pair.ab_r.take())
        };
        let (tx, rx) = (tx.ok_or_else(missing)?, rx.ok_or_else(missing)?);
        Ok(Box::new(Body {
            tx,
            rx,
            writes_first: idx % 2 == 0,
            burst: Burst::new(&self.burst),
            partner: idx ^ 1,
            partner_lost: false,
        }))
    }

    fn release_parent_copies(&mut self) {
        self.pairs.clear();
    }
}

/// Creates two pipes per pair.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    prepare_pairs(BurstSpec::Spin(p.burst_iters), workers)
}

/// Creates two pipes per pair; each worker runs `burst` between trips.
pub(super) fn prepare_pairs(burst: BurstSpec, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let mut pairs = Vec::with_capacity(workers / 2);
    for _ in 0..workers / 2 {
        let ((ab_r, ab_w), (ba_r, ba_w)) = (pipe()?, pipe()?);
        pairs.push(PairFds {
            ab_r: Some(ab_r),
            ab_w: Some(ab_w),
            ba_r: Some(ba_r),
            ba_w: Some(ba_w),
        });
    }
    Ok(Box::new(Pairs { pairs, burst }))
}
