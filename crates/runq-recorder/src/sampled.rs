//! Sampled fidelity: who held each worker's CPUs, from the samples of
//! `recorder_sample` (the task on a CPU at each tick of its cpu-clock
//! event) instead of the per-event programs. A worker's CPUs are those it
//! waited on before the switch and those the samples found it on; every
//! other task sampled there is a holder, by its count of samples. The
//! times are sample time (count × period): runq-workload scales them to
//! the worker's wait from schedstat (`TaskRecord::scale_to_wait`), so
//! each holder's time is its share of that wait.

use std::collections::{BTreeMap, BTreeSet};

use runq_kernel::task_record::{Holder, Recorded, SampledBasis, TaskRecord};

use crate::decode::{comm, RawCpuTask, RawHeld, RawTask, TOP};

/// What the sampled attribution works from besides the samples.
#[derive(Debug, Default)]
pub struct SampleContext<'a> {
    /// The watched threads as the exact programs left them at the switch.
    pub tasks: &'a [(u32, RawTask)],
    /// Each worker's allowed CPUs at the switch (absent: any).
    pub allowed: BTreeMap<u32, Vec<u32>>,
    /// CLOCK_MONOTONIC now, ns (the programs' clock).
    pub now_ns: u64,
    /// CLOCK_MONOTONIC when the per-event programs were detached, ns: a
    /// worker they left on a CPU was seen there then.
    pub switched_ns: u64,
    /// The sampling period, ns.
    pub period_ns: u64,
}

/// Replaces each worker's holders, class times and idle time by what the
/// `samples` show on its CPUs.
pub fn attribute(rec: &mut Recorded, samples: &[(RawCpuTask, RawHeld)], ctx: &SampleContext<'_>) {
    for w in &mut rec.workers {
        attribute_one(w, samples, ctx);
        if let Some(b) = &mut w.sampled {
            b.unended_wait_ns = unended_wait(w.worker, samples, ctx);
        }
    }
}

/// The time since worker `worker`'s own thread was last seen on a CPU:
/// its last sample (a sample's `ns` is when it was taken) or the switch,
/// when the exact programs left it on a CPU (preempted right after, it
/// may never be sampled again), whichever is later; never seen on one
/// since, the wait it was in at the switch; 0 without either.
fn unended_wait(worker: u32, samples: &[(RawCpuTask, RawHeld)], ctx: &SampleContext<'_>) -> u64 {
    let last_sample = samples
        .iter()
        .filter(|(k, _)| k.pid == worker)
        .map(|(_, s)| s.ns)
        .max();
    let at_switch = ctx.tasks.iter().find(|(tid, _)| *tid == worker);
    let on_cpu_at_switch = at_switch
        .filter(|(_, s)| s.in_ns != 0 && ctx.switched_ns != 0)
        .map(|_| ctx.switched_ns);
    let waiting_since = at_switch
        .filter(|(_, s)| s.enq_ns != 0 && s.in_ns == 0)
        .map(|(_, s)| s.enq_ns);
    last_sample
        .max(on_cpu_at_switch)
        .or(waiting_since)
        .map_or(0, |t| ctx.now_ns.saturating_sub(t))
}

fn attribute_one(w: &mut TaskRecord, samples: &[(RawCpuTask, RawHeld)], ctx: &SampleContext<'_>) {
    let period_ns = ctx.period_ns;
    let own = |pid: u32| w.tids.contains(&pid) || pid == w.worker;
    let mut cpus: BTreeSet<u32> = w.wait_cpus.iter().copied().collect();
    cpus.extend(
        samples
            .iter()
            .filter(|(k, _)| own(k.pid))
            .map(|(k, _)| k.cpu),
    );
    if let Some(allowed) = ctx.allowed.get(&w.worker) {
        cpus.retain(|c| allowed.contains(c));
        // Never seen waiting or on a CPU (the exact programs left it
        // running, and it was preempted before a sample found it): the
        // CPUs it was allowed are those it waited on.
        if cpus.is_empty() {
            cpus.extend(allowed);
        }
    }
    let mut by_pid: BTreeMap<u32, Holder> = BTreeMap::new();
    let mut by_class = vec![0u64; w.held_by_class.len().max(1)];
    let mut idle = 0u64;
    let mut total = 0u64;
    for (k, s) in samples.iter().filter(|(k, _)| cpus.contains(&k.cpu)) {
        if own(k.pid) {
            continue;
        }
        if k.pid == 0 {
            idle += s.turns;
            continue;
        }
        total += s.turns;
        let cls = (s.cls as usize).min(by_class.len() - 1);
        by_class[cls] += s.turns * period_ns;
        let h = by_pid.entry(k.pid).or_insert_with(|| Holder {
            pid: k.pid,
            comm: comm(&s.comm),
            class: s.cls,
            ..Holder::default()
        });
        h.turns += s.turns;
        h.held_ns += s.turns * period_ns;
    }
    // A holder under 0.5% of the samples is noise at this fidelity (a
    // kworker's single sample), not a cause: left out of the names, kept
    // in its class's time.
    let mut holders: Vec<Holder> = by_pid
        .into_values()
        .filter(|h| h.turns * 200 >= total)
        .collect();
    holders.sort_by(|a, b| b.turns.cmp(&a.turns).then(a.pid.cmp(&b.pid)));
    holders.truncate(TOP);
    w.holders = holders;
    w.held_by_class = by_class;
    w.idle_ns = idle * period_ns;
    w.sampled = Some(SampledBasis {
        samples: total,
        cpus: cpus.into_iter().collect(),
        unended_wait_ns: 0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpu: u32, pid: u32, turns: u64, cls: u32, name: &str) -> (RawCpuTask, RawHeld) {
        let mut comm = [0u8; 16];
        comm[..name.len()].copy_from_slice(name.as_bytes());
        (
            RawCpuTask { cpu, pid },
            RawHeld {
                turns,
                cls,
                comm,
                ..RawHeld::default()
            },
        )
    }

    /// A worker pinned to CPU 0 beside a hog: the hog is named by its
    /// share of CPU 0's samples, a task on CPU 1 is not, the idle task is
    /// idle time, and the shares become the worker's wait.
    #[test]
    fn the_holder_of_a_workers_cpu_is_named_by_its_share_of_the_samples() {
        let mut w = TaskRecord {
            worker: 10,
            tids: vec![10],
            held_by_class: vec![0; 16],
            ..TaskRecord::default()
        };
        let samples = [
            sample(0, 10, 20, 1, "runq"),
            sample(0, 77, 900, 0, "hog"),
            sample(0, 5, 100, 0, "kworker/0:1"),
            sample(0, 0, 30, 0, "swapper/0"),
            sample(1, 88, 1000, 0, "elsewhere"),
        ];
        let mut rec = Recorded {
            workers: vec![w.clone()],
            ..Recorded::default()
        };
        let ctx = SampleContext {
            period_ns: 1_000_000,
            ..SampleContext::default()
        };
        attribute(&mut rec, &samples, &ctx);
        w = rec.workers.remove(0);
        assert_eq!(w.holders[0].comm, "hog");
        assert_eq!(w.holders.len(), 2, "hog and kworker; {:?}", w.holders);
        assert_eq!(w.holders[0].turns, 900);
        assert!(w.holders.iter().all(|h| h.pid != 88 && h.pid != 10));
        assert_eq!(w.idle_ns, 30_000_000);
        let basis = w.sampled.clone().unwrap();
        assert_eq!((basis.samples, basis.cpus.clone()), (1000, vec![0]));
        assert!(basis.margin(0.9) < 0.02, "{}", basis.margin(0.9));
        w.scale_to_wait(20_000_000, 2_000_000_000);
        assert_eq!(w.holders[0].held_ns, 1_800_000_000);
        assert_eq!(w.held_by_class[0], 2_000_000_000);
        assert_eq!((w.run_ns, w.wait_ns), (20_000_000, 2_000_000_000));
    }

    /// A worker that never ran after the switch keeps the CPUs it waited
    /// on before it.
    #[test]
    fn a_starved_worker_keeps_the_cpus_it_waited_on() {
        let w = TaskRecord {
            worker: 10,
            tids: vec![10],
            wait_cpus: vec![1],
            held_by_class: vec![0; 16],
            ..TaskRecord::default()
        };
        let mut rec = Recorded {
            workers: vec![w],
            ..Recorded::default()
        };
        let waiting = RawTask {
            worker: 10,
            enq_ns: 1_000,
            ..RawTask::default()
        };
        let tasks = [(10, waiting)];
        let ctx = SampleContext {
            tasks: &tasks,
            allowed: [(10, vec![1])].into(),
            now_ns: 5_000_001_000,
            period_ns: 1_000_000,
            ..SampleContext::default()
        };
        let mut seen = sample(1, 10, 2, 1, "runq");
        seen.1.ns = 4_000_001_000;
        let samples = [
            sample(1, 42, 50, 0, "hog"),
            sample(0, 43, 50, 0, "elsewhere"),
            seen,
        ];
        attribute(&mut rec, &samples, &ctx);
        let w = &mut rec.workers[0];
        assert_eq!(w.holders.len(), 1, "{w:?}");
        assert_eq!(w.holders[0].pid, 42);
        // Last seen on a CPU 1 s before the reading.
        assert_eq!(w.sampled.as_ref().unwrap().unended_wait_ns, 1_000_000_000);
        w.scale_to_wait(1_000_000, 97_000_000);
        assert_eq!(
            w.wait_ns, 1_097_000_000,
            "schedstat's ended waits and the unended one"
        );
    }

    /// A worker the exact programs left on its CPU, preempted before any
    /// sample found it: it waited on the CPUs it was allowed, from the
    /// switch on.
    #[test]
    fn a_worker_preempted_right_after_the_switch_waited_from_it() {
        let w = TaskRecord {
            worker: 10,
            tids: vec![10],
            held_by_class: vec![0; 16],
            ..TaskRecord::default()
        };
        let mut rec = Recorded {
            workers: vec![w],
            ..Recorded::default()
        };
        let running = RawTask {
            worker: 10,
            in_ns: 500,
            ..RawTask::default()
        };
        let tasks = [(10, running)];
        let ctx = SampleContext {
            tasks: &tasks,
            allowed: [(10, vec![1])].into(),
            now_ns: 3_000_000_000,
            switched_ns: 400_000_000,
            period_ns: 10_000_000,
        };
        let samples = [sample(1, 42, 250, 0, "hog"), sample(0, 43, 250, 0, "other")];
        attribute(&mut rec, &samples, &ctx);
        let w = &rec.workers[0];
        let basis = w.sampled.as_ref().unwrap();
        assert_eq!(basis.cpus, vec![1]);
        assert_eq!(basis.unended_wait_ns, 2_600_000_000);
        assert_eq!(w.holders.len(), 1, "{w:?}");
        assert_eq!(w.holders[0].pid, 42);
    }
}
