//! What a worker's stack says: task code, Tokio's own idle parking, or the
//! blocking pool; and which frame is the culprit.
//!
//! The rules look at frame names only, so they hold for any Tokio program:
//! runtime frames come from std/core/alloc, libc, tokio, parking_lot and
//! futures; the culprit is the innermost frame outside them.

use crate::symbols::Frame;

/// Where a worker was when the event happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Running (or blocked in) a task's own code.
    TaskCode,
    /// Tokio's scheduler parking or driving I/O/timers: idle, not blocked.
    RuntimeIdle,
    /// A blocking-pool thread (spawn_blocking): allowed to block.
    BlockingPool,
    /// Neither: the runtime's own bookkeeping, or nothing recognizable.
    Other,
}

const RUNTIME_PREFIXES: [&str; 9] = [
    "std::",
    "core::",
    "alloc::",
    "tokio::",
    "parking_lot",
    "futures",
    "<std::",
    "<core::",
    "<alloc::",
];

/// True for a frame of the runtime or the system, not of the program.
pub fn is_runtime_frame(f: &Frame) -> bool {
    let name = f.function.as_str();
    if name.starts_with("[unknown]") {
        return true;
    }
    if let Some(m) = &f.module {
        let base = m.rsplit('/').next().unwrap_or(m);
        if base.starts_with("libc.so")
            || base.starts_with("libpthread")
            || base.starts_with("ld-linux")
        {
            return true;
        }
    }
    let trimmed = name.trim_start_matches('<');
    RUNTIME_PREFIXES
        .iter()
        .any(|p| name.starts_with(p) || trimmed.starts_with(p.trim_start_matches('<')))
        || name.starts_with("__")
        || name.starts_with("<tokio::")
        || name.starts_with("<futures")
}

fn has(frames: &[Frame], needle: &str) -> bool {
    frames.iter().any(|f| f.function.contains(needle))
}

/// Frames of a worker's own scheduler loop.
pub fn is_worker_stack(frames: &[Frame]) -> bool {
    has(frames, "scheduler::multi_thread::worker")
}

/// Frames of the blocking pool without a worker loop.
pub fn is_blocking_pool(frames: &[Frame]) -> bool {
    has(frames, "blocking::pool::Inner::run") && !is_worker_stack(frames)
}

/// Tokio frames that mean "nothing to do": parking and driving I/O/timers.
fn is_idle_frame(name: &str) -> bool {
    [
        "park",
        "Driver::turn",
        "driver::Driver",
        "io::driver",
        "time::Driver",
        "epoll_wait",
    ]
    .iter()
    .any(|p| name.contains(p))
}

/// Classifies a stack (innermost first).
pub fn place(frames: &[Frame]) -> Place {
    if is_blocking_pool(frames) {
        return Place::BlockingPool;
    }
    // The innermost frame that is not std/libc decides: user code, or a
    // tokio frame that is (or is not) idle parking.
    for f in frames {
        let name = f.function.as_str();
        if !is_runtime_frame(f) {
            return if is_worker_stack(frames) {
                Place::TaskCode
            } else {
                Place::Other
            };
        }
        let tokio = name.starts_with("tokio::") || name.starts_with("<tokio::");
        if tokio {
            if is_idle_frame(name) {
                return Place::RuntimeIdle;
            }
            if name.contains("task::") || name.contains("run_task") {
                // The first runtime frame outward is task machinery: no user
                // frame below it means the task's poll is tokio code itself.
                return Place::Other;
            }
        }
    }
    Place::Other
}

/// The program's frames, innermost first, up to the runtime's poll loop.
pub fn user_frames(frames: &[Frame]) -> Vec<&Frame> {
    frames.iter().filter(|f| !is_runtime_frame(f)).collect()
}

/// The culprit: the innermost frame of the program itself.
pub fn culprit(frames: &[Frame]) -> Option<&Frame> {
    frames.iter().find(|f| !is_runtime_frame(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> Frame {
        Frame {
            function: name.into(),
            file: Some("src/x.rs".into()),
            line: Some(3),
            module: None,
            inlined: false,
        }
    }

    fn stack(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| f(n)).collect()
    }

    const WORKER_TAIL: [&str; 4] = [
        "tokio::runtime::task::harness::Harness<T,S>::poll",
        "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
        "tokio::runtime::scheduler::multi_thread::worker::Context::run",
        "std::thread::Builder::spawn_unchecked_::{{closure}}",
    ];

    #[test]
    fn sleep_in_task_code_is_the_culprit() {
        let mut names = vec![
            "clock_nanosleep",
            "std::thread::sleep",
            "app::handler::load_config",
            "app::handler::{{closure}}",
        ];
        names.extend(WORKER_TAIL);
        let mut s = stack(&names);
        // clock_nanosleep has no runtime prefix, but it comes from libc.
        s[0].module = Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into());
        assert_eq!(place(&s), Place::TaskCode);
        assert_eq!(culprit(&s).unwrap().function, "app::handler::load_config");
        let names: Vec<_> = user_frames(&s)
            .iter()
            .map(|f| f.function.as_str())
            .collect();
        assert_eq!(
            names,
            ["app::handler::load_config", "app::handler::{{closure}}"]
        );
    }

    #[test]
    fn parking_is_idle() {
        let s = stack(&[
            "syscall",
            "std::sys::pal::unix::futex::futex_wait",
            "tokio::runtime::scheduler::multi_thread::park::Inner::park_condvar",
            "tokio::runtime::scheduler::multi_thread::park::Parker::park",
            "tokio::runtime::scheduler::multi_thread::worker::Context::park_timeout",
            "tokio::runtime::scheduler::multi_thread::worker::Context::run",
        ]);
        let mut s = s;
        s[0].module = Some("/lib/x86_64-linux-gnu/libc.so.6".into());
        assert_eq!(place(&s), Place::RuntimeIdle);
    }

    #[test]
    fn blocking_pool_is_not_a_worker() {
        let s = stack(&[
            "std::thread::sleep",
            "app::slow_io",
            "tokio::runtime::blocking::pool::Inner::run",
            "std::thread::Builder::spawn_unchecked_::{{closure}}",
        ]);
        assert_eq!(place(&s), Place::BlockingPool);
        let mut names = vec!["app::slow_io", "tokio::runtime::blocking::pool::Inner::run"];
        names.extend(WORKER_TAIL);
        assert_eq!(
            place(&stack(&names)),
            Place::TaskCode,
            "block_in_place on a worker"
        );
    }

    #[test]
    fn unknown_and_bare_stacks_are_other() {
        assert_eq!(place(&[Frame::unknown(1)]), Place::Other);
        assert_eq!(
            place(&stack(&["app::main"])),
            Place::Other,
            "not on a worker"
        );
        assert!(culprit(&[Frame::unknown(1)]).is_none());
    }
}
