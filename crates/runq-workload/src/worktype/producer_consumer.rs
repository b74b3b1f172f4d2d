//! ProducerConsumerImbalance: the first `producers` workers of a group
//! push timestamped items into one bounded queue in shared memory, the
//! rest pop and consume them. Producers make an item faster than
//! consumers use one, so the queue runs full: producers block on a full
//! queue, consumers on an empty one (futex waits on the counters).

use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::futex_lock::FutexLock;
use super::ranges::{ParamRange, MAX_ITERS};
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::stop::stop_requested;
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;

/// ProducerConsumerImbalance parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// How many of the group's workers produce (the first ones); the rest
    /// consume. Must leave at least one consumer.
    pub producers: u64,
    /// Capacity of the queue, items.
    pub queue_depth: u64,
    /// Spin units a producer spends making one item.
    pub produce_iters: u64,
    /// Spin units a consumer spends on one item.
    pub consume_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            producers: 1,
            queue_depth: 16,
            produce_iters: 256,
            consume_iters: 1024,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "ProducerConsumerImbalance",
    summary: "producers push timestamped items into one bounded shared queue faster than \
              consumers pop them; both sides block on futexes when full or empty",
    units: "producers: produce_iters units per item; consumers: consume_iters units per item \
            (at least 1 each)",
    wakes: Some("consumers only: delta from the item's enqueue timestamp to taking it"),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "the first `producers` produce, the rest consume",
    },
    wake_figure: super::WakeFigure::QueueWait,
    params: &[
        ParamRange::new("producers", 1, 1024),
        ParamRange::new("queue_depth", 1, 65_536),
        ParamRange::new("produce_iters", 0, MAX_ITERS),
        ParamRange::new("consume_iters", 0, MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

/// Byte offsets in the shared region: lock, head and tail counters one
/// cache line apart, then the item stamps.
const LOCK: usize = 0;
const HEAD: usize = 64;
const TAIL: usize = 128;
const SLOTS: usize = 192;
/// Longest single wait, so a stop is seen within it.
const WAIT_SLICE_NS: u64 = 10_000_000;

/// Byte offset of the slot that queue position `counter` uses.
fn slot_offset(counter: u32, depth: u32) -> usize {
    SLOTS + (counter % depth) as usize * 8
}

/// The position after `counter`. Positions run modulo `2 * depth`, so a
/// full queue (`depth` items) and an empty one differ, and slots stay in
/// step when the counter wraps.
fn advance(counter: u32, depth: u32) -> u32 {
    (counter + 1) % (2 * depth)
}

/// Items queued between the head and tail positions.
fn queued(head: u32, tail: u32, depth: u32) -> u32 {
    (tail + 2 * depth - head) % (2 * depth)
}

/// The queue in shared memory.
#[derive(Clone)]
struct Queue {
    region: SharedRegion,
    depth: u32,
}

impl Queue {
    fn word(&self, offset: usize) -> &AtomicU32 {
        self.region.atomic_u32(offset)
    }

    fn slot(&self, counter: u32) -> &AtomicU64 {
        self.region.atomic_u64(slot_offset(counter, self.depth))
    }

    /// Runs `f(head, tail)` under the lock; `None` on STOP.
    fn locked<T>(&self, f: impl FnOnce(&AtomicU32, &AtomicU32) -> T) -> Option<T> {
        let lock = FutexLock::new(self.word(LOCK), self.region.atomic_u64(LOCK + 8), false);
        lock.lock()?;
        let out = f(self.word(HEAD), self.word(TAIL));
        lock.unlock();
        Some(out)
    }

    /// Pushes a stamp now; waits while full. False on STOP.
    fn push(&self) -> bool {
        loop {
            let Some(pushed) = self.locked(|head, tail| {
                let (h, t) = (head.load(Ordering::Relaxed), tail.load(Ordering::Relaxed));
                if queued(h, t, self.depth) >= self.depth {
                    return Err(h);
                }
                self.slot(t).store(now_ns(), Ordering::Relaxed);
                tail.store(advance(t, self.depth), Ordering::Release);
                Ok(())
            }) else {
                return false;
            };
            match pushed {
                Ok(()) => {
                    futex_wake(self.word(TAIL), 1);
                    return true;
                }
                Err(_) if stop_requested() => return false,
                Err(h) => {
                    futex_wait(self.word(HEAD), h, WAIT_SLICE_NS);
                }
            }
        }
    }

    /// Pops the oldest item's stamp; waits while empty. `None` on STOP.
    fn pop(&self) -> Option<u64> {
        loop {
            let popped = self.locked(|head, tail| {
                let (h, t) = (head.load(Ordering::Relaxed), tail.load(Ordering::Relaxed));
                if queued(h, t, self.depth) == 0 {
                    return Err(t);
                }
                let stamp = self.slot(h).load(Ordering::Relaxed);
                head.store(advance(h, self.depth), Ordering::Release);
                Ok(stamp)
            })?;
            match popped {
                Ok(stamp) => {
                    futex_wake(self.word(HEAD), 1);
                    return Some(stamp);
                }
                Err(_) if stop_requested() => return None,
                Err(t) => {
                    futex_wait(self.word(TAIL), t, WAIT_SLICE_NS);
                }
            }
        }
    }
}

struct Body {
    queue: Queue,
    producer: bool,
    iters: u64,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if self.producer {
            let units = tel.spin(self.iters);
            return if self.queue.push() { units } else { 0 };
        }
        let Some(stamp) = self.queue.pop() else {
            return 0;
        };
        tel.record_wake_since(stamp);
        tel.spin(self.iters)
    }

    fn role(&self) -> u8 {
        u8::from(!self.producer)
    }
}

struct Group {
    queue: Queue,
    params: Params,
}

impl PreparedWork for Group {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let producer = (idx as u64) < self.params.producers;
        Ok(Box::new(Body {
            queue: self.queue.clone(),
            producer,
            iters: if producer {
                self.params.produce_iters
            } else {
                self.params.consume_iters
            },
        }))
    }
}

/// Refuses a group without a consumer (checked before the run).
pub(super) fn check_workers(p: &Params, workers: usize) -> Result<(), String> {
    if p.producers >= workers as u64 {
        return Err(format!(
            "producers={} leaves no consumer among {workers} workers; use more workers or \
             fewer producers",
            p.producers
        ));
    }
    Ok(())
}

/// Maps the group's queue; refuses a group without a consumer.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    check_workers(p, workers).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let depth = u32::try_from(p.queue_depth).map_err(io::Error::other)?;
    Ok(Box::new(Group {
        queue: Queue {
            region: SharedRegion::new(slot_offset(depth - 1, depth) + 8)?,
            depth,
        },
        params: p.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_wrap_at_twice_the_depth_and_keep_the_fill_level() {
        assert_eq!(advance(5, 3), 0);
        assert_eq!(queued(4, 1, 3), 3, "full across the wrap");
        assert_eq!(queued(2, 2, 3), 0);
        assert_eq!(queued(0, 65_535, 65_536), 65_535);
    }

    #[test]
    fn slots_cycle_through_the_depth() {
        assert_eq!(slot_offset(0, 4), SLOTS);
        assert_eq!(slot_offset(5, 4), SLOTS + 8);
        assert_eq!(slot_offset(3, 3), slot_offset(0, 3));
    }

    #[test]
    fn a_queue_hands_items_over_in_order_across_the_wrap() {
        let q = Queue {
            region: SharedRegion::new(SLOTS + 16).unwrap(),
            depth: 2,
        };
        for _ in 0..5 {
            assert!(q.push() && q.push());
            let (a, b) = (q.pop().unwrap(), q.pop().unwrap());
            assert!(a <= b);
        }
        let fill = q.locked(|h, t| queued(h.load(Ordering::Relaxed), t.load(Ordering::Relaxed), 2));
        assert_eq!(fill, Some(0));
    }
}
