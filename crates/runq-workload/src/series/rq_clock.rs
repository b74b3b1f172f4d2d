//! The stuck run-queue clock check, on the host monitor's `sched/debug`
//! samples: a CPU with runnable tasks takes the scheduler tick, which
//! moves its run queue's clock (`.clock`) on every few ms, so a busy CPU
//! whose clock stood still from one sample to the next (~0.5 s apart) was
//! not scheduling: an idle CPU with work queued for it that nothing
//! dispatched, or a CPU stuck with interrupts off. A stall is the time
//! between the first and last samples that saw the CPU busy at the same
//! clock.

use crate::checks::detail::SchedExtDetail;
use std::collections::BTreeMap;

use runq_kernel::sched_debug::CpuRq;
use serde::{Deserialize, Serialize};

use crate::checks::Detail;

/// The longest stall of one CPU's run-queue clock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RqClockStall {
    /// The CPU.
    pub cpu: u32,
    /// Where its clock stood, ns.
    pub clock_ns: u64,
    /// The first sample that saw it busy at that clock, ns from the start.
    pub from_ns: u64,
    /// The last such sample, ns from the start.
    pub to_ns: u64,
    /// Its runnable tasks at the last sample (the monitor not counted).
    pub nr_running: u32,
    /// The task on it at the last sample (0: its idle task).
    pub curr_pid: Option<i64>,
}

impl RqClockStall {
    /// How long the clock stood still while the CPU was busy, ns.
    pub fn span_ns(&self) -> u64 {
        self.to_ns - self.from_ns
    }
}

/// The run-queue clocks over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RqClocks {
    /// Samples that gave a clock for each CPU.
    pub samples: u64,
    /// The longest stall, when a busy CPU's clock ever stood still from
    /// one sample to the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_stall: Option<RqClockStall>,
}

/// Follows each CPU's clock from sample to sample.
#[derive(Debug, Default)]
pub(crate) struct StallTracker {
    open: BTreeMap<u32, RqClockStall>,
    clocks: RqClocks,
}

impl StallTracker {
    /// Takes one sample (`rqs` with the monitor's own thread already left
    /// out of `nr_running`); `false` when the kernel gives no clock.
    pub(crate) fn observe(&mut self, at_ns: u64, rqs: &[CpuRq]) -> bool {
        if rqs.is_empty() || rqs.iter().any(|r| r.clock_ns.is_none()) {
            return false;
        }
        self.clocks.samples += 1;
        for r in rqs {
            let clock_ns = r.clock_ns.unwrap_or_default();
            if r.nr_running == 0 {
                self.open.remove(&r.cpu);
                continue;
            }
            let stall = self.open.entry(r.cpu).or_insert_with(|| RqClockStall {
                cpu: r.cpu,
                clock_ns,
                from_ns: at_ns,
                ..RqClockStall::default()
            });
            if stall.clock_ns != clock_ns {
                stall.clock_ns = clock_ns;
                stall.from_ns = at_ns;
            }
            stall.to_ns = at_ns;
            stall.nr_running = r.nr_running;
            stall.curr_pid = r.curr_pid;
            let longest = self.clocks.longest_stall.as_ref();
            if stall.span_ns() > 0 && longest.is_none_or(|l| stall.span_ns() > l.span_ns()) {
                self.clocks.longest_stall = Some(stall.clone());
            }
        }
        true
    }

    /// The clocks so far.
    pub(crate) fn clocks(&self) -> &RqClocks {
        &self.clocks
    }
}

/// `max_rq_clock_stall_ms`'s figure and sentence, or why there is none.
pub(crate) fn measure(
    clocks: Option<&RqClocks>,
    why_none: Option<&str>,
) -> Result<(f64, Detail), String> {
    let Some(c) = clocks else {
        return Err(why_none.map_or_else(
            || "the host monitor took no sample of sched/debug".into(),
            |w| format!("no run-queue clocks: {w}"),
        ));
    };
    if c.samples < 2 {
        return Err(format!(
            "the host monitor took {} sample(s) of the run-queue clocks; a stall needs two",
            c.samples
        ));
    }
    let Some(s) = &c.longest_stall else {
        return Ok((
            0.0,
            Detail::SchedExt(SchedExtDetail::RqClockMoved { samples: c.samples }),
        ));
    };
    Ok((
        s.span_ns() as f64 / 1e6,
        Detail::SchedExt(SchedExtDetail::RqClockStood {
            cpu: s.cpu,
            clock_ns: s.clock_ns,
            from_ns: s.from_ns,
            to_ns: s.to_ns,
            nr_running: s.nr_running,
            curr_pid: s.curr_pid,
            samples: c.samples,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_kernel::sched_debug::parse_rqs;

    fn rq(cpu: u32, nr_running: u32, curr: i64, clock_ns: u64) -> CpuRq {
        CpuRq {
            cpu,
            nr_running,
            curr_pid: Some(curr),
            clock_ns: Some(clock_ns),
        }
    }

    /// Two reads of a real 6.12 guest, 0.5 s apart under four hogs: every
    /// clock moved, so no stall.
    #[test]
    fn a_6_12_guest_under_load_has_moving_clocks() {
        let fixture = |n| {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../runq-kernel/tests/fixtures");
            let text = std::fs::read_to_string(format!("{dir}/sched_debug/6.12-simple-busy-{n}"));
            parse_rqs(&text.expect("fixture"))
        };
        let mut t = StallTracker::default();
        assert!(t.observe(0, &fixture(1)));
        assert!(t.observe(500_000_000, &fixture(2)));
        assert_eq!(t.clocks().longest_stall, None);
        let (ms, detail) = measure(Some(t.clocks()), None).unwrap();
        assert_eq!(ms, 0.0);
        assert_eq!(
            detail,
            Detail::SchedExt(SchedExtDetail::RqClockMoved { samples: 2 })
        );
    }

    #[test]
    fn a_busy_cpu_whose_clock_stands_still_is_a_stall_an_idle_one_is_not() {
        let mut t = StallTracker::default();
        let half = 500_000_000;
        t.observe(0, &[rq(0, 2, 10, 100), rq(1, 0, 0, 7)]);
        t.observe(half, &[rq(0, 2, 10, 100), rq(1, 0, 0, 7)]);
        t.observe(2 * half, &[rq(0, 1, 0, 100), rq(1, 0, 0, 7)]);
        t.observe(3 * half, &[rq(0, 1, 0, 900), rq(1, 1, 0, 7)]);
        t.observe(4 * half, &[rq(0, 1, 0, 900), rq(1, 1, 0, 7)]);
        let s = t.clocks().longest_stall.clone().unwrap();
        assert_eq!(
            (s.cpu, s.from_ns, s.to_ns, s.curr_pid),
            (0, 0, 2 * half, Some(0))
        );
        let (ms, detail) = measure(Some(t.clocks()), None).unwrap();
        assert_eq!(ms, 1000.0);
        assert_eq!(
            detail,
            Detail::SchedExt(SchedExtDetail::RqClockStood {
                cpu: 0,
                clock_ns: 100,
                from_ns: 0,
                to_ns: 2 * half,
                nr_running: 1,
                curr_pid: Some(0),
                samples: 5,
            })
        );
    }

    #[test]
    fn a_cpu_idle_between_samples_starts_over() {
        let mut t = StallTracker::default();
        t.observe(0, &[rq(0, 1, 5, 100)]);
        t.observe(1, &[rq(0, 0, 0, 100)]);
        t.observe(2, &[rq(0, 1, 5, 100)]);
        assert_eq!(t.clocks().longest_stall, None);
    }

    #[test]
    fn without_clocks_or_samples_the_check_says_why() {
        let mut t = StallTracker::default();
        let no_clock = CpuRq {
            clock_ns: None,
            ..rq(0, 1, 1, 0)
        };
        assert!(!t.observe(0, &[no_clock]));
        assert!(!t.observe(0, &[]));
        let one = RqClocks {
            samples: 1,
            longest_stall: None,
        };
        assert!(measure(Some(&one), None)
            .unwrap_err()
            .contains("a stall needs two"));
        let why = measure(None, Some("sched/debug has no .clock")).unwrap_err();
        assert_eq!(why, "no run-queue clocks: sched/debug has no .clock");
        assert!(measure(None, None).unwrap_err().contains("no sample"));
    }
}
