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
use crate::sleep_call::SleepCall;
use crate::symbols::Frame;
use roles::{Role, Roles};

pub mod roles;

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

/// Everything that shows a category takes it from here: one `match`
/// ([`Category::info`]), so a new category does not compile until it has
/// every one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CategoryInfo {
    /// Label for the report's tables and the trace's `cat`.
    pub label: &'static str,
    /// The live view's short name (Hotspots).
    pub short: &'static str,
    /// The live view's timeline mark.
    pub mark: char,
    /// The timeline legend's word for the mark.
    pub legend: &'static str,
    /// Root frame of its stacks in folded output, saying what the time
    /// was (`None`: left out; a long poll's CPU time is in the samples).
    pub folded_root: Option<&'static str>,
    /// Its findings are sampling periods, with no interval length.
    pub sampled: bool,
}

impl Category {
    /// Every category, in the live view legend's order.
    pub const ALL: [Category; 5] = [
        Category::BlockingCall,
        Category::TaskCpuSampled,
        Category::RunQueueDelay,
        Category::LongPoll,
        Category::BlockInPlace,
    ];

    /// How the category is shown everywhere.
    pub const fn info(self) -> CategoryInfo {
        let (label, short, mark, legend, folded_root, sampled) = match self {
            Category::BlockingCall => (
                "blocking call",
                "block",
                'B',
                "blocking",
                Some("[blocked: blocking call]"),
                false,
            ),
            Category::TaskCpuSampled => (
                "on CPU (sampled)",
                "cpu",
                'C',
                "on CPU",
                Some("[on CPU: sampled]"),
                true,
            ),
            Category::RunQueueDelay => (
                "run-queue delay (victim)",
                "runq",
                'r',
                "run-queue",
                Some("[waiting for a CPU: run-queue delay]"),
                false,
            ),
            Category::LongPoll => ("long poll (exact)", "poll", 'P', "long poll", None, false),
            Category::BlockInPlace => (
                "block_in_place",
                "bip",
                'i',
                "block_in_place",
                Some("[block_in_place]"),
                false,
            ),
        };
        CategoryInfo {
            label,
            short,
            mark,
            legend,
            folded_root,
            sampled,
        }
    }

    /// Short label for tables.
    pub fn label(self) -> &'static str {
        self.info().label
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
    /// The whole stack, innermost first (shared by the findings of the
    /// same stack of addresses).
    pub stack: Arc<[Frame]>,
    /// Run-queue delays: the task that held the CPU the worker waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<CpuHolder>,
    /// The Tokio task the worker was polling (its id), when the target's
    /// task ids are tracked and it was in a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<u64>,
    /// A blocking call: the system call the worker slept in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<SleepCall>,
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
    /// It is a thread of hud itself (its own cost, not another process).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hud_itself: bool,
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
            hud_itself: h.tgid == std::process::id(),
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
    /// Events of watched threads that never showed a role, when
    /// discovery found the workers by their stacks (a pool thread
    /// carrying the workers' name before any stack of it was seen): no
    /// finding, as a pool thread's.
    #[serde(default)]
    pub non_worker_events: u64,
    /// Exact polls: long polls left out, their time off CPU unknown (the
    /// scheduler tracepoints missed a switch while a uprobe program ran).
    #[serde(default)]
    pub untimed_polls: u64,
    /// Without the executable's symbols: sleeps over the threshold that
    /// no finding was made of (a park and a blocking call look alike).
    #[serde(default)]
    pub withheld_waits: u64,
    /// Without the executable's symbols: cpu-clock samples that no
    /// finding was made of (task code and the runtime's look alike).
    #[serde(default)]
    pub withheld_samples: u64,
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
    /// Only thread-level facts are findings (see
    /// [`Detector::thread_level_only`]).
    thread_level: bool,
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
    /// The stack reaches the frame its thread started in: it is whole.
    pub reached_entry: bool,
    /// The stack goes through Tokio's `Runtime::block_on` or
    /// `Handle::block_on` (a `current_thread` runtime's loop inlined there,
    /// or a plain thread's wait on a multi-thread runtime).
    pub block_on: bool,
}

impl Summary {
    /// The summary of a symbolized stack.
    pub fn of(frames: &[Frame]) -> Self {
        let classes: Vec<FrameClass> = frames.iter().map(class_of).collect();
        Self::from_classes(&classes, |i| frames[i].function.clone())
    }

    /// The summary of a stack of a thread known to run a `current_thread`
    /// runtime: its `Runtime::block_on` frame is that runtime's loop (a
    /// build without debug info inlines the loop's own frames into it).
    pub fn of_current_thread(frames: &[Frame]) -> Self {
        let classes: Vec<FrameClass> = frames
            .iter()
            .map(|f| {
                let mut c = class_of(f);
                if c.block_on {
                    c.worker_loop = true;
                    c.flavor = Some(Flavor::CurrentThread);
                }
                c
            })
            .collect();
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
            block_in_place: inside_task_loop(classes).iter().any(|c| c.block_in_place),
            bare: classes.iter().all(|c| c.runtime && !c.tokio),
            reached_entry: classes.iter().any(|c| c.thread_entry),
            block_on: classes.iter().any(|c| c.block_on),
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

/// The frames inside the outermost loop that runs tasks (innermost
/// first), or every frame when none does: a `block_in_place` there is a
/// task's, while one below it is where the thread was started (the
/// thread that took over a worker's core runs the worker's loop in a
/// closure that `block_in_place` made).
fn inside_task_loop(classes: &[FrameClass]) -> &[FrameClass] {
    match classes.iter().rposition(|c| c.worker_loop) {
        Some(outermost) => &classes[..outermost],
        None => classes,
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
            thread_level: false,
        }
    }

    /// The executable has no symbols (stripped, no debug file): a
    /// worker's park and a blocking call, the runtime's code and a task's,
    /// a worker and a blocking-pool thread of the same name all look
    /// alike, so no stack can be checked. Only run-queue delays, a fact
    /// about a thread whatever it runs, become findings; sleeps and
    /// samples are counted as withheld ([`Tally::withheld_waits`],
    /// [`Tally::withheld_samples`]).
    pub fn thread_level_only(&mut self) {
        self.thread_level = true;
    }

    /// True when only thread-level facts are findings.
    pub fn is_thread_level(&self) -> bool {
        self.thread_level
    }

    /// Exact polls are timed: long-poll events arrive, for the instances
    /// of Tokio's poll at `sites`.
    pub fn time_polls(&mut self, sites: RuntimeSites) {
        self.polls = Some(PollCulprits::new(sites));
    }

    /// Feeds one event with its symbolized stack; returns the findings it
    /// completes.
    pub fn feed(&mut self, ev: &RawEvent, stack: Vec<Frame>) -> Vec<Finding> {
        self.feed_summarized(ev, Summary::of(&stack), || stack.into())
    }

    /// Feeds one event by the summary of its stack; `stack` is called only
    /// when a finding keeps the frames. A finding takes the role its
    /// thread had at the time; one whose stack was cut short before any
    /// loop takes the role the thread showed last, or waits for one.
    pub fn feed_summarized(
        &mut self,
        ev: &RawEvent,
        summary: Summary,
        stack: impl FnOnce() -> Arc<[Frame]>,
    ) -> Vec<Finding> {
        match ev.kind {
            // A holder's stack names a culprit for a finding (the session
            // joins them); it is no finding of its own, and says nothing
            // of the waiting worker's role (`tid` is the worker's).
            Kind::Holder => return Vec::new(),
            Kind::Poll => return self.long_poll(ev).into_iter().collect(),
            Kind::Blocked | Kind::RunQueue | Kind::Sample => {}
        }
        if self.thread_level {
            return self
                .thread_level_event(ev, &summary, stack)
                .into_iter()
                .collect();
        }
        if self.loop_inlined_into_block_on(ev.tid, &summary) {
            let frames = stack();
            return self.feed_with_role(ev, Summary::of_current_thread(&frames), || frames);
        }
        self.feed_with_role(ev, summary, stack)
    }

    /// A stack that shows no loop but goes through `Runtime::block_on`, of
    /// a thread seen running a `current_thread` runtime: the loop's frames
    /// were inlined there (cargo's default release build).
    fn loop_inlined_into_block_on(&self, tid: u32, summary: &Summary) -> bool {
        summary.flavor.is_none()
            && summary.block_on
            && self.roles.workers().get(&tid) == Some(&Flavor::CurrentThread)
    }

    /// [`Detector::feed_summarized`] for a worker's or a pool thread's
    /// event: the role its stack shows, or the one its thread had.
    fn feed_with_role(
        &mut self,
        ev: &RawEvent,
        summary: Summary,
        stack: impl FnOnce() -> Arc<[Frame]>,
    ) -> Vec<Finding> {
        let mut out = Vec::new();
        let seen = summary.role();
        if let Some(role) = seen {
            self.roles.learn(&ev.stack, role);
            let released = self.roles.observe(ev.tid, role);
            self.tally.blocking_pool_events += released.pool_events;
            out.extend(released.findings);
        }
        if seen.is_none() && summary.reached_entry {
            // A whole stack, from where its thread started, through no
            // loop: the thread ran neither a runtime's tasks nor the
            // pool's then (a plain thread watched on probation).
            self.roles.observe_plain(ev.tid, &ev.stack);
            self.tally.non_worker_events += 1;
            return out;
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
            Some(_) => {
                self.roles.credit(ev.tid, role);
                out.push(f);
            }
            None => self.roles.hold(f),
        }
        out
    }

    /// An event without the executable's symbols: a run-queue delay is a
    /// finding of its thread; a sleep or a sample is counted, withheld.
    fn thread_level_event(
        &mut self,
        ev: &RawEvent,
        summary: &Summary,
        stack: impl FnOnce() -> Arc<[Frame]>,
    ) -> Option<Finding> {
        match ev.kind {
            Kind::Blocked => {
                self.tally.blocked_events += 1;
                self.tally.withheld_waits += 1;
                None
            }
            Kind::Sample => {
                self.tally.samples += 1;
                self.tally.withheld_samples += 1;
                None
            }
            _ => self.worker_event(ev, summary, stack),
        }
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
        stack: impl FnOnce() -> Arc<[Frame]>,
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
            task_id: ev.task_id,
            call: ev.call,
        })
    }

    /// A cpu-clock sample: in task code, one sampling period of CPU for
    /// its culprit (inside `block_in_place`, for that row).
    fn sample(
        &mut self,
        ev: &RawEvent,
        summary: &Summary,
        stack: impl FnOnce() -> Arc<[Frame]>,
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
            task_id: ev.task_id,
            call: None,
        })
    }

    /// Exact polls: one poll ran on CPU longer than the threshold; its
    /// length is its time on CPU, its stack the samples' taken in it.
    fn long_poll(&mut self, ev: &RawEvent) -> Option<Finding> {
        let (polls, span) = (self.polls.as_ref()?, ev.poll?);
        // The blocking pool's closures run in a poll too (a
        // `spawn_blocking` task's): only a worker's poll holds up a runtime.
        if !self.roles.is_worker_now(ev.tid) {
            match self.roles.current(ev.tid) {
                Some(Role::Pool) => self.tally.blocking_pool_events += 1,
                _ => self.tally.non_worker_events += 1,
            }
            return None;
        }
        self.roles.credit(ev.tid, self.roles.current(ev.tid));
        self.tally.long_polls += 1;
        Some(Finding {
            category: Category::LongPoll,
            tid: ev.tid,
            start_ns: ev.start_ns,
            duration_ns: ev.duration_ns,
            stack: polls.stack_for(ev, span).into(),
            holder: None,
            task_id: ev.task_id,
            call: None,
        })
    }

    /// The session ends: findings of cut stacks still waiting for their
    /// thread's role (see [`Roles::flush`]).
    pub fn flush(&mut self) -> Vec<Finding> {
        let end = self.roles.flush();
        self.tally.blocking_pool_events += end.pool_events;
        self.tally.non_worker_events += end.non_worker_events;
        end.findings
    }
}

#[cfg(test)]
mod roles_tests;
#[cfg(test)]
mod tests;
