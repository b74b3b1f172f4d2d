//! Exact polls: the stack that names a long poll's culprit. The uprobes
//! time a poll but see no stack inside it (at its return the task's frames
//! are gone), so the culprit comes from the cpu-clock samples that belong
//! to the poll: taken on its worker while it ran, in its task (when task
//! ids are tracked) and inside its instance of Tokio's `raw::poll` (when
//! the sample's stack shows one). A poll that no sample of its own names
//! (a poll of a few ms may fall between two samples) takes the last
//! sample of its own task: a task is one future, never another's. Failing
//! that it is unnamed: another poll of the same future type (every
//! request of a hyper or tonic service shares one) is another handler,
//! whose name it must not borrow.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use crate::classify::culprit;
use crate::event::{PollSpan, RawEvent};
use crate::polls::RuntimeSites;
use crate::symbols::Frame;

/// Task-code samples kept per worker, newest last.
const RECENT_SAMPLES: usize = 64;

/// Tasks whose last sample is kept; past it, the oldest half of what is
/// kept is let go (tasks end, and their ids never come back).
const TASKS_KEPT: usize = 4096;

/// One task-code sample of a worker.
#[derive(Debug)]
struct Sample {
    /// When it was taken, ns.
    at_ns: u64,
    /// The Tokio task it was in, when tracked.
    task_id: Option<u64>,
    /// The innermost instance of `raw::poll` on its stack, if any.
    instance: Option<u64>,
    /// Its frames.
    frames: Vec<Frame>,
}

/// One long poll, as the rule needs it.
#[derive(Debug, Clone, Copy)]
struct PollRef {
    start_ns: u64,
    end_ns: u64,
    task_id: Option<u64>,
    instance: Option<u64>,
}

impl PollRef {
    /// True when `s` was taken in this poll: while it ran, and in no
    /// other task or instance of `raw::poll` than its own where the
    /// sample names one (a poll nested in it is another poll's).
    fn owns(&self, s: &Sample) -> bool {
        let differ =
            |a: Option<u64>, b: Option<u64>| matches!((a, b), (Some(a), Some(b)) if a != b);
        (self.start_ns..=self.end_ns).contains(&s.at_ns)
            && !differ(self.task_id, s.task_id)
            && !differ(self.instance, s.instance)
    }
}

/// Recent task-code samples, for the polls that end after them.
#[derive(Debug, Default)]
pub struct PollCulprits {
    sites: RuntimeSites,
    /// Per worker, its recent samples.
    recent: HashMap<u32, VecDeque<Sample>>,
    /// Per task id, its last sample's frames and when it was noted (a
    /// count of samples), for the polls of that task no sample fell in.
    by_task: HashMap<u64, (u64, Vec<Frame>)>,
    /// Samples noted so far.
    noted: u64,
}

impl PollCulprits {
    /// Culprits for polls of the instances at `sites`.
    pub fn new(sites: RuntimeSites) -> Self {
        PollCulprits {
            sites,
            ..Self::default()
        }
    }

    /// A task-code sample of `ev.tid` (its raw stack in `ev.stack`).
    pub fn note_sample(&mut self, ev: &RawEvent, frames: &[Frame]) {
        let instance = ev.stack.iter().find_map(|a| self.sites.instance_of(*a));
        self.noted += 1;
        if let Some(id) = ev.task_id {
            if self.by_task.len() >= TASKS_KEPT {
                let cut = self.noted.saturating_sub(TASKS_KEPT as u64 / 2);
                self.by_task.retain(|_, (at, _)| *at >= cut);
            }
            self.by_task.insert(id, (self.noted, frames.to_vec()));
        }
        let recent = self.recent.entry(ev.tid).or_default();
        if recent.len() == RECENT_SAMPLES {
            recent.pop_front();
        }
        recent.push_back(Sample {
            at_ns: ev.start_ns,
            task_id: ev.task_id,
            instance,
            frames: frames.to_vec(),
        });
    }

    /// The stack to name the long poll `ev` (timed as `span`): its own
    /// samples, by their most frequent culprit (the earliest sample's of
    /// a tie); else its task's last sample; else the frame that says it
    /// is unnamed.
    pub fn stack_for(&self, ev: &RawEvent, span: PollSpan) -> Vec<Frame> {
        let poll = PollRef {
            start_ns: ev.start_ns,
            end_ns: ev.start_ns.saturating_add(span.wall_ns),
            task_id: ev.task_id,
            instance: self.sites.instance_of(span.fn_ip),
        };
        let own: Vec<&Vec<Frame>> = self
            .recent
            .get(&ev.tid)
            .into_iter()
            .flatten()
            .filter(|s| poll.owns(s))
            .map(|s| &s.frames)
            .collect();
        let task = || Some(&self.by_task.get(&ev.task_id?)?.1);
        most_frequent_culprit(&own)
            .or_else(task)
            .cloned()
            .unwrap_or_else(|| vec![unnamed()])
    }
}

/// The culprit of a long poll no sample of its own or of its task named.
fn unnamed() -> Frame {
    Frame {
        function: UNNAMED.into(),
        file: None,
        line: None,
        module: None,
        inlined: false,
    }
}

/// The name of that culprit.
pub const UNNAMED: &str = "[unnamed: no sample inside this poll]";

/// Of several stacks, the first whose culprit is a most frequent one.
fn most_frequent_culprit<'a>(stacks: &[&'a Vec<Frame>]) -> Option<&'a Vec<Frame>> {
    let key = |s: &Vec<Frame>| culprit(s).map(|f| Arc::clone(&f.function));
    let mut counts: BTreeMap<Option<Arc<str>>, usize> = BTreeMap::new();
    for s in stacks {
        *counts.entry(key(s)).or_default() += 1;
    }
    let most = *counts.values().max()?;
    stacks.iter().find(|s| counts[&key(s)] == most).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::polls::Site;
    use crate::symbols::fixtures::frame;
    use crate::symbols::maps::CodeMapping;

    fn task(name: &str) -> Vec<Frame> {
        vec![
            frame(name),
            frame("tokio::runtime::task::harness::Harness<T,S>::poll"),
        ]
    }

    fn sample(tid: u32, at: u64, raw: &[u64]) -> RawEvent {
        RawEvent {
            tid,
            start_ns: at,
            stack: raw.to_vec(),
            ..RawEvent::default()
        }
    }

    /// Two instances of `raw::poll`, at 0x11000 and 0x12000 once mapped.
    fn sites() -> RuntimeSites {
        let site = |n: u64| Site {
            vaddr: 0x1000 + n * 0x1000,
            size: 0x100,
            file_offset: n * 0x1000,
            body: None,
        };
        let map = CodeMapping {
            start: 0x10000,
            end: 0x20000,
            offset: 0,
            path: "/app".into(),
        };
        RuntimeSites::place(&[site(1), site(2)], &[map])
    }

    /// A poll of `tid` in task `task` from `start` for `wall` ns, in the
    /// instance entered at `fn_ip`.
    fn poll(
        tid: u32,
        task: Option<u64>,
        start: u64,
        wall: u64,
        fn_ip: u64,
    ) -> (RawEvent, PollSpan) {
        let ev = RawEvent {
            tid,
            start_ns: start,
            task_id: task,
            ..RawEvent::default()
        };
        (
            ev,
            PollSpan {
                wall_ns: wall,
                fn_ip,
            },
        )
    }

    fn name(c: &PollCulprits, p: (RawEvent, PollSpan)) -> String {
        c.stack_for(&p.0, p.1)[0].function.to_string()
    }

    #[test]
    fn the_samples_inside_the_poll_name_it_by_majority() {
        let mut c = PollCulprits::new(sites());
        c.note_sample(&sample(7, 100, &[]), &task("app::other"));
        c.note_sample(&sample(7, 1_000, &[]), &task("app::hash"));
        c.note_sample(&sample(7, 2_000, &[]), &task("app::compress"));
        c.note_sample(&sample(7, 3_000, &[]), &task("app::hash"));
        c.note_sample(&sample(8, 2_000, &[]), &task("app::elsewhere"));
        assert_eq!(name(&c, poll(7, None, 900, 2_500, 0)), "app::hash");
    }

    #[test]
    fn a_tie_of_culprits_goes_to_the_earliest_sample() {
        let (a, b) = (task("app::b_second"), task("app::a_first"));
        assert_eq!(
            &*most_frequent_culprit(&[&a, &b]).unwrap()[0].function,
            "app::b_second"
        );
        let named = most_frequent_culprit(&[&a, &b, &b]).unwrap();
        assert_eq!(&*named[0].function, "app::a_first");
    }

    #[test]
    fn a_poll_without_a_sample_of_its_own_is_unnamed_never_borrowed() {
        let mut c = PollCulprits::new(sites());
        // The write handler's poll, sampled inside the shared instance
        // at 0x11000 (every request's future type).
        let mut write = sample(7, 100, &[0x4444, 0x11010]);
        write.task_id = Some(1);
        c.note_sample(&write, &task("app::write"));
        assert_eq!(name(&c, poll(7, Some(1), 50, 100, 0x11000)), "app::write");
        // A lookup poll of the same instance, later, with no sample in it.
        assert_eq!(name(&c, poll(7, Some(2), 5_000, 1_000, 0x11000)), UNNAMED);
        assert_eq!(name(&c, poll(7, None, 5_000, 1_000, 0x11000)), UNNAMED);
        // A later poll of the write handler's own task, unsampled: its
        // task's last sample names it.
        assert_eq!(
            name(&c, poll(7, Some(1), 5_000, 1_000, 0x11000)),
            "app::write"
        );
    }

    #[test]
    fn a_sample_of_another_task_or_instance_inside_the_window_is_not_the_polls() {
        let mut c = PollCulprits::new(sites());
        let mut nested = sample(7, 1_500, &[0x4444]);
        nested.task_id = Some(9);
        c.note_sample(&nested, &task("app::nested"));
        // Task 3's poll from 1000 to 3000: the sample at 1500 is task 9's.
        assert_eq!(name(&c, poll(7, Some(3), 1_000, 2_000, 0x11000)), UNNAMED);
        // Task 9's own poll, later: the nested sample was its.
        assert_eq!(
            name(&c, poll(7, Some(9), 9_000, 100, 0x12000)),
            "app::nested"
        );
        // Without task ids, a sample inside the window is the poll's...
        let mut plain = PollCulprits::new(sites());
        plain.note_sample(&sample(7, 1_500, &[0x4444, 0x11010]), &task("app::mine"));
        assert_eq!(
            name(&plain, poll(7, None, 1_000, 2_000, 0x11000)),
            "app::mine"
        );
        // ...unless its stack shows another instance of raw::poll.
        assert_eq!(name(&plain, poll(7, None, 1_000, 2_000, 0x12000)), UNNAMED);
        // And a task's id, set on both, names its own poll.
        let mut tagged = sample(7, 2_500, &[]);
        tagged.task_id = Some(3);
        c.note_sample(&tagged, &task("app::three"));
        assert_eq!(
            name(&c, poll(7, Some(3), 1_000, 2_000, 0x11000)),
            "app::three"
        );
    }
}
