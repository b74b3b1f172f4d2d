//! The detector on fixture stacks: categories, roles over a thread's
//! life, block_in_place, stacks cut short, current_thread runtimes.

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

/// A whole stack through `Runtime::block_on` and no loop frame (cargo's
/// default release build inlines a `current_thread` runtime's loop into
/// it): a finding of a thread seen running that runtime, no role for the
/// main thread that waits on a multi-thread runtime's `block_on`.
#[test]
fn a_loop_inlined_into_block_on_is_its_threads_runtime() {
    let mut d = Detector::new(100, 1);
    let whole = |user: &str, thread: &str| {
        vec![
            frame("syscall"),
            frame("<std::sys::sync::mutex::futex::Mutex>::lock_contended"),
            frame(user),
            frame("tokio::runtime::context::scoped::Scoped<T>::set"),
            frame("tokio::runtime::runtime::Runtime::block_on"),
            frame(thread),
            frame("<std::sys::thread::unix::Thread>::new::thread_start"),
        ]
    };
    let parked = vec![
        frame("tokio::runtime::scheduler::current_thread::Context::park"),
        frame("tokio::runtime::runtime::Runtime::block_on"),
        frame("app::audit_thread"),
    ];
    assert!(d.feed(&ev(Kind::Blocked, 9, 0, 20), parked).is_empty());
    let out = d.feed(
        &ev(Kind::Blocked, 9, 30, 20),
        whole("app::flush", "app::audit_thread"),
    );
    assert_eq!(out.len(), 1, "the flush of the current_thread runtime");
    assert_eq!(out[0].category, Category::BlockingCall);
    let main = whole("app::report", "app::main");
    assert!(d.feed(&ev(Kind::Blocked, 1, 30, 20), main).is_empty());
    assert!(
        !d.roles.listed(1),
        "the main thread in block_on is no worker"
    );
    assert_eq!(d.tally.non_worker_events, 1);
}

#[test]
fn every_category_has_its_own_names_and_marks() {
    let infos: Vec<CategoryInfo> = Category::ALL.iter().map(|c| c.info()).collect();
    for (i, a) in infos.iter().enumerate() {
        for b in &infos[i + 1..] {
            assert!(a.label != b.label && a.short != b.short && a.mark != b.mark);
            assert!(a.folded_root.is_none() || a.folded_root != b.folded_root);
        }
    }
    // Only a long poll's time is left out of folded output (its CPU time
    // is in the samples); only sampled CPU has no interval length.
    let left_out: Vec<Category> = Category::ALL
        .into_iter()
        .filter(|c| c.info().folded_root.is_none())
        .collect();
    assert_eq!(left_out, [Category::LongPoll]);
    let sampled: Vec<Category> = Category::ALL
        .into_iter()
        .filter(|c| c.info().sampled)
        .collect();
    assert_eq!(sampled, [Category::TaskCpuSampled]);
}

#[test]
fn without_symbols_only_run_queue_delays_are_findings() {
    // A stripped executable: every frame is an offset, the park and a
    // blocking call look alike.
    let mut d = Detector::new(100, 1);
    d.thread_level_only();
    assert!(d.is_thread_level());
    let unknown = vec![frame("syscall"), frame("svc+0x103947")];
    assert!(d
        .feed(&ev(Kind::Blocked, 7, 0, 188), unknown.clone())
        .is_empty());
    assert!(d
        .feed(&ev(Kind::Sample, 7, 200, 0), unknown.clone())
        .is_empty());
    let waited = d.feed(&ev(Kind::RunQueue, 7, 300, 12), unknown);
    assert_eq!(waited.len(), 1);
    assert_eq!(waited[0].category, Category::RunQueueDelay);
    assert_eq!(
        (d.tally.withheld_waits, d.tally.withheld_samples),
        (1, 1),
        "{:?}",
        d.tally
    );
    assert_eq!((d.tally.blocked_events, d.tally.samples), (1, 1));
    assert!(d.flush().is_empty());
}
