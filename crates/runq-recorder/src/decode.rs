//! The recorder's maps as Rust sees them (mirrors of the C structs in
//! `bpf/recorder.bpf.c`) and their aggregation into one
//! [`TaskRecord`] per worker: a worker's threads summed, its holders and
//! wakers merged over its threads and sorted, the longest first.

use std::collections::BTreeMap;

use runq_kernel::task_record::{Holder, Recorded, TaskRecord, Waker};

/// The most holders and wakers kept per worker.
pub const TOP: usize = 8;

/// One watched thread, as `struct task_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawTask {
    pub(crate) run_ns: u64,
    pub(crate) wait_ns: u64,
    pub(crate) waits: u64,
    pub(crate) max_wait_ns: u64,
    pub(crate) wakeups: u64,
    pub(crate) migrations: u64,
    pub(crate) unattributed_ns: u64,
    pub(crate) idle_ns: u64,
    pub(crate) in_ns: u64,
    pub(crate) enq_ns: u64,
    pub(crate) worker: u32,
    pub(crate) max_wait_cpu: u32,
}

/// A (watched thread, other task) key, as `struct pair`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RawPair {
    pub(crate) task: u32,
    pub(crate) other: u32,
}

/// Held time or wakeups of a pair, as `struct charged`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCharged {
    pub(crate) ns: u64,
    pub(crate) turns: u64,
    pub(crate) comm: [u8; 16],
}

// SAFETY: plain integers and bytes without padding (sizes asserted in the
// C and in the tests below).
unsafe impl aya::Pod for RawTask {}
// SAFETY: as above.
unsafe impl aya::Pod for RawPair {}
// SAFETY: as above.
unsafe impl aya::Pod for RawCharged {}

/// What was read from the maps, before aggregation.
#[derive(Debug, Clone, Default)]
pub struct RawMaps {
    /// TASKS: thread id and its figures.
    pub tasks: Vec<(u32, RawTask)>,
    /// HELD: (waiter thread, holder) and the held time.
    pub held: Vec<(RawPair, RawCharged)>,
    /// WAKERS: (wakee thread, waker) and the wakeups.
    pub wakers: Vec<(RawPair, RawCharged)>,
    /// LOST: pairs, threads, each summed over the CPUs.
    pub lost: [u64; 2],
}

fn comm(raw: &[u8; 16]) -> String {
    let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..len]).into_owned()
}

/// One record per worker, in thread id order, with its threads' figures
/// summed and its top [`TOP`] holders and wakers.
pub fn aggregate(raw: &RawMaps) -> Recorded {
    let worker_of: BTreeMap<u32, u32> = raw.tasks.iter().map(|(t, s)| (*t, s.worker)).collect();
    let mut workers: BTreeMap<u32, TaskRecord> = BTreeMap::new();
    for (_, s) in &raw.tasks {
        let w = workers.entry(s.worker).or_insert_with(|| TaskRecord {
            worker: s.worker,
            ..TaskRecord::default()
        });
        w.threads += 1;
        w.run_ns += s.run_ns;
        w.wait_ns += s.wait_ns;
        w.waits += s.waits;
        w.wakeups += s.wakeups;
        w.migrations += s.migrations;
        w.unattributed_ns += s.unattributed_ns;
        w.idle_ns += s.idle_ns;
        if s.max_wait_ns > w.max_wait_ns {
            w.max_wait_ns = s.max_wait_ns;
            w.max_wait_cpu = s.max_wait_cpu;
        }
    }
    let mut held: BTreeMap<(u32, u32), Holder> = BTreeMap::new();
    for (k, c) in &raw.held {
        let Some(&w) = worker_of.get(&k.task) else {
            continue;
        };
        let h = held.entry((w, k.other)).or_insert_with(|| Holder {
            pid: k.other,
            comm: comm(&c.comm),
            ..Holder::default()
        });
        h.held_ns += c.ns;
        h.turns += c.turns;
    }
    let mut woke: BTreeMap<(u32, u32), Waker> = BTreeMap::new();
    for (k, c) in &raw.wakers {
        let Some(&w) = worker_of.get(&k.task) else {
            continue;
        };
        let h = woke.entry((w, k.other)).or_insert_with(|| Waker {
            pid: k.other,
            comm: comm(&c.comm),
            ..Waker::default()
        });
        h.wakeups += c.ns;
    }
    for ((w, _), h) in held {
        workers
            .get_mut(&w)
            .expect("a worker of TASKS")
            .holders
            .push(h);
    }
    for ((w, _), h) in woke {
        workers
            .get_mut(&w)
            .expect("a worker of TASKS")
            .wakers
            .push(h);
    }
    for w in workers.values_mut() {
        w.holders
            .sort_by(|a, b| b.held_ns.cmp(&a.held_ns).then(a.pid.cmp(&b.pid)));
        w.holders.truncate(TOP);
        w.wakers
            .sort_by(|a, b| b.wakeups.cmp(&a.wakeups).then(a.pid.cmp(&b.pid)));
        w.wakers.truncate(TOP);
    }
    let bytes = raw.tasks.len() * (4 + size_of::<RawTask>())
        + (raw.held.len() + raw.wakers.len()) * (size_of::<RawPair>() + size_of::<RawCharged>());
    Recorded {
        workers: workers.into_values().collect(),
        lost_pairs: raw.lost[0],
        lost_threads: raw.lost[1],
        bytes_read: bytes as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(worker: u32, run_ms: u64, wait_ms: u64, max_ms: u64) -> RawTask {
        RawTask {
            run_ns: run_ms * 1_000_000,
            wait_ns: wait_ms * 1_000_000,
            waits: 3,
            max_wait_ns: max_ms * 1_000_000,
            wakeups: 2,
            migrations: 1,
            worker,
            max_wait_cpu: worker % 2,
            ..RawTask::default()
        }
    }

    fn charged(ns: u64, name: &str) -> RawCharged {
        let mut c = RawCharged {
            ns,
            turns: 1,
            ..RawCharged::default()
        };
        c.comm[..name.len()].copy_from_slice(name.as_bytes());
        c
    }

    fn pair(task: u32, other: u32) -> RawPair {
        RawPair { task, other }
    }

    #[test]
    fn the_mirrors_have_the_c_layout() {
        assert_eq!(size_of::<RawTask>(), 88);
        assert_eq!(std::mem::offset_of!(RawTask, in_ns), 64);
        assert_eq!(size_of::<RawPair>(), 8);
        assert_eq!(size_of::<RawCharged>(), 32);
    }

    /// A worker with a cloned thread: both threads' figures and holders
    /// add up under the worker, the longest holder first.
    #[test]
    fn threads_sum_into_their_worker_and_holders_merge() {
        let raw = RawMaps {
            tasks: vec![
                (10, task(10, 4, 2980, 900)),
                (11, task(10, 6, 20, 5)),
                (20, task(20, 2900, 10, 1)),
            ],
            held: vec![
                (pair(10, 20), charged(2_000_000_000, "spinner")),
                (pair(11, 20), charged(500_000_000, "spinner")),
                (pair(10, 999), charged(800_000_000, "hog")),
                (pair(77, 1), charged(5, "not watched")),
            ],
            wakers: vec![
                (pair(20, 10), charged(4, "spinner")),
                (pair(20, 0), charged(9, "swapper/0")),
            ],
            lost: [2, 0],
        };
        let r = aggregate(&raw);
        assert_eq!(r.workers.len(), 2);
        let w = r.worker(10).unwrap();
        assert_eq!(
            (w.threads, w.run_ns, w.wait_ns),
            (2, 10_000_000, 3_000_000_000)
        );
        assert_eq!((w.waits, w.wakeups, w.migrations), (6, 4, 2));
        assert_eq!((w.max_wait_ns, w.max_wait_cpu), (900_000_000, 0));
        let holders: Vec<_> = w
            .holders
            .iter()
            .map(|h| (h.pid, h.comm.as_str(), h.held_ns))
            .collect();
        assert_eq!(
            holders,
            [(20, "spinner", 2_500_000_000), (999, "hog", 800_000_000)]
        );
        let wakers: Vec<_> = r
            .worker(20)
            .unwrap()
            .wakers
            .iter()
            .map(|h| (h.pid, h.wakeups))
            .collect();
        assert_eq!(wakers, [(0, 9), (10, 4)]);
        assert_eq!(r.lost_pairs, 2);
        assert_eq!(r.bytes_read, 3 * 92 + 6 * 40);
        let (outside, ns) = w.held_by(|pid| pid == 999);
        assert_eq!((outside.len(), ns), (1, 800_000_000));
    }

    #[test]
    fn only_the_top_holders_are_kept() {
        let held = (1..=20)
            .map(|i| (pair(10, 100 + i), charged(u64::from(i), "t")))
            .collect();
        let raw = RawMaps {
            tasks: vec![(10, task(10, 1, 1, 1))],
            held,
            ..RawMaps::default()
        };
        let r = aggregate(&raw);
        let pids: Vec<u32> = r.workers[0].holders.iter().map(|h| h.pid).collect();
        assert_eq!(pids, (113..=120).rev().collect::<Vec<_>>());
    }
}
