//! What a worker's stack says: task code, Tokio's own idle parking, or the
//! blocking pool; and which frame is the culprit.
//!
//! The rules look at frame names only, so they hold for any Tokio program:
//! runtime frames come from std/core/alloc, libc, tokio, parking_lot and
//! futures; the culprit is the innermost frame outside them.

mod loops;
mod memo;

use serde::{Deserialize, Serialize};

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

const RUNTIME_PREFIXES: [&str; 8] = [
    "std::",
    "core::",
    "alloc::",
    "tokio::",
    "parking_lot",
    "futures",
    "mio::",
    "lock_api::",
];

/// Third-party crates that are part of the async runtime, not the program.
const RUNTIME_CRATES: [&str; 9] = [
    "tokio",
    "parking_lot",
    "parking_lot_core",
    "lock_api",
    "futures-util",
    "futures-core",
    "futures-executor",
    "mio",
    "crossbeam-utils",
];

/// The crate a frame's source file belongs to: `std` for the standard
/// library (sources under /rustc/ or .../library/), the crate name for
/// files under a cargo registry or git checkout, `None` for the program.
pub fn crate_of(f: &Frame) -> Option<String> {
    let file = f.file.as_deref()?;
    if file.starts_with("/rustc/")
        || file.contains("/library/std/")
        || file.contains("/library/core/")
        || file.contains("/library/alloc/")
    {
        return Some("std".into());
    }
    let rest = file
        .split_once("/.cargo/registry/src/")
        .map(|(_, r)| r.split_once('/').map_or(r, |(_, r)| r))
        .or_else(|| file.split_once("/.cargo/git/checkouts/").map(|(_, r)| r))?;
    let dir = rest.split('/').next()?;
    // "tokio-1.54.1" -> "tokio": drop the trailing version.
    let name = match dir.rsplit_once('-') {
        Some((n, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => n,
        _ => dir,
    };
    Some(name.to_string())
}

/// True for a frame of the runtime or the system, not of the program.
pub fn is_runtime_frame(f: &Frame) -> bool {
    let name: &str = &f.function;
    if name.starts_with("[unknown]") {
        return true;
    }
    if let Some(m) = &f.module {
        let base = m.rsplit('/').next().unwrap_or(m);
        if ["libc.so", "libpthread", "ld-linux", "linux-vdso", "[vdso]"]
            .iter()
            .any(|p| base.starts_with(p))
        {
            return true;
        }
    }
    if let Some(krate) = crate_of(f) {
        return krate == "std" || RUNTIME_CRATES.contains(&krate.as_str());
    }
    if f.file.is_some() {
        return false; // the program's own source
    }
    let trimmed = name.trim_start_matches('<');
    RUNTIME_PREFIXES.iter().any(|p| trimmed.starts_with(p)) || name.starts_with("__")
}

fn is_tokio_frame(f: &Frame) -> bool {
    crate_of(f).as_deref() == Some("tokio")
        || f.function.trim_start_matches('<').starts_with("tokio::")
}

/// Tokio's `Core::poll` (or its closure), the frame a task's future is
/// polled from, and inlined into when the future's `poll` is.
fn is_task_poll_frame(f: &Frame) -> bool {
    f.file
        .as_deref()
        .is_some_and(|p| p.ends_with("runtime/task/core.rs"))
        || (f.function.contains("task::core::Core") && f.function.contains("::poll"))
}

/// A frame of Tokio's `block_in_place`: the worker handed its core to
/// another thread and runs blocking code in place.
fn is_block_in_place_frame(f: &Frame) -> bool {
    f.function.contains("block_in_place")
        || f.file
            .as_deref()
            .is_some_and(|p| p.ends_with("scheduler/block_in_place.rs"))
}

/// Tokio frames that mean "nothing to do": parking and driving I/O/timers.
fn is_idle_frame(f: &Frame) -> bool {
    let file = f.file.as_deref().unwrap_or("");
    [
        "park.rs",
        "/io/driver",
        "runtime/driver.rs",
        "/time/mod.rs",
        "/time/driver",
    ]
    .iter()
    .any(|p| file.contains(p))
        || [
            "park",
            "Driver::turn",
            "driver::Driver",
            "io::driver",
            "time::Driver",
        ]
        .iter()
        .any(|p| f.function.contains(p))
}

/// What the rules need to know of one frame; computing it reads the
/// frame's names and paths, so callers that see the same addresses again
/// keep it per address.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameClass {
    /// Runtime, std, libc: not the program.
    pub runtime: bool,
    /// A tokio frame.
    pub tokio: bool,
    /// A tokio frame that parks or drives I/O and timers.
    pub idle: bool,
    /// A loop that runs a runtime's tasks: a multi-thread worker's, a
    /// `current_thread` runtime's `block_on`, or a `LocalSet`'s.
    pub worker_loop: bool,
    /// Which of those it is (`None` for any other frame).
    pub flavor: Option<Flavor>,
    /// The blocking pool's thread loop.
    pub pool_loop: bool,
    /// Tokio's `block_in_place`.
    pub block_in_place: bool,
    /// Tokio's `Core::poll`, which polls a task's future: without debug
    /// info for its inlined frames, the future's code is this frame.
    pub task_poll: bool,
    /// The frame the thread started in: a stack that reaches it is whole.
    pub thread_entry: bool,
    /// Tokio's `Runtime::block_on` or `Handle::block_on`: a
    /// `current_thread` runtime's loop where the build inlined the loop
    /// into it, or a plain thread waiting on a multi-thread runtime.
    pub block_on: bool,
    /// Its source file is the program's own: known, and neither the
    /// standard library's nor a registry or git crate's.
    pub program_source: bool,
}

/// The kind of loop that runs a worker's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavor {
    /// A worker of a multi-thread runtime.
    MultiThread,
    /// A thread inside a `current_thread` runtime's `block_on`.
    CurrentThread,
    /// A `LocalSet` (its tasks run on the thread that polls it).
    LocalSet,
}

impl Flavor {
    /// The name the report prints.
    pub fn label(self) -> &'static str {
        match self {
            Flavor::MultiThread => "multi_thread",
            Flavor::CurrentThread => "current_thread",
            Flavor::LocalSet => "LocalSet",
        }
    }
}

/// Classifies one frame (computed once per frame; see [`memo`]).
pub fn class_of(f: &Frame) -> FrameClass {
    memo::class(f, classify)
}

/// Classifies one frame from its names and paths.
fn classify(f: &Frame) -> FrameClass {
    let tokio = is_tokio_frame(f);
    let flavor = loops::loop_flavor(f, tokio);
    FrameClass {
        runtime: is_runtime_frame(f),
        tokio,
        idle: tokio && is_idle_frame(f),
        worker_loop: flavor.is_some(),
        flavor,
        pool_loop: loops::is_pool_loop(f),
        block_in_place: tokio && is_block_in_place_frame(f),
        task_poll: tokio && is_task_poll_frame(f),
        thread_entry: loops::is_thread_entry(f),
        block_on: tokio && loops::is_runtime_block_on(f),
        program_source: f.file.is_some() && crate_of(f).is_none(),
    }
}

/// The flavor of the outermost task-running loop on a stack (innermost
/// first): a `LocalSet` inside a multi-thread worker is the worker's.
pub fn flavor_of_stack(classes: &[FrameClass]) -> Option<Flavor> {
    classes.iter().rev().find_map(|c| c.flavor)
}

/// Classifies a stack (innermost first).
pub fn place(frames: &[Frame]) -> Place {
    let classes: Vec<FrameClass> = frames.iter().map(class_of).collect();
    place_of(&classes)
}

/// Classifies a stack from its frames' classes (innermost first).
pub fn place_of(classes: &[FrameClass]) -> Place {
    let worker = classes.iter().any(|c| c.worker_loop);
    if !worker && classes.iter().any(|c| c.pool_loop) {
        return Place::BlockingPool;
    }
    // The innermost frame that is not std/libc decides: program code, or a
    // tokio frame that is (or is not) idle parking. std code called right
    // from the frame that polls a task's future is the future's own (its
    // code was inlined there, or it tail-called std: a `thread::sleep` as
    // its last statement leaves no frame of its own).
    for (i, c) in classes.iter().enumerate() {
        if !c.runtime {
            return if worker {
                Place::TaskCode
            } else {
                Place::Other
            };
        }
        if c.tokio {
            return match (c.idle, c.task_poll && worker && i > 0) {
                (true, _) => Place::RuntimeIdle,
                (false, true) => Place::TaskCode,
                (false, false) => Place::Other,
            };
        }
    }
    Place::Other
}

/// The task whose future was inlined into Tokio's poll on `frames`
/// (innermost first): the program's type in the poll frame's generic
/// parameters, which debug info names (`poll<app::handler::{async_fn_env#0}>`
/// gives `app::handler`).
pub fn inlined_task(frames: &[Frame]) -> Option<String> {
    frames
        .iter()
        .filter(|f| class_of(f).task_poll)
        .find_map(|f| task_in_generics(&f.function))
}

/// The task a stack was polling, named by its future: the future type
/// among the generics of Tokio's poll frame when the debug info names it,
/// else the outermost frame outside the runtime inside the innermost task
/// poll (the task's own async fn or block, or a library's connection
/// future), without its closure or async environment suffix. `None` when
/// the stack shows no task poll.
pub fn task_future(frames: &[Frame]) -> Option<String> {
    if let Some(task) = inlined_task(frames) {
        return Some(task);
    }
    let poll = frames.iter().position(|f| class_of(f).task_poll)?;
    let outer = frames[..poll].iter().rev().find(|f| !class_of(f).runtime)?;
    Some(without_env(&outer.function))
}

/// A path without its closure or async environment segments
/// (`app::serve::{{closure}}` is `app::serve`).
fn without_env(path: &str) -> String {
    path.split("::")
        .take_while(|seg| !seg.starts_with('{'))
        .collect::<Vec<_>>()
        .join("::")
}

/// The first program path among a name's generic parameters, without its
/// closure or async environment suffix.
fn task_in_generics(name: &str) -> Option<String> {
    let (_, params) = name.split_once('<')?;
    let first = params.split([',', '<', '>']).next()?.trim();
    let krate = first.split("::").next()?;
    if ["std", "core", "alloc", "tokio"].contains(&krate) || !first.contains("::") {
        return None;
    }
    Some(without_env(first))
}

/// Where a worker was, from a stack cut short before any loop: the
/// innermost frame outside std and the system decides (program code, or a
/// tokio frame that is or is not idle parking); a stack of only std and
/// system frames is `Other`.
pub fn place_of_cut(classes: &[FrameClass]) -> Place {
    for c in classes {
        if !c.runtime {
            return Place::TaskCode;
        }
        if c.tokio {
            return if c.idle {
                Place::RuntimeIdle
            } else {
                Place::Other
            };
        }
    }
    Place::Other
}

/// The program's frames, innermost first, up to the runtime's poll loop.
pub fn user_frames(frames: &[Frame]) -> Vec<&Frame> {
    frames.iter().filter(|f| !class_of(f).runtime).collect()
}

/// The culprit: the innermost frame of the program itself.
pub fn culprit(frames: &[Frame]) -> Option<&Frame> {
    frames.iter().find(|f| !class_of(f).runtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::fixtures::frame as f;

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
        assert_eq!(
            culprit(&s).unwrap().function.as_ref(),
            "app::handler::load_config"
        );
        let names: Vec<_> = user_frames(&s).iter().map(|f| &*f.function).collect();
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
    fn crates_are_read_from_source_paths() {
        assert_eq!(crate_of(&f("tokio::x")).as_deref(), Some("tokio"));
        assert_eq!(crate_of(&f("std::x")).as_deref(), Some("std"));
        assert_eq!(crate_of(&f("app::x")), None);
        let reqwest = Frame {
            file: Some(
                "/root/.cargo/registry/src/index.crates.io-1/reqwest-0.12.4/src/blocking/client.rs"
                    .into(),
            ),
            ..f("send")
        };
        assert_eq!(crate_of(&reqwest).as_deref(), Some("reqwest"));
        assert!(
            !is_runtime_frame(&reqwest),
            "third-party libraries can be culprits"
        );
        let short_std = Frame {
            function: "wait_timeout<()>".into(),
            ..f("std::x")
        };
        assert!(
            is_runtime_frame(&short_std),
            "short DWARF names are classified by path"
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

    #[test]
    fn a_sleep_tail_called_from_a_future_inlined_into_tokios_poll_is_task_code() {
        // No frame of the program: its async fn was inlined into Tokio's
        // poll, and its last call (the sleep) was a tail call.
        let mut s = stack(&[
            "clock_nanosleep",
            "std::thread::sleep",
            "tokio::runtime::task::core::Core<T,S>::poll::{{closure}}",
            "tokio::runtime::task::harness::Harness<T,S>::poll",
        ]);
        s.extend(stack(&WORKER_TAIL[1..]));
        s[0].module = Some("/lib/x86_64-linux-gnu/libc.so.6".into());
        assert_eq!(place(&s), Place::TaskCode);
        assert!(culprit(&s).is_none());
        // With debug info, the poll frame's generic parameter names the task.
        s[2].function =
            "poll<app::handlers::report::{async_fn_env#0}<u8>, alloc::sync::Arc<x>>".into();
        s[2].file = Some(
            "/root/.cargo/registry/src/index.crates.io-1/tokio-1.54.1/src/runtime/task/core.rs"
                .into(),
        );
        assert_eq!(inlined_task(&s).as_deref(), Some("app::handlers::report"));
        assert_eq!(task_future(&s).as_deref(), Some("app::handlers::report"));
        // Tokio's own frames elsewhere are not task code.
        let timer = stack(&[
            "std::sync::Mutex::lock",
            "tokio::runtime::time::entry::TimerEntry::reset",
            "tokio::runtime::scheduler::multi_thread::worker::Context::run",
        ]);
        assert_eq!(place(&timer), Place::Other);
    }

    #[test]
    fn a_task_is_named_by_its_outermost_frame_inside_the_innermost_poll() {
        let mut s = stack(&[
            "std::thread::sleep",
            "app::load",
            "app::serve::{{closure}}::{{closure}}",
            "tokio::runtime::task::core::Core<T,S>::poll::{{closure}}",
            "tokio::runtime::task::harness::Harness<T,S>::poll",
        ]);
        s.extend(stack(&WORKER_TAIL[1..]));
        // A block_on in the program's main, below the loop, is no task.
        s.extend(stack(&["app::main", "std::rt::lang_start"]));
        assert_eq!(task_future(&s).as_deref(), Some("app::serve"));
        // No task poll on the stack (the runtime's own code, or cut short).
        assert_eq!(task_future(&s[..2]), None);
    }
}
