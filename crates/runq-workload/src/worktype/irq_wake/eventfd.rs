//! IrqWake's `source = "eventfd"`: pairs of a device worker and a handler
//! worker. The device sleeps to deadlines `period_us` apart, stamps the
//! time and writes 1 to the pair's eventfd, as an interrupt handler that
//! hands its interrupt to a thread through an eventfd does (VFIO, KVM's
//! irqfd); the handler blocks in `read` on it, records the wake from the
//! stamp and does `handler_iters` of work. The signal comes from a task,
//! not from interrupt context.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::super::timer_latency::sleep_until;
use super::super::{PreparedWork, WorkerBody};
use super::Params;
use crate::shared::SharedRegion;
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;
use runq_kernel::clock::monotonic_ns;

/// Bytes per pair in the shared region: the device's stamp at +0.
const SLOT: usize = 64;

/// A new eventfd (a counter, close-on-exec).
fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the fd is checked before use.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

struct Pairs {
    fds: Vec<OwnedFd>,
    stamps: SharedRegion,
    period_ns: u64,
    handler: u64,
}

/// One eventfd and one stamp slot per device-handler pair.
pub(super) fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let pairs = (workers / 2).max(1);
    Ok(Box::new(Pairs {
        fds: (0..pairs).map(|_| eventfd()).collect::<io::Result<_>>()?,
        stamps: SharedRegion::new(pairs * SLOT)?,
        period_ns: p.period_us * 1000,
        handler: p.handler_iters,
    }))
}

impl PreparedWork for Pairs {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let fd = self
            .fds
            .get(idx / 2)
            .ok_or_else(|| io::Error::other("no eventfd for this worker"))?
            .try_clone()?;
        let stamps = self.stamps.clone();
        let slot = (idx / 2) * SLOT;
        Ok(if idx % 2 == 0 {
            Box::new(Device {
                fd,
                stamps,
                slot,
                period: Period::every(self.period_ns),
            })
        } else {
            Box::new(Handler {
                fd,
                stamps,
                slot,
                handler: self.handler,
            })
        })
    }

    fn release_parent_copies(&mut self) {
        self.fds.clear();
    }
}

/// A device's interrupts, `period_ns` apart: the deadlines it sleeps to.
pub(super) struct Period {
    period_ns: u64,
    due_ns: u64,
}

impl Period {
    /// Interrupts every `period_ns`, the first one period after the first
    /// wait.
    pub(super) fn every(period_ns: u64) -> Period {
        Period {
            period_ns,
            due_ns: 0,
        }
    }

    /// Sleeps to the next deadline (planned, so the sleep is not a gap);
    /// false at a stop signal. A deadline already past moves on to now.
    #[inline(always)]
    pub(super) fn wait(&mut self, tel: &mut Telemetry) -> bool {
        if self.due_ns == 0 {
            super::super::fine_timer_slack();
            self.due_ns = monotonic_ns() + self.period_ns;
        }
        tel.plan(self.due_ns.saturating_sub(monotonic_ns()));
        if !sleep_until(self.due_ns) {
            return false;
        }
        self.due_ns = (self.due_ns + self.period_ns).max(monotonic_ns());
        true
    }
}

struct Device {
    fd: OwnedFd,
    stamps: SharedRegion,
    slot: usize,
    period: Period,
}

impl WorkerBody for Device {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.period.wait(tel) {
            return 0; // a stop signal
        }
        WakeStamp::new(self.stamps.atomic_u64(self.slot)).mark();
        let one = 1u64;
        // SAFETY: writing an 8-byte count from a valid u64.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        u64::from(n == 8)
    }

    fn role(&self) -> u8 {
        1
    }
}

struct Handler {
    fd: OwnedFd,
    stamps: SharedRegion,
    slot: usize,
    handler: u64,
}

impl WorkerBody for Handler {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let mut count = 0u64;
        // SAFETY: reading the 8-byte count into a valid u64.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
        if n != 8 {
            return 0; // a stop signal
        }
        tel.record_wake_stamped(WakeStamp::new(self.stamps.atomic_u64(self.slot)).read());
        if self.handler > 0 {
            tel.spin(self.handler)
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkType;

    #[test]
    fn the_device_wakes_its_handler_once_per_period() {
        let p = Params {
            source: super::super::Source::Eventfd,
            period_us: 1000,
            handler_iters: 4,
        };
        let mut prepared = prepare(&p, 2).unwrap();
        let mut device = prepared.worker(0).unwrap();
        let mut handler = prepared.worker(1).unwrap();
        prepared.release_parent_copies();
        let mut dev_tel = Telemetry::start();
        let mut tel = Telemetry::start();
        for _ in 0..3 {
            assert_eq!(device.iterate(&mut dev_tel), 1);
            assert!(handler.iterate(&mut tel) >= 1);
            tel.end_iteration(4);
        }
        assert_eq!(device.role(), 1);
        assert_eq!(tel.finish(0, false).wake_sample_total, 3);
    }

    #[test]
    fn eventfd_needs_pairs_and_timerfd_does_not() {
        let t = WorkType::from_name("IrqWake").unwrap();
        assert!(t.validate_workers(3).is_ok());
        let paired = t
            .with_params(&[("source".into(), "eventfd".into())])
            .unwrap();
        let err = paired.validate_workers(3).unwrap_err().to_string();
        assert!(
            err.contains("give an even number of workers (got 3)"),
            "{err}"
        );
        assert!(paired.validate_workers(4).is_ok());
    }
}
