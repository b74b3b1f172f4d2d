//! SignalStorm: pairs of workers bounce a real-time signal (`SIGRTMIN+4`)
//! with `tgkill`. Each worker blocks the signal in its own thread and
//! takes it with `sigtimedwait` (10 ms slices), so delivery is a wakeup
//! of a blocked task. runq's stop signal (SIGUSR1) stays unblocked and
//! ends a wait at once; the watchdog's SIGUSR2 is not used here.

use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use super::{PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::shared::SharedRegion;
use crate::stop::sleep_unless_stopped;
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "SignalStorm",
    summary: "pairs of workers bounce a real-time signal with tgkill; each blocks it and waits \
              in sigtimedwait",
    units: "spin_iters units per signal received (at least 1)",
    wakes: Some("delta from the partner's timestamp before tgkill to sigtimedwait returning"),
    workers: super::WorkerRule::PAIRS,
    wake_figure: super::WakeFigure::Latency,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// Bytes per pair: per side, its tgid, tid and send stamp.
const SLOT: usize = 64;
/// Longest single wait, so a stop is seen within it.
const WAIT_SLICE: libc::timespec = libc::timespec {
    tv_sec: 0,
    tv_nsec: 10_000_000,
};

/// The signal the pairs exchange: clear of SIGUSR1 (stop) and SIGUSR2
/// (watchdog), and of the real-time signals the C library reserves.
fn storm_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

/// Never run while the signal is blocked; a safety net so a stray
/// delivery to an unblocked thread is ignored instead of killing it.
extern "C" fn on_storm_signal(_: libc::c_int) {}

/// One side's words in its pair's slot.
struct Side<'a> {
    region: &'a SharedRegion,
    base: usize,
}

impl Side<'_> {
    fn tgid(&self) -> &AtomicU32 {
        self.region.atomic_u32(self.base)
    }
    fn tid(&self) -> &AtomicU32 {
        self.region.atomic_u32(self.base + 4)
    }
    fn stamp(&self) -> &AtomicU64 {
        self.region.atomic_u64(self.base + 8)
    }
}

struct Body {
    region: SharedRegion,
    pair: usize,
    side: usize,
    ready: bool,
    must_send: bool,
    spin: u64,
    set: libc::sigset_t,
}

impl Body {
    fn side(&self, side: usize) -> Side<'_> {
        Side {
            region: &self.region,
            base: self.pair * SLOT + side * 16,
        }
    }

    /// Blocks the signal in this thread, then publishes where to send it
    /// (only then may the partner send).
    fn get_ready(&mut self) {
        let _ = runq_kernel::signal::install_handler(
            storm_signal(),
            on_storm_signal as *const () as usize,
        );
        // SAFETY: a valid set; changes only this thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.set, std::ptr::null_mut()) };
        let me = self.side(self.side);
        me.tgid().store(std::process::id(), Ordering::Relaxed);
        me.tid()
            .store(runq_kernel::clock::gettid(), Ordering::Release);
        self.ready = true;
    }

    /// Signals the partner; false while it has not published its tid.
    fn send(&self) -> bool {
        let partner = self.side(1 - self.side);
        let tid = partner.tid().load(Ordering::Acquire);
        if tid == 0 {
            return false;
        }
        let tgid = partner.tgid().load(Ordering::Relaxed);
        self.side(self.side)
            .stamp()
            .store(now_ns(), Ordering::Release);
        // SAFETY: tgkill has no memory preconditions; a partner that is
        // gone yields ESRCH, and this side then waits until STOP.
        unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, storm_signal()) };
        true
    }

    /// Waits up to one slice for the signal; true when it came.
    fn receive(&self) -> bool {
        // SAFETY: valid set and timeout; the info out-pointer may be null.
        let sig = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &WAIT_SLICE) };
        sig == storm_signal()
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.ready {
            self.get_ready();
        }
        if self.must_send {
            if !self.send() {
                sleep_unless_stopped(Duration::from_micros(100));
                return 0;
            }
            self.must_send = false;
        }
        if !self.receive() {
            return 0; // a slice passed or STOP came: the loop checks
        }
        tel.record_wake_since(self.side(1 - self.side).stamp().load(Ordering::Acquire));
        let units = tel.spin(self.spin);
        self.must_send = !self.send();
        units
    }
}

struct Pairs {
    region: SharedRegion,
    spin: u64,
}

impl PreparedWork for Pairs {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        // SAFETY: a zeroed sigset_t is valid input to sigemptyset.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid set pointer.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, storm_signal());
        }
        Ok(Box::new(Body {
            region: self.region.clone(),
            pair: idx / 2,
            side: idx % 2,
            ready: false,
            must_send: idx % 2 == 0,
            spin: self.spin,
            set,
        }))
    }
}

/// Maps one slot per pair.
pub fn prepare(p: &SpinParams, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(Pairs {
        region: SharedRegion::new((workers / 2).max(1) * SLOT)?,
        spin: p.spin_iters,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storm_signal_is_not_a_runq_signal() {
        let sig = storm_signal();
        assert!(sig >= libc::SIGRTMIN() && sig <= libc::SIGRTMAX());
        assert!(![libc::SIGUSR1, libc::SIGUSR2, libc::SIGINT, libc::SIGTERM].contains(&sig));
    }
}
