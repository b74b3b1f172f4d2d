//! Detection: turns symbolized events into findings in three categories.
//!
//! 1. Blocking call: a worker slept longer than the threshold with task
//!    code on its stack (Tokio's idle parking and the blocking pool are
//!    not blockers).
//! 2. CPU-bound poll: consecutive cpu-clock samples of one worker in the
//!    same task frame, without a switch in between (the kernel counts every
//!    switch, however short), spanning at least the threshold.
//! 3. Run-queue delay: a runnable worker waited for a CPU longer than the
//!    threshold; its stack is the victim's, and it is labelled so.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::classify::{class_of, culprit, place, user_frames, Place};
use crate::event::{Kind, RawEvent};
use crate::symbols::Frame;

/// A finding's category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// A blocking call in task code.
    BlockingCall,
    /// A poll that kept the worker busy without yielding.
    CpuBoundPoll,
    /// The worker waited for a CPU (it is the victim, not the culprit).
    RunQueueDelay,
}

impl Category {
    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Category::BlockingCall => "blocking call",
            Category::CpuBoundPoll => "cpu-bound poll",
            Category::RunQueueDelay => "run-queue delay (victim)",
        }
    }
}

/// One detected interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    /// What kind of blocker.
    pub category: Category,
    /// The worker.
    pub tid: u32,
    /// Start, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// Length, ns.
    pub duration_ns: u64,
    /// The whole stack, innermost first.
    pub stack: Vec<Frame>,
}

impl Finding {
    /// The culprit frame (innermost program frame), if any.
    pub fn culprit(&self) -> Option<&Frame> {
        culprit(&self.stack)
    }
}

/// Counters of what was seen and set aside.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Tally {
    /// Sleeps above the threshold, all kinds.
    pub blocked_events: u64,
    /// Of those, Tokio parking (idle).
    pub idle_parks: u64,
    /// Events on blocking-pool threads (ignored).
    pub blocking_pool_events: u64,
    /// Run-queue waits above the threshold.
    pub runqueue_events: u64,
    /// cpu-clock samples of workers.
    pub samples: u64,
}

/// An open run of samples in one task frame on one worker; its stack is
/// the first sample's.
struct Run {
    key: Arc<str>,
    switches: u64,
    first_ns: u64,
    last_ns: u64,
    samples: u32,
    stack: Vec<Frame>,
}

/// The detector's state.
pub struct Detector {
    threshold_ns: u64,
    runs: HashMap<u32, Run>,
    /// What it saw.
    pub tally: Tally,
    /// Threads whose stacks showed the blocking pool (not workers).
    pub pool_tids: BTreeSet<u32>,
}

/// What the detector needs of a sample's stack: where the worker was, and
/// for task code, which task (the outermost program frame below the
/// runtime's poll).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Where the worker was.
    pub place: Place,
    /// The task's identity, for task code.
    pub task_key: Option<Arc<str>>,
    /// The stack reaches the runtime's worker or blocking-pool loop (it
    /// was not cut short).
    pub reached_loop: bool,
}

impl Summary {
    /// The summary of a symbolized stack.
    pub fn of(frames: &[Frame]) -> Self {
        let place = place(frames);
        let task_key = (place == Place::TaskCode)
            .then(|| user_frames(frames).last().map(|f| f.function.clone()))
            .flatten();
        let reached_loop = frames
            .iter()
            .map(class_of)
            .any(|c| c.worker_loop || c.pool_loop);
        Summary {
            place,
            task_key,
            reached_loop,
        }
    }
}

impl Detector {
    /// A detector with this threshold.
    pub fn new(threshold_ns: u64) -> Self {
        Detector {
            threshold_ns,
            runs: HashMap::new(),
            tally: Tally::default(),
            pool_tids: BTreeSet::new(),
        }
    }

    /// Feeds one event with its symbolized stack; returns the findings it
    /// completes.
    pub fn feed(&mut self, ev: &RawEvent, stack: Vec<Frame>) -> Vec<Finding> {
        self.feed_summarized(ev, Summary::of(&stack), || stack)
    }

    /// Feeds one event by the summary of its stack; `stack` is called only
    /// when a finding keeps the frames.
    pub fn feed_summarized(
        &mut self,
        ev: &RawEvent,
        summary: Summary,
        stack: impl FnOnce() -> Vec<Frame>,
    ) -> Vec<Finding> {
        if ev.kind == Kind::Sample {
            return self.sample(ev, summary, stack);
        }
        // The worker left the CPU: any sample run on it has ended.
        let mut out: Vec<Finding> = self.close_run(ev.tid).into_iter().collect();
        out.extend(self.switch_event(ev, summary.place, stack));
        out
    }

    fn switch_event(
        &mut self,
        ev: &RawEvent,
        where_: Place,
        stack: impl FnOnce() -> Vec<Frame>,
    ) -> Option<Finding> {
        if where_ == Place::BlockingPool {
            self.tally.blocking_pool_events += 1;
            self.pool_tids.insert(ev.tid);
            return None;
        }
        let category = if ev.kind == Kind::Blocked {
            self.tally.blocked_events += 1;
            if where_ == Place::RuntimeIdle {
                self.tally.idle_parks += 1;
            }
            if where_ != Place::TaskCode {
                return None;
            }
            Category::BlockingCall
        } else {
            self.tally.runqueue_events += 1;
            Category::RunQueueDelay
        };
        Some(Finding {
            category,
            tid: ev.tid,
            start_ns: ev.start_ns,
            duration_ns: ev.duration_ns,
            stack: stack(),
        })
    }

    /// A cpu-clock sample: it continues its worker's run in the same task,
    /// or ends it and starts another (whose stack is the one reported).
    fn sample(
        &mut self,
        ev: &RawEvent,
        summary: Summary,
        stack: impl FnOnce() -> Vec<Frame>,
    ) -> Vec<Finding> {
        self.tally.samples += 1;
        let mut out = Vec::new();
        let Some(key) = summary.task_key else {
            out.extend(self.close_run(ev.tid));
            return out;
        };
        if let Some(run) = self.runs.get_mut(&ev.tid) {
            // The same task, and the worker never left the CPU in between.
            if run.key == key && run.switches == ev.switches {
                run.last_ns = ev.start_ns;
                run.samples += 1;
                return out;
            }
        }
        out.extend(self.close_run(ev.tid));
        let stack = stack();
        self.runs.insert(
            ev.tid,
            Run {
                key,
                switches: ev.switches,
                first_ns: ev.start_ns,
                last_ns: ev.start_ns,
                samples: 1,
                stack,
            },
        );
        out
    }

    /// Ends the open run of `tid`; a run of two or more samples spanning
    /// the threshold is a CPU-bound poll.
    fn close_run(&mut self, tid: u32) -> Option<Finding> {
        let run = self.runs.remove(&tid)?;
        let span = run.last_ns - run.first_ns;
        (run.samples >= 2 && span >= self.threshold_ns).then_some(Finding {
            category: Category::CpuBoundPoll,
            tid,
            start_ns: run.first_ns,
            duration_ns: span,
            stack: run.stack,
        })
    }

    /// Ends every open run (at the end of a session).
    pub fn flush(&mut self) -> Vec<Finding> {
        let tids: Vec<u32> = self.runs.keys().copied().collect();
        tids.into_iter().filter_map(|t| self.close_run(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::fixtures::frame;

    fn task_stack(user: &[&str]) -> Vec<Frame> {
        let mut v: Vec<Frame> = user.iter().map(|n| frame(n)).collect();
        v.push(frame("tokio::runtime::task::harness::Harness<T,S>::poll"));
        v.push(frame(
            "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
        ));
        v
    }

    fn ev(kind: Kind, tid: u32, start_ms: u64, dur_ms: u64) -> RawEvent {
        RawEvent {
            kind,
            tid,
            start_ns: start_ms * 1_000_000,
            duration_ns: dur_ms * 1_000_000,
            state: 1,
            ..RawEvent::default()
        }
    }

    #[test]
    fn two_samples_in_one_task_make_a_cpu_bound_poll() {
        let mut d = Detector::new(5_000_000);
        let s = task_stack(&["app::spin", "app::task::{{closure}}"]);
        assert!(d.feed(&ev(Kind::Sample, 7, 0, 0), s.clone()).is_empty());
        assert!(d.feed(&ev(Kind::Sample, 7, 10, 0), s.clone()).is_empty());
        let found = d.feed(&ev(Kind::Blocked, 7, 12, 1), task_stack(&["app::other"]));
        let poll = found
            .iter()
            .find(|f| f.category == Category::CpuBoundPoll)
            .unwrap();
        assert_eq!(poll.duration_ns, 10_000_000);
        assert_eq!(poll.culprit().unwrap().function.as_ref(), "app::spin");
    }

    #[test]
    fn a_short_switch_between_samples_splits_the_poll() {
        let mut d = Detector::new(5_000_000);
        let s = task_stack(&["app::spin", "app::task::{{closure}}"]);
        let mut a = ev(Kind::Sample, 7, 0, 0);
        d.feed(&a, s.clone());
        a.start_ns = 10_000_000;
        a.switches = 1;
        d.feed(&a, s.clone());
        a.start_ns = 12_000_000;
        d.feed(&a, s.clone());
        assert!(
            d.flush().is_empty(),
            "two polls of 0 and 2 ms, not one of 12 ms"
        );
    }

    #[test]
    fn single_samples_and_other_tasks_are_not_polls() {
        let mut d = Detector::new(5_000_000);
        d.feed(&ev(Kind::Sample, 7, 0, 0), task_stack(&["app::a"]));
        let out = d.feed(&ev(Kind::Sample, 7, 10, 0), task_stack(&["app::b"]));
        assert!(out.is_empty());
        assert!(d.flush().is_empty());
    }

    #[test]
    fn blocked_task_code_is_reported_and_pool_and_runqueue_are_labelled() {
        let mut d = Detector::new(5_000_000);
        let out = d.feed(
            &ev(Kind::Blocked, 3, 0, 20),
            task_stack(&["app::read_config"]),
        );
        assert_eq!(out[0].category, Category::BlockingCall);
        let pool = vec![
            frame("app::slow"),
            frame("tokio::runtime::blocking::pool::Inner::run"),
        ];
        assert!(d.feed(&ev(Kind::Blocked, 4, 0, 20), pool).is_empty());
        let out = d.feed(&ev(Kind::RunQueue, 3, 30, 9), task_stack(&["app::x"]));
        assert_eq!(out[0].category, Category::RunQueueDelay);
        assert_eq!(d.tally.blocking_pool_events, 1);
        assert_eq!(d.tally.runqueue_events, 1);
    }
}
