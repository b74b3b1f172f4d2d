//! Role decisions on stacks as hud records them (innermost first, the
//! names blazesym gives): a thread is a worker because its stack runs a
//! runtime's task loop, and a pool thread because it runs the blocking
//! pool's, whatever either is called and whichever runtime it wakes.

use std::collections::BTreeMap;

use super::*;
use crate::discovery::{by_stacks, LoopHits, Method, Thread};
use crate::symbols::fixtures::frame;

fn frames(names: &[&str]) -> Vec<Frame> {
    let mut v: Vec<Frame> = names.iter().map(|n| frame(n)).collect();
    if let Some(leaf) = v.first_mut() {
        leaf.module = Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into());
    }
    v
}

/// Where a blocking-pool thread starts, outermost last.
const POOL_BASE: [&str; 5] = [
    "tokio::runtime::blocking::pool::Task::run",
    "tokio::runtime::blocking::pool::Inner::run",
    "tokio::runtime::blocking::pool::Spawner::spawn_thread::{{closure}}",
    "std::sys::backtrace::__rust_begin_short_backtrace",
    "std::thread::Builder::spawn_unchecked_::{{closure}}",
];

/// A `spawn_blocking` closure of the program, polled as the pool polls
/// its tasks.
const POOL_TASK: [&str; 4] = [
    "<tokio::runtime::blocking::task::BlockingTask<T> as core::future::future::Future>::poll",
    "tokio::runtime::task::core::Core<T,S>::poll",
    "tokio::runtime::task::harness::Harness<T,S>::poll",
    "tokio::runtime::task::raw::poll",
];

/// A pool thread that hands its result to a task on a `current_thread`
/// runtime (actix-web's `web::block`): it wakes that runtime, inside
/// `current_thread::Handle::wake`, which is in the runtime's own source.
fn pool_thread_waking_a_current_thread_runtime() -> Vec<Frame> {
    let mut v = vec![
        "syscall",
        "tokio::runtime::park::Inner::unpark",
        "tokio::runtime::driver::Handle::unpark",
        "<tokio::runtime::scheduler::current_thread::Handle as tokio::util::wake::Wake>::wake",
        "tokio::sync::oneshot::Sender<T>::send",
        "app::db::query::{{closure}}",
    ];
    v.extend(POOL_TASK);
    v.extend(POOL_BASE);
    frames(&v)
}

/// The same for a multi-thread runtime: `schedule_task` is in
/// `multi_thread/worker.rs`.
fn pool_thread_waking_a_multi_thread_runtime() -> Vec<Frame> {
    let mut v = vec![
        "syscall",
        "tokio::runtime::scheduler::multi_thread::worker::<impl tokio::runtime::scheduler::multi_thread::handle::Handle>::notify_parked_remote",
        "tokio::runtime::scheduler::multi_thread::worker::with_current::{{closure}}",
        "tokio::runtime::scheduler::multi_thread::worker::<impl tokio::runtime::scheduler::multi_thread::handle::Handle>::schedule_task",
        "tokio::sync::mpsc::chan::Tx<T,S>::send",
        "app::audit::write::{{closure}}",
    ];
    v.extend(POOL_TASK);
    v.extend(POOL_BASE);
    frames(&v)
}

/// An actix-web worker: an arbiter thread in a `current_thread`
/// runtime's `block_on`, its handlers on the `LocalSet` in it.
fn actix_worker(user: &[&str]) -> Vec<Frame> {
    let mut v = vec!["clock_nanosleep", "std::thread::sleep"];
    v.extend(user);
    v.extend([
        "tokio::runtime::task::core::Core<T,S>::poll",
        "tokio::runtime::task::harness::Harness<T,S>::poll",
        "tokio::task::local::LocalSet::tick",
        "<tokio::task::local::RunUntil<T> as core::future::future::Future>::poll",
        "tokio::runtime::scheduler::current_thread::CoreGuard::block_on::{{closure}}",
        "tokio::runtime::scheduler::current_thread::CoreGuard::enter",
        "tokio::runtime::scheduler::current_thread::CoreGuard::block_on",
        "tokio::runtime::scheduler::current_thread::CurrentThread::block_on",
        "tokio::runtime::runtime::Runtime::block_on",
        "tokio::task::local::LocalSet::block_on",
        "actix_rt::runtime::Runtime::block_on",
        "actix_rt::arbiter::Arbiter::with_tokio_rt::{{closure}}",
        "std::thread::Builder::spawn_unchecked_::{{closure}}",
    ]);
    frames(&v)
}

/// A multi-thread worker's task loop, outermost last (without the thread's
/// base).
const WORKER_LOOP: [&str; 4] = [
    "tokio::runtime::task::harness::Harness<T,S>::poll",
    "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
    "tokio::runtime::scheduler::multi_thread::worker::Context::run",
    "tokio::runtime::scheduler::multi_thread::worker::run",
];

fn role(stack: &[Frame]) -> Option<Role> {
    Summary::of(stack).role()
}

fn ev(kind: Kind, tid: u32, start_ms: u64, dur_ms: u64) -> RawEvent {
    RawEvent {
        kind,
        tid,
        start_ns: start_ms * 1_000_000,
        duration_ns: dur_ms * 1_000_000,
        ..RawEvent::default()
    }
}

/// A poll of 40 ms on CPU, timed by `--exact-polls`.
fn long_poll(tid: u32, start_ms: u64) -> RawEvent {
    let mut poll = ev(Kind::Poll, tid, start_ms, 40);
    poll.poll = Some(crate::event::PollSpan {
        wall_ns: 40_000_000,
        fn_ip: 0,
    });
    poll
}

/// Discovery's count of each thread's stacks by role.
fn hits(stacks: &[(u32, Vec<Frame>)]) -> BTreeMap<u32, LoopHits> {
    let mut out: BTreeMap<u32, LoopHits> = BTreeMap::new();
    for (tid, s) in stacks {
        let h = out.entry(*tid).or_default();
        match role(s) {
            Some(Role::Worker(f)) => {
                h.worker += 1;
                h.flavor = Some(f);
            }
            Some(Role::Pool) => h.pool += 1,
            None => h.other += 1,
        }
    }
    out
}

#[test]
fn a_pool_thread_waking_a_runtime_is_pool() {
    for stack in [
        pool_thread_waking_a_current_thread_runtime(),
        pool_thread_waking_a_multi_thread_runtime(),
    ] {
        assert_eq!(role(&stack), Some(Role::Pool), "{stack:#?}");
        let mut d = Detector::new(100, 1);
        d.roles.begin(false, &BTreeMap::new());
        assert!(d.feed(&ev(Kind::RunQueue, 5, 0, 20), stack).is_empty());
        assert_eq!(d.tally.blocking_pool_events, 1);
        assert!(d.roles.workers().is_empty());
    }
}

#[test]
fn a_renamed_pool_thread_is_no_worker_and_its_polls_no_findings() {
    // actix-web's pool threads carry Tokio's default worker name; a
    // runtime named `gw-rt` gives its pool threads that name too. Neither
    // name counts: discovery keeps the threads that ran a task loop.
    let threads = [
        Thread {
            tid: 1,
            comm: "actix-rt|system".into(),
        },
        Thread {
            tid: 2,
            comm: "tokio-rt-worker".into(),
        },
        Thread {
            tid: 3,
            comm: "tokio-rt-worker".into(),
        },
    ];
    let seen = hits(&[
        (1, actix_worker(&["app::index"])),
        (2, pool_thread_waking_a_current_thread_runtime()),
        (3, pool_thread_waking_a_current_thread_runtime()),
        (3, pool_thread_waking_a_multi_thread_runtime()),
    ]);
    let (method, tids) = by_stacks(&threads, &seen).unwrap();
    assert_eq!(method, Method::Stacks(vec!["actix-rt|system".into()]));
    assert_eq!(tids, [1]);
    assert_eq!(seen[&1].flavor, Some(Flavor::CurrentThread));
    // A pool thread of the workers' own name, watched as the pool grew:
    // its offloaded closure's long poll and its cut stacks are no
    // findings, whether or not a stack of it showed the pool first.
    let mut d = Detector::new(100, 1);
    d.time_polls(crate::polls::RuntimeSites::default());
    d.roles
        .begin(false, &BTreeMap::from([(1, Flavor::MultiThread)]));
    assert!(d.feed(&long_poll(7, 10), Vec::new()).is_empty());
    let cut = frames(&["clock_nanosleep", "std::thread::sleep", "app::db::query"]);
    assert!(d.feed(&ev(Kind::Blocked, 7, 60, 30), cut).is_empty());
    let pool = pool_thread_waking_a_multi_thread_runtime();
    assert!(d.feed(&ev(Kind::Sample, 8, 70, 0), pool).is_empty());
    assert!(d.feed(&long_poll(8, 80), Vec::new()).is_empty());
    assert!(d.flush().is_empty());
    assert_eq!(d.tally.long_polls, 0);
    assert_eq!(
        (d.tally.non_worker_events, d.tally.blocking_pool_events),
        (2, 1)
    );
    // The worker's own long poll is one.
    assert_eq!(d.feed(&long_poll(1, 100), Vec::new()).len(), 1);
}

#[test]
fn an_actix_style_worker_is_a_current_thread_worker() {
    let stack = actix_worker(&["app::handlers::index", "app::handlers::index::{{closure}}"]);
    assert_eq!(role(&stack), Some(Role::Worker(Flavor::CurrentThread)));
    let mut d = Detector::new(100, 1);
    d.roles.begin(false, &BTreeMap::new());
    let out = d.feed(&ev(Kind::Blocked, 4, 0, 25), stack);
    assert_eq!(out[0].category, Category::BlockingCall);
    assert_eq!(&*out[0].culprit().unwrap().function, "app::handlers::index");
    assert_eq!(d.roles.workers().get(&4), Some(&Flavor::CurrentThread));
}

#[test]
fn a_block_in_place_hand_off_moves_the_worker_role() {
    let mut d = Detector::new(100, 1);
    d.roles
        .begin(false, &BTreeMap::from([(3, Flavor::MultiThread)]));
    // Thread 3, a worker, runs the login check in block_in_place.
    let mut login = frames(&[
        "clock_nanosleep",
        "std::thread::sleep",
        "app::verify_password",
        "tokio::runtime::scheduler::multi_thread::worker::block_in_place",
        "app::login::{{closure}}",
    ]);
    login.extend(frames(&WORKER_LOOP));
    login.extend(frames(&POOL_TASK));
    login.extend(frames(&POOL_BASE));
    let out = d.feed(&ev(Kind::Blocked, 3, 0, 40), login);
    assert_eq!(out[0].category, Category::BlockInPlace);
    // Thread 4, idle in the pool, takes over the core: it runs the worker
    // loop in a closure of block_in_place, and its task's sleep is a
    // blocking call, not block_in_place.
    let idle = frames(&[
        "syscall",
        "std::sys::sync::condvar::futex::Condvar::wait_timeout",
        "tokio::runtime::blocking::pool::Inner::run",
        "std::thread::Builder::spawn_unchecked_::{{closure}}",
    ]);
    assert!(d.feed(&ev(Kind::Sample, 4, 5, 0), idle).is_empty());
    let mut taken = frames(&["clock_nanosleep", "std::thread::sleep", "app::render"]);
    taken.extend(frames(&WORKER_LOOP));
    taken.extend(frames(&[
        "tokio::runtime::scheduler::multi_thread::worker::block_in_place::{{closure}}::{{closure}}",
    ]));
    taken.extend(frames(&POOL_TASK));
    taken.extend(frames(&POOL_BASE));
    let out = d.feed(&ev(Kind::Blocked, 4, 10, 30), taken);
    assert_eq!(out[0].category, Category::BlockingCall);
    assert_eq!(&*out[0].culprit().unwrap().function, "app::render");
    // Thread 3, done, joins the pool: what it does there is no finding.
    let slow = frames(&["clock_nanosleep", "std::thread::sleep", "app::slow"]);
    let mut pooled = slow.clone();
    pooled.extend(frames(&POOL_TASK));
    pooled.extend(frames(&POOL_BASE));
    assert!(d.feed(&ev(Kind::Blocked, 3, 50, 30), pooled).is_empty());
    assert!(
        d.feed(&ev(Kind::Blocked, 3, 90, 30), slow).is_empty(),
        "cut, last in the pool"
    );
    assert!(d.flush().is_empty());
    let workers: Vec<u32> = d.roles.workers().keys().copied().collect();
    assert_eq!(workers, [3, 4], "both ran the loop");
    assert!(d.roles.is_worker_now(4) && !d.roles.is_worker_now(3));
}

#[test]
fn a_plain_threads_whole_stack_is_no_finding_whatever_its_addresses() {
    let entry = "std::sys::pal::unix::thread::Thread::new::thread_start";
    let mut d = Detector::new(100, 1);
    d.roles.begin(false, &BTreeMap::new());
    // A worker's whole stack: its thread's start (address 100) is
    // learned as a worker's path.
    let mut worker = actix_worker(&["app::index"]);
    worker.push(frame(entry));
    let mut w = ev(Kind::Blocked, 4, 0, 25);
    w.stack = vec![1, 2, 3, 100];
    assert_eq!(d.feed(&w, worker).len(), 1);
    // A plain thread (a client, watched on probation) sleeps: its stack
    // is whole, through no loop, so it is no worker's, although its
    // deepest address is one a worker's stack went through.
    let client = frames(&[
        "clock_nanosleep",
        "std::thread::sleep",
        "app::client",
        entry,
    ]);
    let mut c = ev(Kind::Blocked, 9, 30, 25);
    c.stack = vec![7, 8, 100];
    assert!(d.feed(&c, client).is_empty());
    assert!(d.flush().is_empty());
    assert!(!d.roles.listed(9));
    assert_eq!(d.tally.non_worker_events, 1);
}
