//! What the per-task recorder saw of a run's workers: per worker, its time
//! on a CPU and runnable without one, who held its CPU while it waited,
//! who woke it, and its migrations. runq-recorder's BPF programs produce
//! it; runq-workload's checks explain a FAIL with it. This crate, below
//! both, holds the one definition.

use serde::{Deserialize, Serialize};

/// Classes of task the recorder tells apart: 0 is every task outside the
/// run, `g + 1` group `g`, [`LAST_CLASS`] every group from `LAST_CLASS - 1`
/// on (a run of more groups shares it), and [`RUNQ_CLASS`] runq's own
/// threads and what they start besides the workers (a scheduler).
pub const CLASSES: usize = 16;

/// The class that holds group `LAST_CLASS - 1` and every later one.
pub const LAST_CLASS: u32 = CLASSES as u32 - 2;

/// The class of runq's own threads (its collector, its host monitor) and
/// of what they start besides the workers: the run's, but no worker.
pub const RUNQ_CLASS: u32 = CLASSES as u32 - 1;

/// The class of a worker of group `group`.
pub fn class_of_group(group: usize) -> u32 {
    u32::try_from(group.saturating_add(1)).map_or(LAST_CLASS, |k| k.min(LAST_CLASS))
}

/// The groups class `k` stands for in a run of `groups` groups: none for
/// 0 (outside the run) and [`RUNQ_CLASS`], one for most, every later
/// group for [`LAST_CLASS`].
pub fn groups_of_class(k: u32, groups: usize) -> std::ops::Range<usize> {
    let first = (k as usize).saturating_sub(1);
    let end = match k {
        0 | RUNQ_CLASS => 0,
        LAST_CLASS => groups,
        _ => k as usize,
    };
    first.min(groups)..end.min(groups).max(first.min(groups))
}

/// A task that held a CPU a worker waited on, while run workers waited
/// there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Its thread id.
    pub pid: u32,
    /// Its name (comm) when it got the CPU.
    pub comm: String,
    /// How long it held those CPUs while a worker of the run waited
    /// there, ns.
    pub held_ns: u64,
    /// How many of its turns did.
    pub turns: u64,
    /// Its class: 0 outside the run, `g + 1` a worker of group `g` (see
    /// [`groups_of_class`]), [`RUNQ_CLASS`] runq's own.
    pub class: u32,
}

/// A task that woke a worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waker {
    /// Its thread id (0: an interrupt on an idle CPU).
    pub pid: u32,
    /// Its name (comm).
    pub comm: String,
    /// How many wakeups of the worker it issued.
    pub wakeups: u64,
}

/// One worker (its own thread and every thread it cloned), as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The worker's thread id (its pid for a process worker).
    pub worker: u32,
    /// Its threads recorded, its own first (one for a worker that cloned
    /// none).
    pub tids: Vec<u32>,
    /// Time on a CPU, ns.
    pub run_ns: u64,
    /// Time runnable without a CPU (from a wakeup or a preemption to the
    /// next switch-in), ns.
    pub wait_ns: u64,
    /// Waits that ended.
    pub waits: u64,
    /// The longest wait, ns.
    pub max_wait_ns: u64,
    /// The CPU the longest wait ended on.
    pub max_wait_cpu: u32,
    /// Wakeups of it.
    pub wakeups: u64,
    /// Migrations between CPUs.
    pub migrations: u64,
    /// Waiting time its queue's CPU ran the idle task, ns.
    pub idle_ns: u64,
    /// The CPUs it waited on (those below 64).
    pub wait_cpus: Vec<u32>,
    /// How long each class of task held its CPU while it waited, ns:
    /// index 0 tasks outside the run, `g + 1` the workers of group `g`
    /// ([`LAST_CLASS`] holds every group from it on), [`RUNQ_CLASS`]
    /// runq's own threads.
    pub held_by_class: Vec<u64>,
    /// The tasks that held the CPUs it waited on while workers of the run
    /// waited there, the longest first.
    pub holders: Vec<Holder>,
    /// Who woke it, the most first.
    pub wakers: Vec<Waker>,
    /// Under sampled fidelity, what its holders rest on (its run and wait
    /// are then schedstat's, and each holder's time is its share of the
    /// samples of the CPUs the worker used, applied to that wait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SampledBasis>,
}

/// What a worker's sampled holders rest on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampledBasis {
    /// Samples of other tasks on its CPUs (the shares' denominator).
    pub samples: u64,
    /// The CPUs it used: those it waited on before the switch and those
    /// the samples found it on, within those it was allowed.
    pub cpus: Vec<u32>,
    /// The time from the worker's last sample on a CPU (or, never sampled,
    /// the wait it was in at the switch) to the reading, ns: for a worker
    /// killed runnable at the deadline, the wait schedstat left out (it
    /// counts a wait once it ends); runq-workload zeroes it otherwise.
    #[serde(default)]
    pub unended_wait_ns: u64,
}

impl SampledBasis {
    /// The 95% half-width of a share `p` estimated from these samples.
    pub fn margin(&self, p: f64) -> f64 {
        let n = self.samples.max(1) as f64;
        1.96 * (p * (1.0 - p) / n).sqrt()
    }
}

/// How closely the recorder followed the run, and what it cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FidelityMode {
    /// Every scheduler event of the watched tasks, in the kernel.
    #[default]
    Exact,
    /// The per-event programs detached; each CPU sampled (the task
    /// holding it), each worker's run and wait from schedstat.
    Sampled,
}

/// The recorder's fidelity over a run and its own cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// Exact or sampled (for the rest of the run, after the switch).
    pub mode: FidelityMode,
    /// Why, with the figures, in one clause.
    pub reason: String,
    /// The budget it was held to, in CPUs (0.01: 1% of one CPU).
    pub budget_cpus: f64,
    /// The exact programs' cost measured over the probe window, in CPUs;
    /// `None` when it was not measured (fidelity forced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_cpus: Option<f64>,
    /// Events per second the exact programs handled over that window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_per_s: Option<f64>,
    /// The programs' run time over the whole run, in CPUs (read from the
    /// programs, or projected from the window where stats were off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_cpus: Option<f64>,
    /// The sampling frequency per CPU, Hz (sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_hz: Option<u64>,
    /// When the switch to sampling came, ms after the workers' release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switched_at_ms: Option<u64>,
}

impl TaskRecord {
    /// Scales a sampled record to the worker's own `run_ns` and `wait_ns`
    /// (schedstat's): each holder's and class's time (sample time) becomes
    /// its share of the samples of other tasks, applied to the wait.
    pub fn scale_to_wait(&mut self, run_ns: u64, wait_ns: u64) {
        let wait_ns = wait_ns + self.sampled.as_ref().map_or(0, |b| b.unended_wait_ns);
        self.run_ns = run_ns;
        self.wait_ns = wait_ns;
        let total: u64 = self.held_by_class.iter().sum();
        if total == 0 {
            return;
        }
        let share = |ns: u64| (ns as u128 * wait_ns as u128 / total as u128) as u64;
        for h in &mut self.holders {
            h.held_ns = share(h.held_ns);
        }
        for c in &mut self.held_by_class {
            *c = share(*c);
        }
    }

    /// The time the classes with `pred` true held its CPU while it
    /// waited, ns, and the holders of those classes.
    pub fn held_by(&self, pred: impl Fn(u32) -> bool) -> (Vec<&Holder>, u64) {
        let held: Vec<&Holder> = self.holders.iter().filter(|h| pred(h.class)).collect();
        let ns = (0u32..)
            .zip(&self.held_by_class)
            .filter(|(k, _)| pred(*k))
            .map(|(_, ns)| ns)
            .sum();
        (held, ns)
    }
}

/// Everything the recorder saw over one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// One record per worker it watched, by worker thread id.
    pub workers: Vec<TaskRecord>,
    /// Holder or waker pairs its tables had no room for.
    pub lost_pairs: u64,
    /// Threads of workers its table had no room for.
    pub lost_threads: u64,
    /// Bytes read from its maps.
    pub bytes_read: u64,
    /// Its fidelity and cost (absent from recorders that do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<Fidelity>,
}

impl Recorded {
    /// The record of the worker with thread id `tid`.
    pub fn worker(&self, tid: u32) -> Option<&TaskRecord> {
        self.workers.iter().find(|w| w.worker == tid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_class_stands_for_every_later_group() {
        assert_eq!(groups_of_class(0, 20), 0..0);
        assert_eq!(groups_of_class(1, 20), 0..1);
        assert_eq!(groups_of_class(13, 20), 12..13);
        assert_eq!(groups_of_class(LAST_CLASS, 20), 13..20);
        assert_eq!(groups_of_class(LAST_CLASS, 14), 13..14);
        assert_eq!(groups_of_class(3, 2), 2..2, "a class past the run's groups");
        assert!(groups_of_class(RUNQ_CLASS, 20).is_empty(), "runq's own");
    }

    #[test]
    fn groups_past_the_last_class_share_it() {
        assert_eq!(class_of_group(0), 1);
        assert_eq!(class_of_group(12), 13);
        assert_eq!(class_of_group(13), LAST_CLASS);
        assert_eq!(class_of_group(40), LAST_CLASS);
        assert_ne!(class_of_group(usize::MAX), RUNQ_CLASS);
    }
}
