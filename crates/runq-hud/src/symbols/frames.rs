//! Frames from blazesym's results: DWARF's inlined callees and their
//! caller, with the symbol table's qualified name on the outermost one,
//! and inlined closures and async bodies named by their full path.
//!
//! Line-tables-only DWARF (`debug = "line-tables-only"`, which many
//! release profiles use) names an inlined function by its last path
//! segment alone (`{closure#1}`), with no namespace and no linkage name.
//! The path of a closure or async body is still on the stack: the
//! functions that call it are generic over its type, and their names carry
//! it (`sum<FilterMap<.., app::handlers::import::{closure_env#1}>, u64>`).

use std::sync::Arc;

use super::Frame;
use crate::classify::crate_of;

/// Puts the symbol table's qualified name on the outermost DWARF frame (or
/// makes a frame of it when DWARF had nothing).
pub(super) fn merge_names(
    mut frames: Vec<Frame>,
    elf_name: Option<Arc<str>>,
    elf_module: Option<Arc<str>>,
    addr: u64,
    file_offset: Option<u64>,
) -> Vec<Frame> {
    match (frames.last_mut(), elf_name) {
        (Some(outer), Some(name)) => outer.function = name,
        (None, Some(name)) => frames.push(Frame {
            function: name,
            file: None,
            line: None,
            module: elf_module,
            inlined: false,
        }),
        (Some(_), None) => {}
        (None, None) => frames.push(match (elf_module, file_offset) {
            (Some(m), Some(off)) => Frame::in_object(m, off),
            _ => Frame::unknown(addr),
        }),
    }
    frames
}

/// Rust's last path segment of an anonymous function, and the one of its
/// environment's type.
const ANONYMOUS: [(&str, &str); 3] = [
    ("{closure#", "{closure_env#"),
    ("{async_fn#", "{async_fn_env#"),
    ("{async_block#", "{async_block_env#"),
];

/// Names each inlined closure or async body of `frames` (innermost first,
/// one address's inline chain and its caller) by its full path, when the
/// names of the frames around it give one: its callers' first (the nearest
/// that names exactly one path), then its callees'. A path must be of the
/// crate the frame's source file belongs to, and not be one of the frame's
/// own generic parameters (the closure of a function generic over another
/// closure: `spawn_unchecked`'s `{closure#0}<app::main::{closure_env#0}>`).
/// Where no frame gives one, a library's closure is named by the module of
/// its source file (`hashbrown::map::{closure#0}<…>`).
pub(super) fn qualify_inlined(frames: &mut [Frame]) {
    for i in 0..frames.len() {
        if !frames[i].inlined {
            continue;
        }
        let outward = frames[i + 1..].iter();
        let inward = frames[..i].iter().rev();
        let this = &frames[i];
        let path = outward
            .chain(inward)
            .find_map(|f| path_of(&this.function, &f.function).filter(|p| fits(this, p)))
            .or_else(|| library_module_of_anonymous(this));
        if let Some(path) = path {
            frames[i].function = format!("{path}::{}", frames[i].function).into();
        }
    }
}

/// Names each inlined named function of `frames` that DWARF gives by its
/// short name alone (`clock_ns`) by the module of the nearest caller in
/// the same source file: a function defined in a file is of that file's
/// module. A method is named by its module too, without its type: the
/// file does not say which `impl` it is in.
pub(super) fn qualify_named(frames: &mut [Frame]) {
    for i in 0..frames.len() {
        let this = &frames[i];
        let short = &*this.function;
        let plain = !short.contains("::") && !short.starts_with(['{', '<', '[']);
        if !this.inlined || !plain || this.file.is_none() {
            continue;
        }
        let module = frames[i + 1..]
            .iter()
            .filter(|f| f.file == this.file)
            .find_map(|f| module_of(&f.function))
            .filter(|m| fits(this, m));
        if let Some(module) = module {
            frames[i].function = format!("{module}::{}", frames[i].function).into();
        }
    }
}

/// Names each inlined closure or async body that the names around it
/// left bare (`{closure#0}`: called in place, so no generic function
/// carries its type) by the function that encloses it: its caller in the
/// inline chain, in the same source file, is where it is defined
/// (`app::auth::derive_key::{closure#0}`). Run after [`qualify_inlined`]
/// and [`qualify_named`], which give the caller its path; a bare name of
/// one function is never merged with another's.
pub(super) fn qualify_enclosed(frames: &mut [Frame]) {
    for i in 0..frames.len().saturating_sub(1) {
        let (this, caller) = (&frames[i], &frames[i + 1]);
        let bare = ANONYMOUS.iter().any(|(a, _)| this.function.starts_with(a));
        if !this.inlined || !bare || this.file.is_none() || this.file != caller.file {
            continue;
        }
        let path = caller.function.split('<').next().unwrap_or_default();
        let named = !path.is_empty() && path.contains("::") && !path.starts_with('{');
        if named && fits(this, path) {
            frames[i].function = format!("{path}::{}", frames[i].function).into();
        }
    }
}

/// Names each inlined closure or async body still bare once a whole
/// stack is put together (innermost first) by a frame of another
/// address that names its path in its generic arguments: a thread's
/// closure inlined into `__rust_begin_short_backtrace` is named by the
/// `std::thread` closure generic over it two frames out
/// (`…::{closure#0}<app::client::start::{closure_env#0}, ()>`). The
/// search ends at the next frame of the same source file: that is the
/// code the closure is defined in (see [`qualify_enclosed`]), and a path
/// further out would be another closure's.
pub(super) fn qualify_across(frames: &mut [Frame]) {
    for i in 0..frames.len() {
        let this = &frames[i];
        let bare = ANONYMOUS.iter().any(|(a, _)| this.function.starts_with(a));
        if !this.inlined || !bare || this.file.is_none() {
            continue;
        }
        let end = frames[i + 1..]
            .iter()
            .position(|f| f.file == this.file)
            .map_or(frames.len(), |k| i + 2 + k);
        let path = frames[i + 1..end]
            .iter()
            .find_map(|f| path_of(&this.function, &f.function).filter(|p| fits(this, p)));
        if let Some(path) = path {
            frames[i].function = format!("{path}::{}", frames[i].function).into();
        }
    }
    qualify_enclosed(frames);
}

/// The module of a qualified function name (`app::handlers::render` or
/// `app::handlers::Store::load::{closure#0}`: `app::handlers`): the path
/// before its generic arguments, less its anonymous segments, its own
/// name and the type it is a method of (segments in CamelCase). None for
/// a trait method's `<T as Trait>` path.
fn module_of(name: &str) -> Option<String> {
    if name.starts_with('<') {
        return None;
    }
    let path = name.split('<').next()?.trim_end_matches("::");
    let mut segments: Vec<&str> = path.split("::").collect();
    while segments.last().is_some_and(|s| s.starts_with('{')) {
        segments.pop();
    }
    segments.pop()?;
    while segments
        .last()
        .is_some_and(|s| s.starts_with(char::is_uppercase))
    {
        segments.pop();
    }
    (!segments.is_empty()).then(|| segments.join("::"))
}

/// The module of a library's source file that holds `frame`'s anonymous
/// function: `…/library/std/src/thread/mod.rs` is `std::thread`, and
/// `…/hashbrown-0.16.1/src/map.rs` (a registry's or the standard library's
/// vendored sources) is `hashbrown::map`. None for a named function, and
/// for a file of no versioned crate directory (the program's own).
fn library_module_of_anonymous(frame: &Frame) -> Option<String> {
    if !ANONYMOUS.iter().any(|(a, _)| frame.function.starts_with(a)) {
        return None;
    }
    let file = frame.file.as_deref()?.strip_suffix(".rs")?;
    let (dir, rest) = file.rsplit_once("/src/")?;
    let dir = dir.rsplit('/').next()?;
    let krate = match file.contains("/library/") && !dir.contains('-') {
        true => dir,
        false => {
            let (name, version) = dir.rsplit_once('-')?;
            version
                .starts_with(|c: char| c.is_ascii_digit())
                .then_some(name)?
        }
    };
    let mut segments = vec![krate.replace('-', "_")];
    segments.extend(rest.split('/').map(str::to_string));
    if matches!(segments.last().map(String::as_str), Some("lib" | "mod")) {
        segments.pop();
    }
    let plain = segments
        .iter()
        .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    plain.then(|| segments.join("::"))
}

/// True when `path` can be the path of `frame`'s anonymous function: of
/// the crate its source file belongs to (the standard library's for its
/// sources, any other for the program's), and not in its own name.
fn fits(frame: &Frame, path: &str) -> bool {
    if frame.function.contains(path) {
        return false;
    }
    let krate = path.trim_start_matches('<').split("::").next();
    let std = matches!(krate, Some("std" | "core" | "alloc"));
    match crate_of(frame) {
        Some(c) if c == "std" => std,
        Some(c) => krate == Some(c.replace('-', "_").as_str()),
        None => !std,
    }
}

/// The one path that `name` gives the anonymous function `short` (itself
/// or its environment's type, as `PATH::{closure_env#1}`) in its generic
/// arguments, if `short` is one and `name` gives exactly one. The name's
/// own path is not one: `app::login::{closure#0}` is the caller, and a
/// `{closure#0}` it calls is not it.
fn path_of(short: &str, name: &str) -> Option<String> {
    let (segment, env) = ANONYMOUS.iter().find(|(a, _)| short.starts_with(a))?;
    let index = short[segment.len()..].split('}').next()?;
    let mut found: Option<&str> = None;
    let generic = |at: usize| {
        let before = &name.as_bytes()[..at];
        let opened = before.iter().filter(|c| **c == b'<').count();
        opened > before.iter().filter(|c| **c == b'>').count()
    };
    for seg in [format!("::{segment}{index}}}"), format!("::{env}{index}}}")] {
        for (at, _) in name
            .match_indices(seg.as_str())
            .filter(|(at, _)| generic(*at))
        {
            let Some(path) = path_before(name, at) else {
                continue;
            };
            if found.is_some_and(|p| p != path) {
                return None;
            }
            found = Some(path);
        }
    }
    found.map(str::to_string)
}

/// The path that ends at byte `end` of `name`: back over identifiers,
/// `::`, `{impl#N}` segments and whole `<...>` groups, to the start of the
/// name or a character that cannot be in a path at its level.
fn path_before(name: &str, end: usize) -> Option<&str> {
    let bytes = name.as_bytes();
    let (mut start, mut depth) = (end, 0usize);
    while start > 0 {
        let c = bytes[start - 1];
        match c {
            b'>' => depth += 1,
            b'<' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            b'_' | b':' | b'{' | b'}' | b'#' => {}
            _ if c.is_ascii_alphanumeric() => {}
            _ => break,
        }
        start -= 1;
    }
    let path = &name[start..end];
    (depth == 0 && !path.is_empty() && !path.starts_with(':')).then_some(path)
}

/// `file:line` of a DWARF code location.
fn code_location(
    ci: Option<&blazesym::symbolize::CodeInfo<'_>>,
) -> (Option<Arc<str>>, Option<u32>) {
    match ci {
        Some(ci) => {
            let file = match &ci.dir {
                Some(d) => d.join(&*ci.file).display().to_string(),
                None => ci.file.to_string_lossy().into_owned(),
            };
            (Some(file.into()), ci.line)
        }
        None => (None, None),
    }
}

/// Frames of one DWARF result: inlined callees (innermost first), then the
/// function they were inlined into.
pub(super) fn dwarf_frames(
    sym: &blazesym::symbolize::Sym<'_>,
    module: Option<Arc<str>>,
) -> Vec<Frame> {
    let mut frames: Vec<Frame> = sym
        .inlined
        .iter()
        .rev()
        .map(|f| {
            let (file, line) = code_location(f.code_info.as_ref());
            Frame {
                function: Arc::from(&*f.name),
                file,
                line,
                module: module.clone(),
                inlined: true,
            }
        })
        .collect();
    let (file, line) = code_location(sym.code_info.as_deref());
    frames.push(Frame {
        function: Arc::from(&*sym.name),
        file,
        line,
        module,
        inlined: false,
    });
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of frames, innermost first; `inlined` gives which are.
    fn chain(names: &[(&str, bool)]) -> Vec<Frame> {
        names
            .iter()
            .map(|(n, inlined)| Frame {
                function: Arc::from(*n),
                file: None,
                line: None,
                module: None,
                inlined: *inlined,
            })
            .collect()
    }

    fn names(frames: &[Frame]) -> Vec<&str> {
        frames.iter().map(|f| &*f.function).collect()
    }

    #[test]
    fn an_inlined_closure_is_named_by_the_path_its_callers_give() {
        // The filter_map closure of a handler, inlined through the
        // iterator adapters (as line-tables-only DWARF names them).
        let mut frames = chain(&[
            ("{closure#1}", true),
            ("call_mut<(&[u8]), app::handlers::import::{closure_env#1}>", true),
            (
                "sum<core::iter::adapters::filter_map::FilterMap<core::slice::iter::Split<u8, app::handlers::import::{closure_env#0}>, app::handlers::import::{closure_env#1}>, u64>",
                true,
            ),
            ("app::handlers::import", false),
        ]);
        qualify_inlined(&mut frames);
        assert_eq!(
            frames[0].function.as_ref(),
            "app::handlers::import::{closure#1}"
        );
        assert!(frames[1].function.starts_with("call_mut<"));
    }

    #[test]
    fn an_inlined_async_body_is_named_by_a_callee_that_names_it() {
        let mut frames = chain(&[
            (
                "spawn_blocking<app::handlers::archive::{async_fn#0}::{closure_env#0}, u64>",
                true,
            ),
            ("{async_fn#0}", true),
            ("tokio::runtime::task::raw::poll", false),
        ]);
        qualify_inlined(&mut frames);
        assert_eq!(
            frames[1].function.as_ref(),
            "app::handlers::archive::{async_fn#0}"
        );
    }

    #[test]
    fn the_nearest_caller_wins_and_paths_keep_their_generic_groups() {
        let mut frames = chain(&[
            ("{closure#0}", true),
            (
                "map<<app::Store<u8> as app::Load>::load::{closure_env#0}>",
                true,
            ),
            ("for_each<app::other::{closure_env#0}>", true),
            ("app::other", false),
        ]);
        qualify_inlined(&mut frames);
        assert_eq!(
            frames[0].function.as_ref(),
            "<app::Store<u8> as app::Load>::load::{closure#0}"
        );
    }

    #[test]
    fn a_library_closure_generic_over_the_programs_is_named_by_its_own_file() {
        // std's thread-spawn closure, generic over the program's closure:
        // a callee names the program's closure type, with the same index.
        let mut frames = chain(&[
            (
                "__rust_begin_short_backtrace<app::start::{closure_env#0}, ()>",
                true,
            ),
            ("{closure#0}<app::start::{closure_env#0}, ()>", true),
            ("std::thread::lifecycle::spawn_unchecked", false),
        ]);
        frames[1].file = Some(Arc::from(
            "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/thread/lifecycle.rs",
        ));
        qualify_inlined(&mut frames);
        assert_eq!(
            frames[1].function.as_ref(),
            "std::thread::lifecycle::{closure#0}<app::start::{closure_env#0}, ()>"
        );
        // A closure of the standard library is named by a std path only.
        let mut frames = chain(&[
            ("{closure#1}", true),
            ("call<app::f::{closure_env#1}>", true),
            ("app::f", false),
        ]);
        frames[0].file = Some(Arc::from("/rustc/abc/library/core/src/iter/mod.rs"));
        qualify_inlined(&mut frames);
        assert_eq!(frames[0].function.as_ref(), "core::iter::{closure#1}");
    }

    #[test]
    fn a_library_closure_no_frame_names_is_named_by_its_source_file() {
        // hashbrown's `extend` closure, vendored by the standard library
        // (an axum router's routes), generic over the program's closure.
        let short = "{closure#0}<axum::routing::RouteId, axum::routing::path_router::{impl#1}::with_state::{closure_env#0}<(), false, ()>>";
        let mut frames = chain(&[(short, true), ("axum::routing::Router::with_state", false)]);
        frames[0].file = Some(Arc::from("/rust/deps/hashbrown-0.16.1/src/map.rs"));
        qualify_inlined(&mut frames);
        assert_eq!(
            frames[0].function.as_ref(),
            format!("hashbrown::map::{short}")
        );
        // A registry crate's module file; the program's own file (no
        // versioned crate directory) and a named function keep their names.
        let mut frames = chain(&[
            ("{async_block#2}", true),
            ("{closure#0}", true),
            ("tick", true),
            ("app::f", false),
        ]);
        frames[0].file = Some(Arc::from("/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-util-0.7.1/src/time/mod.rs"));
        frames[1].file = Some(Arc::from("/work/app/src/handlers.rs"));
        frames[2].file = Some(Arc::from(
            "/root/.cargo/registry/src/x/tokio-1.0.0/src/time.rs",
        ));
        qualify_inlined(&mut frames);
        assert_eq!(
            names(&frames)[..3],
            ["tokio_util::time::{async_block#2}", "{closure#0}", "tick"]
        );
    }

    #[test]
    fn no_path_or_two_paths_in_one_name_leave_the_short_name() {
        let mut frames = chain(&[
            ("{closure#2}", true),
            ("{closure#0}", true),
            ("zip<a::f::{closure_env#0}, b::g::{closure_env#0}>", true),
            ("clock_ns", true),
            ("app::main", false),
        ]);
        qualify_inlined(&mut frames);
        assert_eq!(
            names(&frames)[..2],
            ["{closure#2}", "{closure#0}"],
            "{frames:?}"
        );
        // A closure's index is matched whole: #1 is not #10.
        let mut frames = chain(&[
            ("{closure#1}", true),
            ("call<a::f::{closure_env#10}>", true),
            ("a::f", false),
        ]);
        qualify_inlined(&mut frames);
        assert_eq!(frames[0].function.as_ref(), "{closure#1}");
    }

    #[test]
    fn an_inlined_function_is_named_by_its_callers_module_in_the_same_file() {
        let file = |f: &mut Frame, path: &str| f.file = Some(Arc::from(path));
        let mut frames = chain(&[
            ("clock_ns", true),
            ("timed<u64>", true),
            ("app::handlers::Store::render::{closure#0}", false),
        ]);
        file(&mut frames[0], "/src/app/src/handlers.rs");
        file(&mut frames[1], "/src/app/src/timing.rs");
        file(&mut frames[2], "/src/app/src/handlers.rs");
        qualify_named(&mut frames);
        assert_eq!(
            names(&frames)[..2],
            ["app::handlers::clock_ns", "timed<u64>"]
        );
        // In another file than every caller, or under a trait method's
        // path, the short name stays.
        let mut frames = chain(&[("clock_ns", true), ("<app::A as app::B>::f", false)]);
        file(&mut frames[0], "/src/app/src/handlers.rs");
        file(&mut frames[1], "/src/app/src/handlers.rs");
        qualify_named(&mut frames);
        assert_eq!(frames[0].function.as_ref(), "clock_ns");
        let mut frames = chain(&[("clock_ns", true), ("app::other::f", false)]);
        file(&mut frames[0], "/src/app/src/handlers.rs");
        file(&mut frames[1], "/src/app/src/other.rs");
        qualify_named(&mut frames);
        assert_eq!(frames[0].function.as_ref(), "clock_ns");
    }

    #[test]
    fn a_closure_called_in_place_is_named_by_its_enclosing_function() {
        let file = |f: &mut Frame, path: &str| f.file = Some(Arc::from(path));
        // A key derivation's closure, called where it is defined and
        // inlined into it; the function itself inlined into the handler.
        let mut frames = chain(&[
            ("{closure#0}", true),
            ("derive_key", true),
            ("app::auth::login::{closure#0}", false),
        ]);
        for f in frames.iter_mut() {
            file(f, "/src/app/src/auth.rs");
        }
        qualify_inlined(&mut frames);
        qualify_named(&mut frames);
        qualify_enclosed(&mut frames);
        assert_eq!(
            names(&frames)[..2],
            [
                "app::auth::derive_key::{closure#0}",
                "app::auth::derive_key"
            ]
        );
        // Another function's closure of the same short name stays apart;
        // one whose caller is in another file (a library calling it) or
        // has no path is left as it is.
        let mut other = chain(&[("{closure#0}", true), ("app::auth::parse<u8>", false)]);
        file(&mut other[0], "/src/app/src/auth.rs");
        file(&mut other[1], "/src/app/src/auth.rs");
        qualify_enclosed(&mut other);
        assert_eq!(other[0].function.as_ref(), "app::auth::parse::{closure#0}");
        let mut lib = chain(&[("{closure#0}", true), ("std::thread::spawn", false)]);
        file(&mut lib[0], "/src/app/src/main.rs");
        file(&mut lib[1], "/rustc/x/library/std/src/thread/mod.rs");
        qualify_enclosed(&mut lib);
        assert_eq!(lib[0].function.as_ref(), "{closure#0}");
        let mut short = chain(&[("{closure#0}", true), ("run", false)]);
        file(&mut short[0], "/src/app/src/main.rs");
        file(&mut short[1], "/src/app/src/main.rs");
        qualify_enclosed(&mut short);
        assert_eq!(short[0].function.as_ref(), "{closure#0}");
    }

    #[test]
    fn a_thread_closure_is_named_by_the_spawn_closure_two_frames_out() {
        let client = "/src/app/src/client.rs";
        let std = "/rustc/0123/library/std/src/sys/backtrace.rs";
        let at = |name: &str, file: &str, inlined: bool| Frame {
            function: name.into(),
            file: Some(file.into()),
            line: Some(1),
            module: None,
            inlined,
        };
        let mut frames = vec![
            at("{closure#0}", client, true),
            at("{closure#0}", client, true),
            at(
                "std::sys::backtrace::__rust_begin_short_backtrace",
                std,
                false,
            ),
            at(
                "std::thread::lifecycle::{closure#0}<app::client::start::{closure_env#0}, ()>",
                std,
                false,
            ),
        ];
        qualify_across(&mut frames);
        assert_eq!(
            names(&frames)[..2],
            [
                "app::client::start::{closure#0}::{closure#0}",
                "app::client::start::{closure#0}"
            ]
        );
        // A closure passed to a function of another file: the next frame
        // of its own file encloses it and names it; none further out does.
        let (handlers, lib) = ("/src/app/src/handlers.rs", "/src/app/src/lib.rs");
        let mut frames = vec![
            at("{closure#0}", handlers, true),
            at("app::Truth::time", lib, false),
            at(
                "{async_fn#0}<app::handlers::compile::{async_fn#0}::{closure_env#0}>",
                handlers,
                true,
            ),
            at("other<app::handlers::load::{closure_env#0}>", lib, false),
        ];
        qualify_across(&mut frames);
        assert_eq!(
            names(&frames)[0],
            "app::handlers::compile::{async_fn#0}::{closure#0}"
        );
    }

    #[test]
    fn the_module_of_a_name_leaves_out_closures_types_and_generics() {
        assert_eq!(module_of("app::h::render").as_deref(), Some("app::h"));
        assert_eq!(
            module_of("app::h::Store::load::{closure#0}").as_deref(),
            Some("app::h")
        );
        assert_eq!(module_of("app::h::f<app::X>").as_deref(), Some("app::h"));
        assert_eq!(module_of("main"), None);
        assert_eq!(module_of("<app::A as app::B>::f"), None);
    }
}
