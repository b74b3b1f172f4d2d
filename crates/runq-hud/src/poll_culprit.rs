//! Exact polls: the stack that names a long poll's culprit. The uprobes
//! time a poll but see no stack inside it (at its return the task's frames
//! are gone), so the culprit comes from the cpu-clock samples taken
//! during the poll on the same worker, and failing those (a poll shorter
//! than a sampling period may get none) from the last sample seen inside
//! the same instance of Tokio's `raw::poll`, i.e. the same future type.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use crate::classify::culprit;
use crate::event::RawEvent;
use crate::polls::RuntimeSites;
use crate::symbols::Frame;

/// Task-code samples kept per worker, newest last.
const RECENT_SAMPLES: usize = 64;

/// Recent task-code samples, for the polls that end after them.
#[derive(Debug, Default)]
pub struct PollCulprits {
    sites: RuntimeSites,
    /// Per worker: (sample time, stack).
    recent: HashMap<u32, VecDeque<(u64, Vec<Frame>)>>,
    /// Per instance of `raw::poll` (its runtime start): the last task-code
    /// stack sampled inside it.
    by_instance: HashMap<u64, Vec<Frame>>,
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
        let recent = self.recent.entry(ev.tid).or_default();
        if recent.len() == RECENT_SAMPLES {
            recent.pop_front();
        }
        recent.push_back((ev.start_ns, frames.to_vec()));
        if let Some(instance) = ev.stack.iter().find_map(|a| self.sites.instance_of(*a)) {
            self.by_instance.insert(instance, frames.to_vec());
        }
    }

    /// The stack to name a poll of `tid` that ran from `start_ns` for
    /// `wall_ns` in the instance entered at `fn_ip`: the samples inside
    /// it, by their most frequent culprit; else the instance's last
    /// sample; else a placeholder frame that says so.
    pub fn stack_for(&self, tid: u32, start_ns: u64, wall_ns: u64, fn_ip: u64) -> Vec<Frame> {
        let end = start_ns.saturating_add(wall_ns);
        let inside: Vec<&Vec<Frame>> = self
            .recent
            .get(&tid)
            .into_iter()
            .flatten()
            .filter(|(at, _)| (start_ns..=end).contains(at))
            .map(|(_, frames)| frames)
            .collect();
        if let Some(frames) = most_frequent_culprit(&inside) {
            return frames.clone();
        }
        self.sites
            .instance_of(fn_ip)
            .and_then(|i| self.by_instance.get(&i))
            .cloned()
            .unwrap_or_else(|| vec![unsampled()])
    }
}

/// The culprit of a long poll no sample named.
fn unsampled() -> Frame {
    Frame {
        function: UNSAMPLED.into(),
        file: None,
        line: None,
        module: None,
        inlined: false,
    }
}

/// The name of that culprit.
pub const UNSAMPLED: &str = "[task not sampled in its poll]";

/// Of several stacks, one whose culprit is the most frequent (the first
/// such in order).
fn most_frequent_culprit<'a>(stacks: &[&'a Vec<Frame>]) -> Option<&'a Vec<Frame>> {
    let key = |s: &Vec<Frame>| culprit(s).map(|f| Arc::clone(&f.function));
    let mut counts: BTreeMap<Option<Arc<str>>, usize> = BTreeMap::new();
    for s in stacks {
        *counts.entry(key(s)).or_default() += 1;
    }
    let best = counts.iter().max_by_key(|(_, n)| **n)?.0.clone();
    stacks.iter().find(|s| key(s) == best).copied()
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

    fn sites() -> RuntimeSites {
        let site = Site {
            vaddr: 0x2000,
            size: 0x100,
            file_offset: 0x1000,
            body: None,
        };
        let map = CodeMapping {
            start: 0x10000,
            end: 0x20000,
            offset: 0,
            path: "/app".into(),
        };
        RuntimeSites::place(&[site], &[map])
    }

    #[test]
    fn the_samples_inside_the_poll_name_it_by_majority() {
        let mut c = PollCulprits::new(sites());
        c.note_sample(&sample(7, 100, &[]), &task("app::other"));
        c.note_sample(&sample(7, 1_000, &[]), &task("app::hash"));
        c.note_sample(&sample(7, 2_000, &[]), &task("app::compress"));
        c.note_sample(&sample(7, 3_000, &[]), &task("app::hash"));
        c.note_sample(&sample(8, 2_000, &[]), &task("app::elsewhere"));
        let s = c.stack_for(7, 900, 2_500, 0);
        assert_eq!(&*s[0].function, "app::hash");
    }

    #[test]
    fn a_poll_without_samples_takes_its_instance_last_sample() {
        let mut c = PollCulprits::new(sites());
        // A sample whose stack passes through the instance at 0x11000.
        c.note_sample(&sample(7, 100, &[0x4444, 0x11010]), &task("app::parse"));
        let s = c.stack_for(7, 5_000, 1_000, 0x11000);
        assert_eq!(&*s[0].function, "app::parse");
        let none = c.stack_for(7, 5_000, 1_000, 0x99999);
        assert_eq!(&*none[0].function, UNSAMPLED);
    }
}
