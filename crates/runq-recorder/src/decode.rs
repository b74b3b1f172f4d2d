//! The recorder's maps as Rust sees them (mirrors of the C structs in
//! `bpf/recorder.bpf.c`) and their aggregation into one [`TaskRecord`]
//! per worker: a worker's threads summed, and the named holders of the
//! CPUs it waited on merged over those CPUs and sorted, the longest first.

use std::collections::BTreeMap;

use runq_kernel::task_record::{Holder, Recorded, TaskRecord, Waker, RUNQ_CLASS};

/// The most holders and wakers kept per worker.
pub const TOP: usize = 8;

/// Classes of task: 0 outside the run, `g + 1` group `g`.
pub use runq_kernel::task_record::CLASSES;

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
    pub(crate) idle_ns: u64,
    pub(crate) wait_cpus: u64,
    pub(crate) in_ns: u64,
    pub(crate) enq_ns: u64,
    pub(crate) worker: u32,
    pub(crate) cls: u32,
    pub(crate) max_wait_cpu: u32,
    pub(crate) wait_cpu: u32,
    pub(crate) held: [u64; CLASSES],
    pub(crate) mark: [u64; CLASSES + 1],
    pub(crate) tid: u32,
    pub(crate) held_cpu: u32,
    pub(crate) holding: RawHeld,
    pub(crate) waker: u32,
    pub(crate) mark_top: u32,
    pub(crate) woke: RawWoke,
    pub(crate) pad: u64,
}

/// A (CPU, task) key of HELD, as `struct cpu_task`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCpuTask {
    pub(crate) cpu: u32,
    pub(crate) pid: u32,
}

/// A holder's time on a CPU, as `struct held`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawHeld {
    pub(crate) ns: u64,
    pub(crate) turns: u64,
    pub(crate) cls: u32,
    pub(crate) pad: u32,
    pub(crate) comm: [u8; 16],
}

/// The last task outside the watched ones charged on a CPU, as `struct
/// other` (OTHER, one per CPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawOther {
    pub(crate) pid: u32,
    pub(crate) pad: u32,
    pub(crate) held: RawHeld,
}

/// A (watched thread, waker) key of WAKERS, as `struct pair`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawPair {
    pub(crate) task: u32,
    pub(crate) other: u32,
}

/// A waker's count, as `struct woke`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RawWoke {
    pub(crate) count: u64,
    pub(crate) comm: [u8; 16],
}

// SAFETY: plain integers and bytes without padding (sizes asserted in the
// C and in the tests below).
unsafe impl aya::Pod for RawTask {}
// SAFETY: as above.
unsafe impl aya::Pod for RawCpuTask {}
// SAFETY: as above.
unsafe impl aya::Pod for RawHeld {}
// SAFETY: as above.
unsafe impl aya::Pod for RawOther {}
// SAFETY: as above.
unsafe impl aya::Pod for RawPair {}
// SAFETY: as above.
unsafe impl aya::Pod for RawWoke {}

/// What was read from the maps, before aggregation.
#[derive(Debug, Clone, Default)]
pub struct RawMaps {
    /// TASKS: thread id and its figures (with its charges as a holder
    /// and its last waker's wakeups, not yet in HELD or WAKERS).
    pub tasks: Vec<(u32, RawTask)>,
    /// HELD: (CPU, holder) and its time there while workers waited.
    pub held: Vec<(RawCpuTask, RawHeld)>,
    /// WAKERS: (wakee thread, waker) and the wakeups.
    pub wakers: Vec<(RawPair, RawWoke)>,
    /// OTHER: each CPU and the charges of the last task outside the
    /// watched ones there, not yet in HELD.
    pub other: Vec<(u32, RawOther)>,
    /// LOST: pairs, threads, each summed over the CPUs.
    pub lost: [u64; 2],
}

/// A comm field's text (up to its NUL).
pub(crate) fn comm(raw: &[u8; 16]) -> String {
    let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..len]).into_owned()
}

/// Worker records with their threads' figures summed, by worker tid.
fn sum_threads(tasks: &[(u32, RawTask)]) -> BTreeMap<u32, (TaskRecord, u64)> {
    let mut workers: BTreeMap<u32, (TaskRecord, u64)> = BTreeMap::new();
    // runq's own threads are watched only to tell their class apart.
    for (tid, s) in tasks.iter().filter(|(_, s)| s.cls != RUNQ_CLASS) {
        let (w, cpus) = workers.entry(s.worker).or_insert_with(|| {
            let w = TaskRecord {
                worker: s.worker,
                held_by_class: vec![0; CLASSES],
                ..TaskRecord::default()
            };
            (w, 0)
        });
        if *tid == s.worker {
            w.tids.insert(0, *tid);
        } else {
            w.tids.push(*tid);
        }
        w.run_ns += s.run_ns;
        w.wait_ns += s.wait_ns;
        w.waits += s.waits;
        w.wakeups += s.wakeups;
        w.migrations += s.migrations;
        w.idle_ns += s.idle_ns;
        *cpus |= s.wait_cpus;
        for (sum, ns) in w.held_by_class.iter_mut().zip(s.held) {
            *sum += ns;
        }
        if s.max_wait_ns > w.max_wait_ns {
            w.max_wait_ns = s.max_wait_ns;
            w.max_wait_cpu = s.max_wait_cpu;
        }
    }
    workers
}

/// The holders of the CPUs in `cpus` (a bit each), merged by task.
fn holders_on(held: &[(RawCpuTask, RawHeld)], cpus: u64) -> Vec<Holder> {
    let mut by_pid: BTreeMap<u32, Holder> = BTreeMap::new();
    for (k, h) in held
        .iter()
        .filter(|(k, _)| k.cpu < 64 && cpus >> k.cpu & 1 == 1)
    {
        let e = by_pid.entry(k.pid).or_insert_with(|| Holder {
            pid: k.pid,
            comm: comm(&h.comm),
            class: h.cls,
            ..Holder::default()
        });
        e.held_ns += h.ns;
        e.turns += h.turns;
    }
    let mut out: Vec<Holder> = by_pid.into_values().collect();
    out.sort_by(|a, b| b.held_ns.cmp(&a.held_ns).then(a.pid.cmp(&b.pid)));
    out
}

/// HELD's rows with the charges still kept in the tasks' entries and in
/// the CPUs' OTHER, those first (they carry a holder's latest class).
fn all_held(raw: &RawMaps) -> Vec<(RawCpuTask, RawHeld)> {
    let own = raw.tasks.iter().map(|(tid, s)| {
        let key = RawCpuTask {
            cpu: s.held_cpu,
            pid: *tid,
        };
        (key, s.holding)
    });
    let other = raw.other.iter().map(|(cpu, o)| {
        let key = RawCpuTask {
            cpu: *cpu,
            pid: o.pid,
        };
        (key, o.held)
    });
    own.chain(other)
        .filter(|(_, h)| h.turns > 0)
        .chain(raw.held.iter().copied())
        .collect()
}

/// WAKERS' rows with each task's last waker's wakeups still in its entry.
fn all_wakers(raw: &RawMaps) -> Vec<(RawPair, RawWoke)> {
    let own = raw.tasks.iter().map(|(tid, s)| {
        let key = RawPair {
            task: *tid,
            other: s.waker,
        };
        (key, s.woke)
    });
    own.filter(|(_, w)| w.count > 0)
        .chain(raw.wakers.iter().copied())
        .collect()
}

/// One record per worker, in thread id order, with its threads' figures
/// summed, the holders of the CPUs it waited on and its top wakers.
pub fn aggregate(raw: &RawMaps) -> Recorded {
    let worker_of: BTreeMap<u32, u32> = raw.tasks.iter().map(|(t, s)| (*t, s.worker)).collect();
    let mut workers = sum_threads(&raw.tasks);
    let held = all_held(raw);
    let mut woke: BTreeMap<(u32, u32), Waker> = BTreeMap::new();
    for (k, c) in &all_wakers(raw) {
        let Some(&w) = worker_of.get(&k.task) else {
            continue;
        };
        let h = woke.entry((w, k.other)).or_insert_with(|| Waker {
            pid: k.other,
            comm: comm(&c.comm),
            ..Waker::default()
        });
        h.wakeups += c.count;
    }
    for ((w, _), h) in woke {
        if let Some((rec, _)) = workers.get_mut(&w) {
            rec.wakers.push(h);
        }
    }
    for (w, cpus) in workers.values_mut() {
        w.wait_cpus = (0..64).filter(|c| *cpus >> c & 1 == 1).collect();
        w.holders = holders_on(&held, *cpus);
        w.holders.retain(|h| !w.tids.contains(&h.pid));
        w.holders.truncate(TOP);
        w.wakers
            .sort_by(|a, b| b.wakeups.cmp(&a.wakeups).then(a.pid.cmp(&b.pid)));
        w.wakers.truncate(TOP);
    }
    let bytes = raw.tasks.len() * (4 + size_of::<RawTask>())
        + raw.held.len() * (size_of::<RawCpuTask>() + size_of::<RawHeld>())
        + raw.wakers.len() * (size_of::<RawPair>() + size_of::<RawWoke>())
        + raw.other.len() * size_of::<RawOther>();
    Recorded {
        workers: workers.into_values().map(|(w, _)| w).collect(),
        lost_pairs: raw.lost[0],
        lost_threads: raw.lost[1],
        bytes_read: bytes as u64,
        fidelity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn task(worker: u32, cls: u32, run_ms: u64, wait_ms: u64, cpus: u64) -> RawTask {
        let mut held = [0; CLASSES];
        held[0] = wait_ms / 4 * MS;
        held[1] = wait_ms / 2 * MS;
        RawTask {
            run_ns: run_ms * MS,
            wait_ns: wait_ms * MS,
            waits: 3,
            max_wait_ns: wait_ms / 2 * MS,
            wakeups: 2,
            migrations: 1,
            wait_cpus: cpus,
            worker,
            cls,
            max_wait_cpu: worker % 2,
            held,
            ..RawTask::default()
        }
    }

    fn held(cpu: u32, pid: u32, ms: u64, cls: u32, name: &str) -> (RawCpuTask, RawHeld) {
        let mut h = RawHeld {
            ns: ms * MS,
            turns: 1,
            cls,
            ..RawHeld::default()
        };
        h.comm[..name.len()].copy_from_slice(name.as_bytes());
        (RawCpuTask { cpu, pid }, h)
    }

    fn woke(task: u32, other: u32, count: u64, name: &str) -> (RawPair, RawWoke) {
        let mut w = RawWoke {
            count,
            ..RawWoke::default()
        };
        w.comm[..name.len()].copy_from_slice(name.as_bytes());
        (RawPair { task, other }, w)
    }

    #[test]
    fn the_mirrors_have_the_c_layout() {
        assert_eq!(size_of::<RawTask>(), 448);
        assert_eq!(std::mem::offset_of!(RawTask, in_ns), 64);
        assert_eq!(std::mem::offset_of!(RawTask, held), 96);
        assert_eq!(
            std::mem::offset_of!(RawTask, tid),
            96 + 8 * (2 * CLASSES + 1)
        );
        assert_eq!(size_of::<RawOther>(), 48);
        assert_eq!(size_of::<RawCpuTask>(), 8);
        assert_eq!(size_of::<RawHeld>(), 40);
        assert_eq!(size_of::<RawWoke>(), 24);
    }

    /// A worker with a cloned thread: both threads' figures add up under
    /// the worker; its holders are those of the CPUs it waited on, merged
    /// over them, without its own threads.
    #[test]
    fn threads_sum_into_their_worker_and_holders_come_from_its_cpus() {
        let raw = RawMaps {
            tasks: vec![
                (10, task(10, 1, 4, 2980, 0b10)),
                (11, task(10, 1, 6, 20, 0b01)),
                (20, task(20, 1, 2900, 8, 0b10)),
            ],
            held: vec![
                held(1, 20, 2000, 1, "spinner"),
                held(0, 20, 500, 1, "spinner"),
                held(1, 999, 800, 0, "hog"),
                held(1, 10, 7, 1, "spinner"),
                held(5, 1, 5, 0, "elsewhere"),
            ],
            wakers: vec![woke(20, 10, 4, "spinner"), woke(20, 0, 9, "swapper/0")],
            other: vec![],
            lost: [2, 0],
        };
        let r = aggregate(&raw);
        assert_eq!(r.workers.len(), 2);
        let w = r.worker(10).unwrap();
        assert_eq!(w.tids, [10, 11]);
        assert_eq!((w.run_ns, w.wait_ns), (10 * MS, 3000 * MS));
        assert_eq!((w.waits, w.wakeups, w.migrations), (6, 4, 2));
        assert_eq!((w.max_wait_ns, w.max_wait_cpu), (1490 * MS, 0));
        assert_eq!(w.wait_cpus, [0, 1]);
        assert_eq!(
            &w.held_by_class[..2],
            [745 * MS + 5 * MS, 1490 * MS + 10 * MS]
        );
        let holders: Vec<_> = w
            .holders
            .iter()
            .map(|h| (h.pid, h.comm.as_str(), h.held_ns / MS, h.class))
            .collect();
        assert_eq!(holders, [(20, "spinner", 2500, 1), (999, "hog", 800, 0)]);
        let (outside, ns) = w.held_by(|class| class == 0);
        assert_eq!((outside.len(), ns), (1, 750 * MS));
        let wakers: Vec<_> = r
            .worker(20)
            .unwrap()
            .wakers
            .iter()
            .map(|h| (h.pid, h.wakeups))
            .collect();
        assert_eq!(wakers, [(0, 9), (10, 4)]);
        assert_eq!(r.lost_pairs, 2);
        assert_eq!(
            r.bytes_read as usize,
            3 * (4 + size_of::<RawTask>()) + 5 * 48 + 2 * 32
        );
    }

    /// Charges and wakeups still kept in the tasks' own entries and in
    /// the CPUs' OTHER add up with HELD's and WAKERS' rows of the same
    /// holder and waker; the holder's class is its latest.
    #[test]
    fn charges_not_yet_in_the_hashes_are_counted_with_them() {
        let mut waiter = task(10, 1, 4, 100, 0b11);
        let (_, woke_rows) = woke(10, 30, 5, "waker");
        waiter.waker = 30;
        waiter.woke = woke_rows;
        let mut holder = task(30, 2, 50, 0, 0);
        (_, holder.holding) = held(1, 30, 7, 2, "worker");
        holder.held_cpu = 1;
        let (_, other) = held(0, 999, 40, 0, "hog");
        let raw = RawMaps {
            tasks: vec![(10, waiter), (30, holder)],
            held: vec![held(0, 30, 3, 15, "worker"), held(0, 999, 60, 0, "hog")],
            wakers: vec![woke(10, 30, 2, "waker"), woke(10, 31, 1, "other")],
            other: vec![
                (
                    0,
                    RawOther {
                        pid: 999,
                        held: other,
                        ..RawOther::default()
                    },
                ),
                (1, RawOther::default()),
            ],
            lost: [0, 0],
        };
        let r = aggregate(&raw);
        let holders: Vec<_> = r
            .worker(10)
            .unwrap()
            .holders
            .iter()
            .map(|h| (h.pid, h.comm.as_str(), h.held_ns / MS, h.turns, h.class))
            .collect();
        assert_eq!(holders, [(999, "hog", 100, 2, 0), (30, "worker", 10, 2, 2)]);
        let wakers: Vec<_> = r
            .worker(10)
            .unwrap()
            .wakers
            .iter()
            .map(|w| (w.pid, w.wakeups))
            .collect();
        assert_eq!(wakers, [(30, 7), (31, 1)]);
    }

    #[test]
    fn only_the_top_holders_are_kept() {
        let held = (1..=20)
            .map(|i| held(0, 100 + i, u64::from(i), 0, "t"))
            .collect();
        let raw = RawMaps {
            tasks: vec![(10, task(10, 1, 1, 1, 1))],
            held,
            ..RawMaps::default()
        };
        let r = aggregate(&raw);
        let pids: Vec<u32> = r.workers[0].holders.iter().map(|h| h.pid).collect();
        assert_eq!(pids, (113..=120).rev().collect::<Vec<_>>());
    }
}
