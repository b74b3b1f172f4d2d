//! IrqWake's `source = "nic"`: a network device's receive interrupt wakes
//! the handler. In a VM run with `--vm-net`, pairs of a device worker and
//! a handler worker share a UDP socket pair across the NIC pair
//! ([`runq_kernel::netns`]): the device sleeps to deadlines `period_us`
//! apart and sends its clock reading in one datagram from the near
//! virtio-net device; the datagram arrives through the far device's
//! receive interrupt, the network softirq queues it on the handler's
//! socket and wakes the handler blocked in `recv`, which records the wake
//! from the stamp and does `handler_iters` of work. The interrupt, the
//! softirq and the wake are the kernel's own; the sender is a task.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use super::super::net_traffic::{socket_pair, NetPath, Proto};
use super::super::{PreparedWork, WorkerBody};
use super::eventfd::Period;
use super::Params;
use crate::telemetry::Telemetry;
use runq_kernel::clock::monotonic_ns;

struct Pairs {
    sockets: Vec<(Option<OwnedFd>, Option<OwnedFd>)>,
    period_ns: u64,
    handler: u64,
}

/// One UDP socket pair across the NIC pair per device-handler pair.
pub(super) fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let sockets = (0..(workers / 2).max(1))
        .map(|_| socket_pair(Proto::Udp, NetPath::Nic).map(|(a, b)| (Some(a), Some(b))))
        .collect::<io::Result<_>>()?;
    Ok(Box::new(Pairs {
        sockets,
        period_ns: p.period_us * 1000,
        handler: p.handler_iters,
    }))
}

impl PreparedWork for Pairs {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let pair = self.sockets.get_mut(idx / 2);
        let fd = pair.and_then(|(a, b)| if idx % 2 == 0 { a.take() } else { b.take() });
        let fd = fd.ok_or_else(|| io::Error::other("socket already taken"))?;
        Ok(if idx % 2 == 0 {
            Box::new(Device {
                fd,
                period: Period::every(self.period_ns),
            })
        } else {
            Box::new(Handler {
                fd,
                handler: self.handler,
            })
        })
    }

    fn release_parent_copies(&mut self) {
        self.sockets.clear();
    }
}

struct Device {
    fd: OwnedFd,
    period: Period,
}

impl WorkerBody for Device {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.period.wait(tel) {
            return 0; // a stop signal
        }
        let stamp = monotonic_ns().to_ne_bytes();
        // SAFETY: sending 8 bytes from a valid buffer on our own socket.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), stamp.as_ptr().cast(), 8, 0) };
        u64::from(n == 8)
    }

    fn role(&self) -> u8 {
        1
    }
}

struct Handler {
    fd: OwnedFd,
    handler: u64,
}

impl WorkerBody for Handler {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let mut stamp = [0u8; 8];
        // SAFETY: receiving at most 8 bytes into a valid buffer.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), stamp.as_mut_ptr().cast(), 8, 0) };
        if n != 8 {
            return 0; // a stop signal
        }
        tel.record_wake(monotonic_ns().saturating_sub(u64::from_ne_bytes(stamp)));
        if self.handler > 0 {
            tel.spin(self.handler)
        } else {
            1
        }
    }
}
