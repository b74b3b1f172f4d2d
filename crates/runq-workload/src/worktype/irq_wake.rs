//! IrqWake on a host: a stand-in for a device interrupt waking the thread
//! that handles it. A real device's interrupt (a NIC's RX, a disk's
//! completion) runs a handler in interrupt context that wakes a thread
//! waiting on a wait queue; a host without such a device to drive gets
//! the same shape from a timerfd: each worker arms a periodic
//! `CLOCK_MONOTONIC` timerfd and blocks in `read` on it, and at each
//! expiry the kernel's hrtimer interrupt runs the timerfd's callback,
//! which wakes the reader from the timer interrupt's context. The worker
//! then does `handler_iters` units of work, as a threaded handler or a
//! driver's bottom half would, and waits for the next one.
//!
//! This is not a device's interrupt path: no device, no IRQ line, no
//! softirq. The wake is a hard interrupt's (the local APIC timer's), and
//! the figure is from the expiry's deadline to the worker running again.
//!
//! With `source = "eventfd"` the workers pair up as a device and its
//! handler: the even worker raises the interrupt every `period_us` by
//! writing to an eventfd (the way VFIO and KVM's irqfd hand a device's
//! interrupt to a thread: an eventfd signalled from the interrupt
//! handler), the odd one blocks in `read` on it. Here the signal comes
//! from a task, not from interrupt context; the figure runs from the
//! device's stamp just before its write to the handler running.
//!
//! With `source = "nic"` (a VM run with `--vm-net`) the interrupt is a
//! real device's: a virtio-net receive interrupt ([`nic`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS, MAX_US};
use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;
use runq_kernel::clock::monotonic_ns;

mod eventfd;
mod nic;

/// What stands in for the device's interrupt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A periodic timerfd: the timer's hard interrupt wakes the reader.
    #[default]
    Timerfd,
    /// A device worker writing an eventfd its handler worker reads.
    Eventfd,
    /// A datagram through the NIC pair of `--vm-net`: the far virtio-net
    /// device's receive interrupt wakes the handler.
    Nic,
}

/// IrqWake parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// What raises the interrupt.
    pub source: Source,
    /// Time between the stand-in interrupts, µs.
    pub period_us: u64,
    /// Spin units the handler does per interrupt.
    pub handler_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            source: Source::Timerfd,
            period_us: 1000,
            handler_iters: 256,
        }
    }
}

/// The eventfd and nic sources pair a device with a handler.
pub fn check_workers(p: &Params, workers: usize) -> Result<(), String> {
    let source = match p.source {
        Source::Timerfd => return Ok(()),
        Source::Eventfd => "eventfd",
        Source::Nic => "nic",
    };
    if workers % 2 != 0 {
        return Err(format!(
            "source={source} pairs a device worker with a handler worker: give an even number \
             of workers (got {workers})"
        ));
    }
    Ok(())
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "IrqWake",
    summary: "a device interrupt waking its handler thread: a periodic timerfd whose expiry \
              (the hrtimer interrupt) wakes the worker blocked in read; (source = eventfd) a \
              device worker's eventfd write waking its handler; or (source = nic, in a --vm-net \
              VM) a datagram whose virtio-net receive interrupt wakes it; then handler_iters \
              of work",
    units: "handler_iters spin units per interrupt (at least 1)",
    wakes: Some(
        "per interrupt: from the timer's deadline (timerfd; expiries missed while it worked \
         are counted, not sampled) or the device's stamp just before its eventfd write \
         (eventfd) or its send (nic) to the handler running after its read returned",
    ),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::Latency,
    params: &[
        ParamRange::new("period_us", 10, MAX_US),
        ParamRange::new("handler_iters", 0, MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

/// A periodic timerfd whose first expiry is one period from now: the fd
/// and that first deadline (monotonic ns).
fn periodic_timer(period_ns: u64) -> io::Result<(OwnedFd, u64)> {
    // SAFETY: plain syscall; the fd is checked before use.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we now own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let first = monotonic_ns() + period_ns;
    let ts = |ns: u64| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: ts(period_ns),
        it_value: ts(first),
    };
    // SAFETY: valid itimerspec; no old value wanted.
    let rc = unsafe {
        libc::timerfd_settime(
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fd, first))
}

struct Body {
    period_ns: u64,
    handler: u64,
    /// The timer and the deadline of its next expiry; armed on the first
    /// iteration, in the worker's own thread.
    timer: Option<(OwnedFd, u64)>,
}

impl Body {
    /// Blocks until the timer fires: the deadline of the last expiry it
    /// read, or `None` (a signal: the stop; or a failed read).
    fn wait_expiry(&mut self) -> Option<u64> {
        let (fd, next) = self.timer.as_mut()?;
        let mut count = 0u64;
        // SAFETY: reading the 8-byte expiry count into a valid u64.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
        if n != 8 || count == 0 {
            return None;
        }
        let last = *next + (count - 1) * self.period_ns;
        *next = last + self.period_ns;
        Some(last)
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if self.timer.is_none() {
            super::fine_timer_slack();
            match periodic_timer(self.period_ns) {
                Ok(t) => self.timer = Some(t),
                Err(e) => {
                    eprintln!("IrqWake: timerfd: {e}");
                    crate::stop::request_stop();
                    return 0;
                }
            }
        }
        if let Some((_, next)) = &self.timer {
            tel.plan(next.saturating_sub(monotonic_ns()));
        }
        let Some(deadline) = self.wait_expiry() else {
            return 0;
        };
        tel.record_wake(monotonic_ns().saturating_sub(deadline));
        if self.handler > 0 {
            tel.spin(self.handler)
        } else {
            1
        }
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    match p.source {
        Source::Eventfd => return eventfd::prepare(p, workers),
        Source::Nic => return nic::prepare(p, workers),
        Source::Timerfd => {}
    }
    let (period_ns, handler) = (p.period_us * 1000, p.handler_iters);
    Ok(independent(move |_| {
        Ok(Box::new(Body {
            period_ns,
            handler,
            timer: None,
        }))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_expiry_wakes_the_reader_and_is_timed_from_its_deadline() {
        let mut body = prepare(
            &Params {
                period_us: 2000,
                handler_iters: 8,
                ..Params::default()
            },
            1,
        )
        .unwrap()
        .worker(0)
        .unwrap();
        let mut tel = Telemetry::start();
        let t0 = monotonic_ns();
        for _ in 0..5 {
            let units = body.iterate(&mut tel);
            assert!(units >= 1, "{units}");
            tel.end_iteration(units);
        }
        let elapsed = monotonic_ns() - t0;
        assert!(
            elapsed >= 5 * 2_000_000,
            "five periods passed: {elapsed} ns"
        );
        let report = tel.finish(0, false);
        assert_eq!(report.wake_sample_total, 5);
    }

    #[test]
    fn missed_expiries_move_the_deadline_on() {
        let mut body = Body {
            period_ns: 1_000_000,
            handler: 0,
            timer: Some(periodic_timer(1_000_000).unwrap()),
        };
        std::thread::sleep(std::time::Duration::from_millis(5));
        let before = monotonic_ns();
        let last = body.wait_expiry().unwrap();
        assert!(last <= before, "the last expiry read was already past");
        let next = body.timer.as_ref().unwrap().1;
        assert_eq!(next, last + 1_000_000);
    }
}
