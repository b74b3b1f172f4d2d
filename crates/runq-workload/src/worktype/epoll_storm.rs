//! EpollStorm: worker 0 (the producer) makes `fds` eventfds ready at once;
//! every other worker (a consumer) waits on all of them in its own epoll
//! instance, so one burst wakes every consumer, and they race to drain.
//! The producer then waits until every fd was drained before the next
//! burst. A consumer's wake sample runs from the producer's timestamp,
//! taken just before the burst, to its `epoll_wait` returning.
//!
//! The consumers race, and who wins is the kernel's doing: each eventfd
//! wakes every epoll instance on its wait queue, in the queue's order,
//! and the first consumer to run drains the burst. The same race without
//! runq (`scripts/floors/epoll_herd.c`, 15 consumers on 2 CPUs, 3 s)
//! gave the consumers 55 to 18,679 drains each. Their off-CPU shares
//! therefore differ by design, and `max_offcpu_spread_pct` does not
//! judge them (see [`crate::GroupWork::Race`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS};
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::stop::stop_requested;
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// EpollStorm parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Eventfds made ready per burst.
    pub fds: u64,
    /// Spin units a consumer does after each wake that drained something.
    pub spin_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            fds: 16,
            spin_iters: 256,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "EpollStorm",
    summary: "worker 0 makes fds eventfds ready at once; the other workers wait on all of \
              them in epoll_wait and race to drain them",
    units: "producer: one unit per fd made ready; consumers: one per fd drained plus \
            spin_iters per wake that drained any",
    wakes: Some("consumers only: delta from the producer's pre-burst timestamp"),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "worker 0 is the producer",
    },
    wake_figure: super::WakeFigure::Latency,
    params: &[
        ParamRange::new("fds", 1, 1024),
        ParamRange::new("spin_iters", 0, MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

/// Byte offsets in the shared region.
const DRAINED: usize = 0;
const STAMP: usize = 8;
/// Longest single wait, so a stop is seen within it.
const WAIT_SLICE_MS: i32 = 10;
/// Most events one `epoll_wait` returns.
const MAX_EVENTS: usize = 64;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

struct Group {
    region: SharedRegion,
    fds: Arc<Vec<OwnedFd>>,
    spin: u64,
}

impl PreparedWork for Group {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        if idx == 0 {
            return Ok(Box::new(Producer {
                region: self.region.clone(),
                fds: Arc::clone(&self.fds),
            }));
        }
        // SAFETY: epoll_create1 has no memory preconditions.
        let raw = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: a fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
        for (i, fd) in self.fds.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: both descriptors are open; ev is valid for the call.
            check(unsafe {
                libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    fd.as_raw_fd(),
                    &mut ev,
                )
            })?;
        }
        Ok(Box::new(Consumer {
            region: self.region.clone(),
            fds: Arc::clone(&self.fds),
            epoll,
            spin: self.spin,
            events: [libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS],
        }))
    }
}

/// Makes the group's eventfds and shared words.
pub fn prepare(p: &Params, _workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let fds = (0..p.fds)
        .map(|_| {
            // SAFETY: eventfd has no memory preconditions.
            let raw = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
            // SAFETY: a fresh descriptor we own.
            Ok(unsafe { OwnedFd::from_raw_fd(raw) })
        })
        .collect::<io::Result<Vec<_>>>()?;
    Ok(Box::new(Group {
        region: SharedRegion::new(64)?,
        fds: Arc::new(fds),
        spin: p.spin_iters,
    }))
}

fn drained(region: &SharedRegion) -> &AtomicU32 {
    region.atomic_u32(DRAINED)
}

fn stamp(region: &SharedRegion) -> &AtomicU64 {
    region.atomic_u64(STAMP)
}

struct Producer {
    region: SharedRegion,
    fds: Arc<Vec<OwnedFd>>,
}

impl WorkerBody for Producer {
    #[inline(always)]
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        let drained = drained(&self.region);
        drained.store(0, Ordering::Release);
        stamp(&self.region).store(now_ns(), Ordering::Release);
        let one = 1u64.to_ne_bytes();
        for fd in self.fds.iter() {
            // SAFETY: writing 8 bytes from a valid buffer to an eventfd.
            unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        }
        let want = u32::try_from(self.fds.len()).unwrap_or(u32::MAX);
        loop {
            let seen = drained.load(Ordering::Acquire);
            if seen >= want || stop_requested() {
                break;
            }
            futex_wait(drained, seen, WAIT_SLICE_MS as u64 * 1_000_000);
        }
        self.fds.len() as u64
    }

    fn is_messenger(&self) -> bool {
        true
    }
}

struct Consumer {
    region: SharedRegion,
    fds: Arc<Vec<OwnedFd>>,
    epoll: OwnedFd,
    spin: u64,
    events: [libc::epoll_event; MAX_EVENTS],
}

impl Consumer {
    /// Reads every ready fd it can; returns how many it emptied (others
    /// may have been emptied first by another consumer).
    fn drain(&mut self, ready: usize) -> u32 {
        let mut got = 0;
        let mut value = [0u8; 8];
        for ev in &self.events[..ready] {
            let fd = &self.fds[ev.u64 as usize];
            // SAFETY: reading 8 bytes into a valid buffer from an eventfd.
            let n = unsafe { libc::read(fd.as_raw_fd(), value.as_mut_ptr().cast(), value.len()) };
            got += u32::from(n == 8);
        }
        got
    }
}

impl WorkerBody for Consumer {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        // SAFETY: the events buffer holds MAX_EVENTS entries.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                self.events.as_mut_ptr(),
                MAX_EVENTS as i32,
                WAIT_SLICE_MS,
            )
        };
        let Ok(ready @ 1..) = usize::try_from(n) else {
            return 0; // timeout or a signal (STOP): the loop checks
        };
        tel.record_wake_since(stamp(&self.region).load(Ordering::Acquire));
        let got = self.drain(ready);
        if got == 0 {
            return 0;
        }
        let drained = drained(&self.region);
        let total = drained.fetch_add(got, Ordering::AcqRel) + got;
        if total as usize >= self.fds.len() {
            futex_wake(drained, 1);
        }
        u64::from(got) + tel.spin(self.spin)
    }
}
