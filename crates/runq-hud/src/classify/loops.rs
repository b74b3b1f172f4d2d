//! The frames of a loop that runs a runtime's tasks, told from the frames
//! of the same files that any thread calls to hand a runtime work.
//!
//! A thread runs a runtime's tasks inside its scheduler's loop: a
//! multi-thread worker's `run`/`Context::run`/`run_task`, a
//! `current_thread` runtime's `block_on` (its `CoreGuard` loop), a
//! `LocalSet`'s `run_until`/`tick`. The same source files also hold what
//! other threads call to wake or spawn a task on that runtime
//! (`current_thread::Handle::wake`, `multi_thread::worker`'s
//! `schedule_task`, a `LocalSet`'s `Shared::schedule`): a blocking-pool
//! thread whose closure sends on a channel passes through them, and is no
//! worker. So a frame counts as a loop's by its own function's name, from
//! a list of the loop's functions, never by its file or module alone.

use crate::symbols::Frame;

use super::Flavor;

/// The functions of a multi-thread worker's loop
/// (`scheduler/multi_thread/worker.rs`): `run` (the thread's entry and
/// `Context::run`), running a task, and what only the loop calls.
const MULTI_THREAD_LOOP: [&str; 18] = [
    "run",
    "run_task",
    "maintenance",
    "park",
    "park_yield",
    "park_internal",
    "maintain_local_timers_before_parking",
    "maintain_local_timers_after_parking",
    "tick",
    "next_task",
    "next_local_task",
    "steal_work",
    "transition_to_searching",
    "transition_from_searching",
    "transition_to_parked",
    "transition_from_parked",
    "pre_shutdown",
    "tune_global_queue_interval",
];

/// The functions of a `current_thread` runtime's loop
/// (`scheduler/current_thread/mod.rs`): `block_on` (the runtime's and its
/// `CoreGuard`'s), entering its context, running a task, and what only
/// the loop calls. Not `Handle::wake`, `schedule`, `spawn`.
const CURRENT_THREAD_LOOP: [&str; 13] = [
    "block_on",
    "take_core",
    "enter",
    "run_task",
    "park",
    "park_yield",
    "park_internal",
    "tick",
    "next_task",
    "next_local_task",
    "push_task",
    "submit_metrics",
    "wake_deferred_tasks_and_free",
];

/// The functions of a `LocalSet` running its tasks (`task/local.rs`):
/// `run_until` (and its `RunUntil` future's `poll`), the `LocalSet` polled
/// as a future, `tick`. Not `spawn_local` or `Shared::schedule`, nor
/// `LocalSet::block_on`, which only hands `run_until` to a runtime's
/// `block_on` (actix-web's workers: their loop is the `current_thread`
/// runtime's).
const LOCAL_SET_LOOP: [&str; 5] = ["run_until", "poll", "tick", "next_task", "pop_local"];

/// A function's name split into its path and its own name: generic
/// arguments dropped, `<T as Trait>::f` read as `T::f`, and anonymous
/// segments (`{closure#0}`, `{{closure}}`, `{async_fn#0}`) left out, so
/// a closure goes by the function it is in.
pub(super) fn split_name(function: &str) -> (String, String) {
    let plain = without_generics(function);
    let mut segments: Vec<&str> = plain
        .split("::")
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    let own = segments.pop().unwrap_or("").to_string();
    (segments.join("::"), own)
}

/// `function` without its generic arguments; a leading `<T as Trait>`
/// becomes `T`.
fn without_generics(function: &str) -> String {
    let mut rest = function;
    let mut out = String::with_capacity(function.len());
    if let Some(inner) = function.strip_prefix('<') {
        let (mut depth, mut self_end, mut close) = (0usize, None, None);
        for (i, c) in inner.char_indices() {
            match c {
                '<' => depth += 1,
                '>' if depth == 0 => {
                    close = Some(i);
                    break;
                }
                '>' => depth -= 1,
                ' ' if depth == 0 && self_end.is_none() && inner[i..].starts_with(" as ") => {
                    self_end = Some(i);
                }
                _ => {}
            }
        }
        if let Some(close) = close {
            out.push_str(&top_level(&inner[..self_end.unwrap_or(close)]));
            rest = &inner[close + 1..];
        }
    }
    out.push_str(&top_level(rest));
    out
}

/// The characters of `s` outside any `<...>`.
fn top_level(s: &str) -> String {
    let mut depth = 0usize;
    s.chars()
        .filter(|c| {
            match c {
                '<' => depth += 1,
                '>' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

/// True when the frame's source file has `file` in its path, or its
/// function's path has `module` in it.
fn in_module(f: &Frame, path: &str, file: &str, module: &str) -> bool {
    f.file.as_deref().is_some_and(|p| p.contains(file)) || path.contains(module)
}

/// A frame of the blocking pool's thread loop (`blocking::pool::Inner::run`,
/// or the closure of `spawn_thread` that the new thread starts in), not
/// the pool's other functions (`spawn_blocking` from a worker passes
/// through `pool.rs` too).
pub(super) fn is_pool_loop(f: &Frame) -> bool {
    let name = &*f.function;
    if name.starts_with("tokio::runtime::blocking::pool::Spawner::spawn_thread::{") {
        return true;
    }
    let (path, own) = split_name(name);
    own == "run" && in_module(f, &path, "runtime/blocking/pool.rs", "blocking::pool")
}

/// A frame a thread starts in: std's `thread_start` (every thread Rust
/// spawns), libc's `start_thread` or `clone3`, or `__libc_start_main`
/// (the main thread). A stack that reaches one is whole.
pub(super) fn is_thread_entry(f: &Frame) -> bool {
    let (path, own) = split_name(&f.function);
    let std = path.starts_with("std::")
        || f.file
            .as_deref()
            .is_some_and(|p| p.starts_with("/rustc/") || p.contains("/library/std/"));
    match own.as_str() {
        "thread_start" => std,
        "start_thread" | "clone3" | "__clone3" | "__libc_start_main" | "__libc_start_call_main" => {
            true
        }
        _ => false,
    }
}

/// Tokio's `Runtime::block_on` or `Handle::block_on` (`runtime/runtime.rs`,
/// `runtime/handle.rs`), which hand a future to the runtime's own
/// `block_on`: a `current_thread` runtime's loop, or a multi-thread
/// runtime's park of the calling thread.
pub(super) fn is_runtime_block_on(f: &Frame) -> bool {
    let (path, own) = split_name(&f.function);
    own == "block_on"
        && (in_module(
            f,
            &path,
            "src/runtime/runtime.rs",
            "runtime::runtime::Runtime",
        ) || in_module(f, &path, "src/runtime/handle.rs", "runtime::handle::Handle"))
}

/// The flavor of the runtime loop whose function `f` is, if it is one
/// (`tokio`: the frame is tokio's).
pub(super) fn loop_flavor(f: &Frame, tokio: bool) -> Option<Flavor> {
    let (path, own) = split_name(&f.function);
    let own = own.as_str();
    let multi = in_module(
        f,
        &path,
        "scheduler/multi_thread/worker.rs",
        "multi_thread::worker",
    );
    if multi && MULTI_THREAD_LOOP.contains(&own) {
        return Some(Flavor::MultiThread);
    }
    if !tokio {
        return None;
    }
    if in_module(f, &path, "src/task/local.rs", "task::local") && LOCAL_SET_LOOP.contains(&own) {
        return Some(Flavor::LocalSet);
    }
    let current = in_module(f, &path, "scheduler/current_thread/", "current_thread");
    (current && CURRENT_THREAD_LOOP.contains(&own)).then_some(Flavor::CurrentThread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::fixtures::frame;

    #[test]
    fn names_split_into_path_and_own_name() {
        let cases = [
            (
                "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
                "tokio::runtime::scheduler::multi_thread::worker::Context",
                "run_task",
            ),
            (
                "<tokio::runtime::scheduler::current_thread::Handle as tokio::util::wake::Wake>::wake",
                "tokio::runtime::scheduler::current_thread::Handle",
                "wake",
            ),
            (
                "tokio::runtime::scheduler::multi_thread::worker::run::{{closure}}",
                "tokio::runtime::scheduler::multi_thread::worker",
                "run",
            ),
            (
                "block_on<core::pin::Pin<&mut app::main::{async_block_env#0}>>",
                "",
                "block_on",
            ),
            (
                "core::ptr::drop_in_place<tokio::runtime::scheduler::current_thread::CoreGuard>",
                "core::ptr",
                "drop_in_place",
            ),
            (
                "<tokio::task::local::RunUntil<T> as core::future::future::Future>::poll",
                "tokio::task::local::RunUntil",
                "poll",
            ),
            ("{closure#0}", "", ""),
        ];
        for (name, path, own) in cases {
            assert_eq!(
                split_name(name),
                (path.to_string(), own.to_string()),
                "{name}"
            );
        }
    }

    #[test]
    fn a_loops_functions_are_loop_frames_and_its_wakers_are_not() {
        let flavor = |name: &str| loop_flavor(&frame(name), true);
        let mt = "tokio::runtime::scheduler::multi_thread::worker::";
        let ct = "tokio::runtime::scheduler::current_thread::";
        for own in [
            "Context::run",
            "Context::run_task",
            "run::{{closure}}",
            "Context::park_timeout",
        ] {
            let want = (own != "Context::park_timeout").then_some(Flavor::MultiThread);
            assert_eq!(flavor(&format!("{mt}{own}")), want, "{own}");
        }
        assert_eq!(
            flavor(&format!(
                "{mt}<impl tokio::runtime::scheduler::multi_thread::handle::Handle>::schedule_task"
            )),
            None
        );
        assert_eq!(flavor(&format!("{mt}with_current::{{{{closure}}}}")), None);
        assert_eq!(
            flavor(&format!("{ct}CoreGuard::block_on")),
            Some(Flavor::CurrentThread)
        );
        assert_eq!(
            flavor(&format!("{ct}CoreGuard::block_on::{{{{closure}}}}")),
            Some(Flavor::CurrentThread)
        );
        for waker in [
            format!("<{ct}Handle as tokio::util::wake::Wake>::wake"),
            format!("<{ct}Handle as tokio::util::wake::Wake>::wake_by_ref"),
            format!("<alloc::sync::Arc<{ct}Handle> as tokio::runtime::task::Schedule>::schedule"),
            format!("{ct}Handle::spawn"),
            format!("core::ptr::drop_in_place<{ct}CoreGuard>"),
        ] {
            assert_eq!(flavor(&waker), None, "{waker}");
        }
        assert_eq!(
            flavor("<tokio::task::local::RunUntil<T> as core::future::future::Future>::poll"),
            Some(Flavor::LocalSet)
        );
        assert_eq!(
            flavor("<tokio::task::local::Shared as tokio::runtime::task::Schedule>::schedule"),
            None
        );
        assert!(is_thread_entry(&frame(
            "std::sys::pal::unix::thread::Thread::new::thread_start"
        )));
        assert!(is_thread_entry(&frame("start_thread")));
        assert!(!is_thread_entry(&frame("app::thread_start")));
        // A short DWARF name goes by its source file.
        let mut short = frame("run_task");
        short.file = Some(
            "/root/.cargo/registry/src/index.crates.io-1/tokio-1.54.1/src/runtime/scheduler/current_thread/mod.rs".into(),
        );
        assert_eq!(loop_flavor(&short, true), Some(Flavor::CurrentThread));
        short.function = "wake_by_ref".into();
        assert_eq!(loop_flavor(&short, true), None);
    }
}
