//! The dispatch-queue depth check, on sched_ext's debug dumps taken by
//! the host monitor ([`runq_kernel::sched_ext_dump`]): the deepest local
//! DSQ (tasks handed to one CPU and not yet run there) is judged; the
//! deepest other DSQ, the tasks the BPF scheduler held on no DSQ, and the
//! task that had waited longest are the evidence beside it.

use crate::checks::detail::SchedExtDetail;
use runq_kernel::sched_ext_dump::{ScxDump, DSQ_LOCAL};
use serde::{Deserialize, Serialize};

pub use super::dsq_entries::{DsqDepth, DsqWaiter};

use crate::checks::Detail;

/// sched_ext's dispatch queues over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsqSeries {
    /// Dumps taken while a BPF scheduler was enabled.
    pub dumps: u64,
    /// The deepest local DSQ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_max: Option<DsqDepth>,
    /// The deepest other DSQ (global or the scheduler's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_max: Option<DsqDepth>,
    /// The most waiting tasks the BPF scheduler held on no DSQ at once.
    pub held_max: u32,
    /// The longest-waiting task (not running) of any dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_wait: Option<DsqWaiter>,
}

impl DsqSeries {
    /// Adds one dump, taken at `at_ns`.
    pub(crate) fn add(&mut self, at_ns: u64, dump: &ScxDump) {
        self.dumps += 1;
        for ((cpu, dsq), tasks) in dump.depths() {
            let slot = if dsq == DSQ_LOCAL {
                &mut self.local_max
            } else {
                &mut self.other_max
            };
            if slot.as_ref().is_none_or(|m| tasks > m.tasks) {
                *slot = Some(DsqDepth {
                    dsq,
                    cpu,
                    tasks,
                    at_ns,
                });
            }
        }
        self.held_max = self.held_max.max(dump.held().count() as u32);
        let waiting = dump.tasks.iter().filter(|t| !t.running);
        if let Some(t) = waiting.max_by_key(|t| t.runnable_ms) {
            if self
                .longest_wait
                .as_ref()
                .is_none_or(|w| t.runnable_ms > w.runnable_ms)
            {
                self.longest_wait = Some(DsqWaiter {
                    pid: t.pid,
                    comm: t.comm.clone(),
                    cpu: t.cpu,
                    runnable_ms: t.runnable_ms,
                    dsq: t.dsq,
                    at_ns,
                });
            }
        }
    }
}

/// `max_scx_local_dsq_depth`'s figure and what it was measured from, or
/// why there is none.
pub(crate) fn measure(
    dsq: Option<&DsqSeries>,
    why_none: Option<&str>,
) -> Result<(f64, Detail), String> {
    let Some(d) = dsq.filter(|d| d.dumps > 0) else {
        return Err(why_none.map_or_else(
            || "no sched_ext dump was taken while a BPF scheduler was enabled".into(),
            |w| format!("no sched_ext dump: {w}"),
        ));
    };
    let depth = d.local_max.as_ref().map_or(0, |m| m.tasks);
    let detail = Detail::SchedExt(SchedExtDetail::DsqDepths {
        dumps: d.dumps,
        local: d.local_max.clone(),
        other: d.other_max.clone(),
        held_max: d.held_max,
        longest_wait: d.longest_wait.clone(),
    });
    Ok((f64::from(depth), detail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_kernel::sched_ext_dump::{parse_dump, DumpTask, DSQ_GLOBAL};

    fn task(cpu: u32, pid: i64, running: bool, ms: u64, dsq: Option<u64>) -> DumpTask {
        DumpTask {
            cpu,
            pid,
            comm: format!("t{pid}"),
            running,
            runnable_ms: ms,
            dsq,
        }
    }

    /// A real 6.12 dump under scx_simple: one hog waits on its shared DSQ
    /// (id 0), none on a local DSQ.
    #[test]
    fn a_6_12_dump_under_scx_simple() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../runq-kernel/tests/fixtures");
        let text = std::fs::read_to_string(format!("{dir}/sched_ext_dump/6.12-simple-sysrq-d"));
        let dump = parse_dump(&text.expect("fixture")).expect("a dump");
        let mut s = DsqSeries::default();
        s.add(1_000_000_000, &dump);
        let (depth, detail) = measure(Some(&s), None).unwrap();
        assert_eq!(depth, 0.0);
        let Detail::SchedExt(SchedExtDetail::DsqDepths {
            dumps: 1,
            local: None,
            other: Some(other),
            held_max: 0,
            longest_wait: Some(w),
        }) = detail
        else {
            panic!("{detail:?}");
        };
        assert_eq!((other.dsq, other.tasks, other.at_ns), (0, 1, 1_000_000_000));
        assert_eq!(
            (w.pid, w.comm.as_str(), w.runnable_ms, w.cpu, w.dsq),
            (102, "yes", 7, 3, Some(0))
        );
    }

    #[test]
    fn the_deepest_local_dsq_and_the_longest_held_task_are_named() {
        let mut s = DsqSeries::default();
        let first = ScxDump {
            nr_run: vec![(0, 3)],
            tasks: vec![
                task(0, 1, true, 1, None),
                task(0, 2, false, 4, Some(DSQ_LOCAL)),
                task(0, 3, false, 9, Some(DSQ_LOCAL)),
            ],
        };
        let second = ScxDump {
            nr_run: vec![(1, 2)],
            tasks: vec![
                task(1, 4, false, 5030, None),
                task(1, 5, false, 2, Some(DSQ_GLOBAL)),
            ],
        };
        s.add(500_000_000, &first);
        s.add(2_000_000_000, &second);
        assert_eq!(s.dumps, 2);
        let (depth, detail) = measure(Some(&s), None).unwrap();
        assert_eq!(depth, 2.0);
        let Detail::SchedExt(SchedExtDetail::DsqDepths {
            dumps: 2,
            local: Some(local),
            other: Some(other),
            held_max: 1,
            longest_wait: Some(w),
        }) = detail
        else {
            panic!("{detail:?}");
        };
        assert_eq!(
            (local.dsq, local.cpu, local.tasks, local.at_ns),
            (DSQ_LOCAL, Some(0), 2, 500_000_000)
        );
        assert_eq!(
            (other.dsq, other.tasks, other.at_ns),
            (DSQ_GLOBAL, 1, 2_000_000_000)
        );
        assert_eq!(
            (w.pid, w.runnable_ms, w.cpu, w.dsq, w.at_ns),
            (4, 5030, 1, None, 2_000_000_000)
        );
    }

    #[test]
    fn without_a_dump_the_check_says_why() {
        let why = measure(None, Some("this kernel has no sched_ext_dump trace event")).unwrap_err();
        assert!(
            why.starts_with("no sched_ext dump: this kernel has no"),
            "{why}"
        );
        let none = DsqSeries::default();
        assert!(measure(Some(&none), None)
            .unwrap_err()
            .contains("no sched_ext dump was taken"));
    }
}
