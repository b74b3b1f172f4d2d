//! Detection: turns symbolized events into findings in three categories.
//!
//! 1. Blocking call: a worker slept longer than the threshold with task
//!    code on its stack (Tokio's idle parking and the blocking pool are
//!    not blockers).
//! 2. Task code on CPU, sampled: each cpu-clock sample that lands in task
//!    code counts one sampling period of CPU for its culprit. No poll
//!    length is claimed: Tokio switches tasks without an OS context switch
//!    (a `yield_now` loop of 1 ms polls looks, to consecutive samples,
//!    exactly like one long poll), so samples cannot tell where a poll
//!    ends; the report gives CPU time per culprit and says how it was
//!    measured.
//!    With `--exact-polls`, uprobes on Tokio's task poll time every poll,
//!    and a poll that ran on CPU longer than the threshold is a long poll
//!    of its own, with its real length; its culprit comes from the samples
//!    taken during it ([`crate::poll_culprit`]).
//! 3. Run-queue delay: a runnable worker waited for a CPU longer than the
//!    threshold; its stack is the victim's, and it is labelled so. The
//!    finding names what held the CPU: the task that ran just before the
//!    worker got it back (as `runqslower -P` does), with its own culprit
//!    when it is a thread of the target.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::classify::{class_of, culprit, flavor_of_stack, place_of, place_of_cut, Flavor};
use crate::classify::{FrameClass, Place};
use crate::event::{Holder, Kind, RawEvent};
use crate::poll_culprit::PollCulprits;
use crate::polls::RuntimeSites;
use crate::roles::{Role, Roles};
use crate::symbols::Frame;

/// A finding's category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// A blocking call in task code.
    BlockingCall,
    /// CPU time in task code, from cpu-clock samples (no poll lengths).
    #[serde(rename = "task_cpu_sampled", alias = "cpu_bound_poll")]
    TaskCpuSampled,
    /// The worker waited for a CPU (it is the victim, not the culprit).
    RunQueueDelay,
    /// One poll ran on CPU longer than the threshold, timed by uprobes on
    /// Tokio's poll (`--exact-polls`).
    LongPoll,
    /// Time in Tokio's `block_in_place`: the worker handed its core to
    /// another thread first, so the runtime kept running; shown apart from
    /// the blockers (sleeps over the threshold and sampled CPU inside it).
    BlockInPlace,
}

impl Category {
    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Category::BlockingCall => "blocking call",
            Category::TaskCpuSampled => "on CPU (sampled)",
            Category::RunQueueDelay => "run-queue delay (victim)",
            Category::LongPoll => "long poll (exact)",
            Category::BlockInPlace => "block_in_place",
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
    /// Run-queue delays: the task that held the CPU the worker waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<CpuHolder>,
}

/// The task that ran on the CPU just before a waiting worker got it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuHolder {
    /// Its thread id.
    pub tid: u32,
    /// Its thread name.
    pub comm: String,
    /// It is a thread of the target process.
    pub same_process: bool,
    /// For a thread of the target: the culprit on its own stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<String>,
}

impl CpuHolder {
    /// The holder of `h`, as seen from the process `target_pid`.
    pub fn of(h: &Holder, target_pid: u32) -> Self {
        CpuHolder {
            tid: h.tid,
            comm: h.comm.clone(),
            same_process: h.tgid == target_pid,
            culprit: None,
        }
    }
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
    /// Events on blocking-pool threads (ignored): threads whose stack
    /// showed the pool's loop and no worker's at the time.
    pub blocking_pool_events: u64,
    /// Sleeps and run-queue waits left out because they began before
    /// their thread was watched (no finding without a seen start).
    #[serde(default)]
    pub before_watch: u64,
    /// Findings of stacks cut short, reported under the deepest frame
    /// known (the innermost program frame, else the last frame unwound).
    #[serde(default)]
    pub cut_findings: u64,
    /// Run-queue waits above the threshold.
    pub runqueue_events: u64,
    /// cpu-clock samples of workers.
    pub samples: u64,
    /// Exact polls: polls that ran on CPU longer than the threshold.
    #[serde(default)]
    pub long_polls: u64,
    /// Exact polls: long polls left out, their time off CPU unknown (the
    /// scheduler tracepoints missed a switch while a uprobe program ran).
    #[serde(default)]
    pub untimed_polls: u64,
}

/// The detector's state.
pub struct Detector {
    sample_period_ns: u64,
    target_pid: u32,
    /// What it saw.
    pub tally: Tally,
    /// Each thread's role at the time of each event.
    pub roles: Roles,
    /// Exact polls: the samples that name long polls.
    polls: Option<PollCulprits>,
}

/// What the detector needs of a stack: where the worker was, for task
/// code which task (the outermost program frame below the runtime's
/// poll), and the thread's role at that moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Where the worker was.
    pub place: Place,
    /// The task's identity, for task code.
    pub task_key: Option<Arc<str>>,
    /// The stack reaches a runtime's task loop or the blocking pool's
    /// loop (it was not cut short).
    pub reached_loop: bool,
    /// The stack shows a loop that runs a runtime's tasks: the thread is
    /// a worker at this moment.
    pub worker_loop: bool,
    /// That loop's flavor (the outermost one).
    pub flavor: Option<Flavor>,
    /// The stack is inside Tokio's `block_in_place`.
    pub block_in_place: bool,
    /// Every frame is std's or the system's: no program and no tokio frame.
    pub bare: bool,
}

impl Summary {
    /// The summary of a symbolized stack.
    pub fn of(frames: &[Frame]) -> Self {
        let classes: Vec<FrameClass> = frames.iter().map(class_of).collect();
        Self::from_classes(&classes, |i| frames[i].function.clone())
    }

    /// The summary of a stack by its frames' classes (innermost first);
    /// `name(i)` is the function of frame `i`, asked for the task key only.
    pub fn from_classes(classes: &[FrameClass], name: impl FnOnce(usize) -> Arc<str>) -> Self {
        let reached_loop = classes.iter().any(|c| c.worker_loop || c.pool_loop);
        let place = match reached_loop {
            true => place_of(classes),
            false => place_of_cut(classes),
        };
        let task_key = match place {
            Place::TaskCode => classes.iter().rposition(|c| !c.runtime).map(name),
            _ => None,
        };
        Summary {
            place,
            task_key,
            reached_loop,
            worker_loop: classes.iter().any(|c| c.worker_loop),
            flavor: flavor_of_stack(classes),
            block_in_place: classes.iter().any(|c| c.block_in_place),
            bare: classes.iter().all(|c| c.runtime && !c.tokio),
        }
    }

    /// The thread's role, when the stack shows one (a stack cut short
    /// shows none).
    pub fn role(&self) -> Option<Role> {
        if self.place == Place::BlockingPool {
            return Some(Role::Pool);
        }
        self.flavor.map(Role::Worker)
    }

    /// True when an event with this stack is a finding of its own: task
    /// code, or a stack cut short by the copy's or the walk's limit that
    /// holds only the system's frames (its time goes under its deepest
    /// frame rather than nowhere).
    fn names_code(&self, ev: &RawEvent) -> bool {
        self.place == Place::TaskCode || (!self.reached_loop && self.bare && ev.cut_short)
    }
}

impl Detector {
    /// A detector for the workers of `target_pid`, sampled at
    /// `frequency_hz` (the switch events arrive already filtered by the
    /// threshold, in the kernel).
    pub fn new(frequency_hz: u64, target_pid: u32) -> Self {
        Detector {
            sample_period_ns: 1_000_000_000 / frequency_hz.max(1),
            target_pid,
            tally: Tally::default(),
            roles: Roles::default(),
            polls: None,
        }
    }

    /// Exact polls are timed: long-poll events arrive, for the instances
    /// of Tokio's poll at `sites`.
    pub fn time_polls(&mut self, sites: RuntimeSites) {
        self.polls = Some(PollCulprits::new(sites));
    }

    /// Feeds one event with its symbolized stack; returns the findings it
    /// completes.
    pub fn feed(&mut self, ev: &RawEvent, stack: Vec<Frame>) -> Vec<Finding> {
        self.feed_summarized(ev, Summary::of(&stack), || stack)
    }

    /// Feeds one event by the summary of its stack; `stack` is called only
    /// when a finding keeps the frames. A finding takes the role its
    /// thread had at the time; one whose stack was cut short before any
    /// loop takes the role the thread showed last, or waits for one.
    pub fn feed_summarized(
        &mut self,
        ev: &RawEvent,
        summary: Summary,
        stack: impl FnOnce() -> Vec<Frame>,
    ) -> Vec<Finding> {
        match ev.kind {
            // A holder's stack names a culprit for a finding (the session
            // joins them); it is no finding of its own, and says nothing
            // of the waiting worker's role (`tid` is the worker's).
            Kind::Holder => return Vec::new(),
            Kind::Poll => return self.long_poll(ev).into_iter().collect(),
            Kind::Blocked | Kind::RunQueue | Kind::Sample => {}
        }
        let mut out = Vec::new();
        let seen = summary.role();
        if let Some(role) = seen {
            self.roles.learn(&ev.stack, role);
            let released = self.roles.observe(ev.tid, role);
            self.tally.blocking_pool_events += released.pool_events;
            out.extend(released.findings);
        }
        let role = seen.or_else(|| self.roles.of_cut_stack(ev.tid, &ev.stack));
        if role == Some(Role::Pool) {
            self.pool_event(ev);
            return out;
        }
        let Some(f) = self.worker_event(ev, &summary, stack) else {
            return out;
        };
        if !summary.reached_loop {
            self.tally.cut_findings += 1;
        }
        match role {
            Some(_) => out.push(f),
            None => self.roles.hold(f),
        }
        out
    }

    /// An event of a thread in the blocking pool at the time: counted,
    /// never a finding.
    fn pool_event(&mut self, ev: &RawEvent) {
        match ev.kind {
            Kind::Sample => self.tally.samples += 1,
            _ => self.tally.blocking_pool_events += 1,
        }
    }

    /// An event of a worker (or of a thread whose role is not known yet).
    fn worker_event(
        &mut self,
        ev: &RawEvent,
        summary: &Summary,
        stack: impl FnOnce() -> Vec<Frame>,
    ) -> Option<Finding> {
        let mut holder = None;
        let category = match ev.kind {
            Kind::Sample => return self.sample(ev, summary, stack),
            Kind::Blocked => {
                self.tally.blocked_events += 1;
                if summary.place == Place::RuntimeIdle {
                    self.tally.idle_parks += 1;
                }
                if !summary.names_code(ev) {
                    return None;
                }
                match summary.block_in_place {
                    true => Category::BlockInPlace,
                    false => Category::BlockingCall,
                }
            }
            _ => {
                self.tally.runqueue_events += 1;
                holder = ev
                    .holder
                    .as_ref()
                    .map(|h| CpuHolder::of(h, self.target_pid));
                Category::RunQueueDelay
            }
        };
        Some(Finding {
            category,
            tid: ev.tid,
            start_ns: ev.start_ns,
            duration_ns: ev.duration_ns,
            stack: stack(),
            holder,
        })
    }

    /// A cpu-clock sample: in task code, one sampling period of CPU for
    /// its culprit (inside `block_in_place`, for that row).
    fn sample(
        &mut self,
        ev: &RawEvent,
        summary: &Summary,
        stack: impl FnOnce() -> Vec<Frame>,
    ) -> Option<Finding> {
        self.tally.samples += 1;
        if !summary.names_code(ev) {
            return None;
        }
        let stack = stack();
        if let Some(p) = self.polls.as_mut() {
            p.note_sample(ev, &stack);
        }
        Some(Finding {
            category: match summary.block_in_place {
                true => Category::BlockInPlace,
                false => Category::TaskCpuSampled,
            },
            tid: ev.tid,
            start_ns: ev.start_ns,
            duration_ns: self.sample_period_ns,
            stack,
            holder: None,
        })
    }

    /// Exact polls: one poll ran on CPU longer than the threshold; its
    /// length is its time on CPU, its stack the samples' taken in it.
    fn long_poll(&mut self, ev: &RawEvent) -> Option<Finding> {
        let (polls, span) = (self.polls.as_ref()?, ev.poll?);
        self.tally.long_polls += 1;
        Some(Finding {
            category: Category::LongPoll,
            tid: ev.tid,
            start_ns: ev.start_ns,
            duration_ns: ev.duration_ns,
            stack: polls.stack_for(ev.tid, ev.start_ns, span.wall_ns, span.fn_ip),
            holder: None,
        })
    }

    /// The session ends: findings of cut stacks still waiting for their
    /// thread's role (see [`Roles::flush`]).
    pub fn flush(&mut self) -> Vec<Finding> {
        self.roles.flush()
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
    fn task_samples_count_cpu_and_claim_no_poll_length() {
        // 1 ms polls and a yield_now: the same task on every sample, no OS
        // switch in between. Each sample is one period of CPU, never a
        // 20 ms "poll".
        let mut d = Detector::new(100, 1);
        let s = task_stack(&["app::spin", "app::task::{{closure}}"]);
        let mut found = Vec::new();
        for ms in [0, 10, 20] {
            found.extend(d.feed(&ev(Kind::Sample, 7, ms, 0), s.clone()));
        }
        assert_eq!(found.len(), 3);
        assert!(found.iter().all(|f| f.category == Category::TaskCpuSampled));
        assert!(
            found.iter().all(|f| f.duration_ns == 10_000_000),
            "one period each"
        );
        assert!(d.flush().is_empty());
    }

    #[test]
    fn a_long_poll_is_named_by_the_samples_taken_in_it() {
        let mut d = Detector::new(100, 1);
        d.time_polls(RuntimeSites::default());
        let s = task_stack(&["app::compress", "app::handle::{{closure}}"]);
        d.feed(&ev(Kind::Sample, 7, 12, 0), s);
        let mut poll = ev(Kind::Poll, 7, 10, 28);
        poll.poll = Some(crate::event::PollSpan {
            wall_ns: 31_000_000,
            fn_ip: 0,
        });
        let out = d.feed(&poll, Vec::new());
        assert_eq!(out[0].category, Category::LongPoll);
        assert_eq!(out[0].duration_ns, 28_000_000, "its time on CPU");
        assert_eq!(&*out[0].culprit().unwrap().function, "app::compress");
        assert_eq!(d.tally.long_polls, 1);
        // Without --exact-polls a poll record names nothing.
        let mut plain = Detector::new(100, 1);
        assert!(plain.feed(&poll, Vec::new()).is_empty());
    }

    #[test]
    fn samples_outside_task_code_count_nothing() {
        let mut d = Detector::new(100, 1);
        let idle = vec![frame(
            "tokio::runtime::scheduler::multi_thread::park::Parker::park",
        )];
        assert!(d.feed(&ev(Kind::Sample, 7, 0, 0), idle).is_empty());
        assert_eq!(d.tally.samples, 1);
    }

    #[test]
    fn blocked_task_code_is_reported_and_pool_and_runqueue_are_labelled() {
        let mut d = Detector::new(99, 1);
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

    #[test]
    fn a_run_queue_wait_names_its_holder_and_a_holder_stack_is_no_finding() {
        let mut d = Detector::new(99, 500);
        let mut wait = ev(Kind::RunQueue, 3, 0, 12);
        wait.holder = Some(Holder {
            tid: 501,
            tgid: 500,
            comm: "svc-rt".into(),
        });
        let out = d.feed(&wait, task_stack(&["app::x"]));
        let h = out[0].holder.as_ref().unwrap();
        assert_eq!(
            (h.tid, h.comm.as_str(), h.same_process),
            (501, "svc-rt", true)
        );
        wait.holder.as_mut().unwrap().tgid = 900;
        let out = d.feed(&wait, task_stack(&["app::x"]));
        assert!(!out[0].holder.as_ref().unwrap().same_process);
        let held = ev(Kind::Holder, 3, 0, 12);
        assert!(d.feed(&held, task_stack(&["app::hog"])).is_empty());
    }

    fn pool_stack(user: &[&str]) -> Vec<Frame> {
        let mut v: Vec<Frame> = user.iter().map(|n| frame(n)).collect();
        v.push(frame("tokio::runtime::blocking::pool::Inner::run"));
        v
    }

    #[test]
    fn a_worker_that_later_joins_the_pool_keeps_its_worker_findings() {
        let mut d = Detector::new(99, 1);
        let before = d.feed(&ev(Kind::Blocked, 3, 0, 20), task_stack(&["app::hash"]));
        assert_eq!(before[0].category, Category::BlockingCall);
        // After block_in_place the thread runs spawn_blocking work.
        let later = d.feed(&ev(Kind::Blocked, 3, 50, 20), pool_stack(&["app::slow"]));
        assert!(later.is_empty());
        // And a pool thread that takes a worker's core is a worker from then on.
        let mut taken = pool_stack(&[]);
        taken.splice(0..0, task_stack(&["app::other"]));
        let out = d.feed(&ev(Kind::Blocked, 4, 60, 20), taken);
        assert_eq!(out[0].category, Category::BlockingCall);
        assert_eq!(d.tally.blocking_pool_events, 1);
        assert!(!d.roles.only_pool(3) && d.roles.workers().contains_key(&4));
    }

    #[test]
    fn block_in_place_is_its_own_category_with_its_culprit() {
        let mut d = Detector::new(100, 1);
        let s = task_stack(&[
            "app::verify_password",
            "tokio::runtime::scheduler::multi_thread::worker::block_in_place",
            "app::login::{{closure}}",
        ]);
        let slept = d.feed(&ev(Kind::Blocked, 3, 0, 40), s.clone());
        let ran = d.feed(&ev(Kind::Sample, 3, 45, 0), s);
        for f in slept.iter().chain(&ran) {
            assert_eq!(f.category, Category::BlockInPlace);
            assert_eq!(&*f.culprit().unwrap().function, "app::verify_password");
        }
        assert_eq!(
            (slept[0].duration_ns, ran[0].duration_ns),
            (40_000_000, 10_000_000)
        );
    }

    #[test]
    fn a_stack_cut_short_keeps_its_time_under_the_deepest_frame_known() {
        let mut d = Detector::new(100, 1);
        // The thread showed it is a worker; then a sleep under a stack
        // deeper than the copy: the handler is known, the loop is not.
        d.feed(&ev(Kind::Sample, 3, 0, 0), task_stack(&["app::x"]));
        let cut = vec![frame("std::thread::sleep"), frame("app::report")];
        let out = d.feed(&ev(Kind::Blocked, 3, 10, 30), cut);
        assert_eq!(&*out[0].culprit().unwrap().function, "app::report");
        // Only the system's frames, cut by the copy's end: still reported.
        let mut deep = ev(Kind::Blocked, 3, 50, 30);
        deep.cut_short = true;
        let libc = vec![frame("std::sys::net::recv"), frame("std::sys::net::gaih")];
        assert_eq!(d.feed(&deep, libc.clone()).len(), 1);
        assert_eq!(d.tally.cut_findings, 2);
        // A leaf cut for another reason (a failed copy) names nothing.
        assert!(d.feed(&ev(Kind::Blocked, 3, 90, 30), libc).is_empty());
    }

    #[test]
    fn a_cut_stack_waits_for_its_threads_role() {
        let mut d = Detector::new(100, 1);
        let cut = vec![frame("std::thread::sleep"), frame("app::report")];
        assert!(d.feed(&ev(Kind::Blocked, 3, 0, 30), cut.clone()).is_empty());
        assert!(d.feed(&ev(Kind::Blocked, 4, 0, 30), cut).is_empty());
        let released = d.feed(&ev(Kind::Sample, 3, 40, 0), task_stack(&["app::x"]));
        assert_eq!(released.len(), 2, "the held sleep and the sample");
        assert!(d
            .feed(&ev(Kind::Blocked, 4, 50, 9), pool_stack(&["app::y"]))
            .is_empty());
        assert!(d.flush().is_empty(), "thread 4 was in the pool");
    }

    #[test]
    fn a_current_thread_runtime_is_a_worker() {
        let mut d = Detector::new(100, 1);
        let s = vec![
            frame("std::thread::sleep"),
            frame("app::audit::flush"),
            frame("tokio::runtime::scheduler::current_thread::CoreGuard::block_on"),
            frame("tokio::runtime::runtime::Runtime::block_on"),
            frame("app::metrics_thread"),
        ];
        let out = d.feed(&ev(Kind::Blocked, 9, 0, 20), s);
        assert_eq!(out[0].category, Category::BlockingCall);
        assert_eq!(d.roles.workers().get(&9), Some(&Flavor::CurrentThread));
        let local = vec![
            frame("app::tick"),
            frame("tokio::task::local::LocalSet::run_until::{{closure}}"),
            frame("app::main"),
        ];
        assert_eq!(Summary::of(&local).flavor, Some(Flavor::LocalSet));
        let holder = ev(Kind::Holder, 11, 0, 20);
        assert!(d.feed(&holder, task_stack(&["app::hog"])).is_empty());
        assert!(
            !d.roles.workers().contains_key(&11),
            "a holder's stack is not its victim's"
        );
    }
}
