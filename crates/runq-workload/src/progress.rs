//! Progress counters the workers publish while they run: one cache line
//! per worker in a shared mapping made before fork, holding its work units
//! and iterations so far. The run loop reads them every snapshot interval
//! (see [`crate::series`]) without disturbing the workers beyond one
//! relaxed store of two words per iteration.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::shared::SharedRegion;

/// Bytes per worker: one cache line, so two workers never share one.
const SLOT_BYTES: usize = 64;

/// One group's progress counters, shared between the parent and the
/// group's workers (process or thread); clones refer to the same memory.
#[derive(Debug, Clone)]
pub struct ProgressBoard {
    region: SharedRegion,
    slots: usize,
}

/// The summed counters of a board at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgressTotals {
    /// Work units over every worker.
    pub work_units: u64,
    /// Iterations over every worker.
    pub iterations: u64,
}

impl ProgressBoard {
    /// A zeroed board for `slots` workers.
    pub fn new(slots: usize) -> io::Result<Self> {
        let region = SharedRegion::new(slots.max(1) * SLOT_BYTES)?;
        Ok(ProgressBoard { region, slots })
    }

    /// Worker `idx`'s slot, `None` past the board's end.
    pub fn slot(&self, idx: usize) -> Option<ProgressSlot> {
        (idx < self.slots).then(|| ProgressSlot {
            ptr: NonNull::from(self.region.atomic_u64(idx * SLOT_BYTES)),
            _region: self.region.clone(),
        })
    }

    /// The counters summed over every slot.
    pub fn totals(&self) -> ProgressTotals {
        let mut t = ProgressTotals::default();
        for i in 0..self.slots {
            let base = i * SLOT_BYTES;
            t.work_units += self.region.atomic_u64(base).load(Ordering::Relaxed);
            t.iterations += self.region.atomic_u64(base + 8).load(Ordering::Relaxed);
        }
        t
    }
}

/// One worker's slot, resolved once; it keeps the mapping alive.
#[derive(Debug)]
pub struct ProgressSlot {
    ptr: NonNull<AtomicU64>,
    _region: SharedRegion,
}

// SAFETY: the slot points into a shared mapping kept alive by `_region`,
// and is only touched through atomics.
unsafe impl Send for ProgressSlot {}

impl ProgressSlot {
    /// Publishes the worker's counters so far.
    #[inline(always)]
    pub fn publish(&self, work_units: u64, iterations: u64) {
        // SAFETY: the slot's two words were checked in range when it was
        // made, and `_region` keeps them mapped.
        let words = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), 2) };
        words[0].store(work_units, Ordering::Relaxed);
        words[1].store(iterations, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_sum_into_totals_and_end_at_the_board() {
        let b = ProgressBoard::new(3).unwrap();
        b.slot(0).unwrap().publish(10, 2);
        b.slot(2).unwrap().publish(5, 1);
        assert!(b.slot(3).is_none());
        let t = b.clone().totals();
        assert_eq!((t.work_units, t.iterations), (15, 3));
    }

    #[test]
    fn a_forked_child_publishes_to_the_parent() {
        let b = ProgressBoard::new(1).unwrap();
        // SAFETY: the child only publishes and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            b.slot(0).unwrap().publish(7, 7);
            // SAFETY: leave the child without running the test harness.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(b.totals().work_units, 7);
    }
}
