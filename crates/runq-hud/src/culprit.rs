//! Which frame of a stack a user should fix: the innermost frame of the
//! program's own code, not a library's leaf. A stack such as
//! `sqlite3VdbeExec ← sqlite3_step ← rusqlite::Statement::query_row ←
//! service::scan_orders ← tokio …` names `service::scan_orders`, with the
//! way into the library (`rusqlite … → sqlite3VdbeExec`) beside it.
//!
//! The program's own crates are, by a rule that holds for binaries built
//! with cargo's defaults (symbols, no debug info): the crate whose `main`
//! the executable's symbol table holds (`service::main`), any crate named
//! with `--app-crate`, and, where debug info gives source paths, every
//! frame whose file lies outside the cargo registry and the standard
//! library (the workspace's own crates). A stack with none of them falls
//! back to its innermost frame outside the runtime.

use std::collections::BTreeSet;
use std::path::Path;

use object::{Object, ObjectSymbol};

use crate::classify::class_of;
use crate::symbols::Frame;

/// Crates that are never the program's own, whatever defines a `main`.
const NOT_APP: [&str; 6] = ["std", "core", "alloc", "tokio", "test", "proc_macro"];

/// The program's own crates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppCode {
    crates: BTreeSet<String>,
}

impl AppCode {
    /// The crates named (`--app-crate`, or a saved report's list); a `-`
    /// in a name is read as `_`, as rustc does.
    pub fn named<I: IntoIterator<Item = String>>(names: I) -> Self {
        AppCode {
            crates: names.into_iter().map(|n| n.replace('-', "_")).collect(),
        }
    }

    /// The crates of the executable at `exe` whose `main` it defines, and
    /// `extra`.
    pub fn of_executable(exe: &Path, extra: &[String]) -> Self {
        let mut app = AppCode::named(extra.iter().cloned());
        app.crates.extend(main_crates(exe));
        app
    }

    /// The crates, sorted.
    pub fn crates(&self) -> Vec<String> {
        self.crates.iter().cloned().collect()
    }

    /// True for a frame of the program's own code.
    pub fn is_app(&self, f: &Frame) -> bool {
        if let Some(krate) = name_crate(&f.function) {
            if self.crates.contains(krate) {
                return true;
            }
        }
        // Debug info: a source file outside the registry and std is the
        // program's (a workspace crate).
        let c = class_of(f);
        c.program_source && !c.runtime
    }

    /// The index of the culprit frame in `frames` (innermost first): the
    /// innermost program frame, else the innermost frame outside the
    /// runtime; `None` when the stack holds nothing but the runtime.
    pub fn culprit_index(&self, frames: &[Frame]) -> Option<usize> {
        frames
            .iter()
            .position(|f| self.is_app(f))
            .or_else(|| frames.iter().position(|f| !class_of(f).runtime))
    }

    /// The way from the culprit at `idx` into the code it called, when the
    /// culprit is not the leaf: the first library below it and the leaf,
    /// e.g. `rusqlite … → sqlite3VdbeExec`, or just the leaf.
    pub fn path_below(&self, frames: &[Frame], idx: usize) -> Option<String> {
        let inner = frames.get(..idx)?;
        let leaf = inner.first()?;
        let entry = inner.last()?;
        let entry_name = name_crate(&entry.function)
            .map(str::to_string)
            .unwrap_or_else(|| entry.function.to_string());
        Some(if inner.len() == 1 {
            leaf.function.to_string()
        } else {
            format!("{entry_name} … → {}", leaf.function)
        })
    }
}

/// The crate a demangled function name starts with (`service` for
/// `service::scan_orders`, `<service::Db as Trait>::f` and closures in
/// it); `None` for C names.
pub fn name_crate(function: &str) -> Option<&str> {
    let s = function.trim_start_matches(['<', '&', '*']);
    let s = s.strip_prefix("dyn ").unwrap_or(s);
    let (first, _) = s.split_once("::")?;
    (!first.is_empty() && first.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(first)
}

/// Crates `c` for which the symbol table has `c::main` (the binary's own
/// crate: Rust's `main` calls it through `std::rt::lang_start`).
fn main_crates(exe: &Path) -> BTreeSet<String> {
    let Ok(data) = crate::mapped::MappedFile::open(exe) else {
        return BTreeSet::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return BTreeSet::new();
    };
    file.symbols()
        .filter_map(|s| s.name().ok())
        .filter(|n| n.contains("4main"))
        .filter_map(|n| {
            let shown = format!("{:#}", rustc_demangle::try_demangle(n).ok()?);
            let krate = shown.strip_suffix("::main")?;
            let ok = !krate.contains("::") && !NOT_APP.contains(&krate);
            ok.then(|| krate.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of a binary built with cargo's defaults: a symbol, no
    /// file:line.
    fn frame(name: &str) -> Frame {
        Frame {
            function: name.into(),
            file: None,
            line: None,
            module: Some("/srv/service".into()),
            inlined: false,
        }
    }

    fn stack(names: &[&str]) -> Vec<Frame> {
        let mut v: Vec<Frame> = names.iter().map(|n| frame(n)).collect();
        v.push(frame("tokio::runtime::task::harness::Harness<T,S>::poll"));
        v.push(frame(
            "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
        ));
        v
    }

    fn service() -> AppCode {
        AppCode::named(["service".to_string()])
    }

    #[test]
    fn the_app_frame_above_a_c_library_is_the_culprit() {
        let s = stack(&[
            "sqlite3VdbeExec",
            "sqlite3_step",
            "rusqlite::statement::Statement::query_row",
            "service::scan_orders",
            "service::handle::{{closure}}",
        ]);
        let app = service();
        let i = app.culprit_index(&s).unwrap();
        assert_eq!(&*s[i].function, "service::scan_orders");
        assert_eq!(
            app.path_below(&s, i).unwrap(),
            "rusqlite … → sqlite3VdbeExec"
        );
    }

    #[test]
    fn the_app_frame_above_a_rust_dependency_is_the_culprit() {
        let s = stack(&[
            "flate2::zio::Writer<W,D>::write",
            "<service::Compressor as std::io::Write>::write",
            "service::handle",
        ]);
        let app = service();
        let i = app.culprit_index(&s).unwrap();
        assert_eq!(
            &*s[i].function,
            "<service::Compressor as std::io::Write>::write"
        );
        assert_eq!(
            app.path_below(&s, i).unwrap(),
            "flate2::zio::Writer<W,D>::write"
        );
    }

    #[test]
    fn a_runtime_only_stack_has_no_culprit() {
        let s = stack(&["std::thread::park", "tokio::runtime::park::Inner::park"]);
        assert_eq!(service().culprit_index(&s), None);
    }

    #[test]
    fn unknown_frames_in_a_stripped_library_are_named_by_object_and_offset() {
        let mut s = stack(&[]);
        let z = Frame::in_object("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13".into(), 0x5f77);
        assert_eq!(&*z.function, "libz.so.1.2.13+0x5f77");
        assert!(z.is_unsymbolized());
        s.insert(0, z);
        // No app frame: the library frame itself, never [runtime].
        let i = service().culprit_index(&s).unwrap();
        assert_eq!(&*s[i].function, "libz.so.1.2.13+0x5f77");
    }

    #[test]
    fn with_debug_info_the_workspace_sources_are_the_program() {
        let mut s = stack(&["sqlite3VdbeExec", "helper::query", "service::run"]);
        s[1].file = Some("/home/me/ws/helper/src/lib.rs".into());
        s[1].line = Some(9);
        // helper is a workspace crate (not in the registry): program code.
        let i = AppCode::default().culprit_index(&s).unwrap();
        assert_eq!(&*s[i].function, "helper::query");
    }

    #[test]
    fn crate_names_are_read_from_function_names() {
        assert_eq!(name_crate("service::scan_orders"), Some("service"));
        assert_eq!(
            name_crate("<service::Db as core::fmt::Debug>::fmt"),
            Some("service")
        );
        assert_eq!(name_crate("sqlite3VdbeExec"), None);
        assert_eq!(name_crate("libz.so.1+0x5f77"), None);
    }

    #[test]
    fn the_crate_of_main_is_found_in_a_real_executable() {
        let exe = std::env::current_exe().unwrap();
        // libtest generates `fn main` at the root of the crate under test.
        let mains = main_crates(&exe);
        assert!(mains.contains("runq_hud"), "{mains:?}");
        assert!(!mains.contains("std"));
        let named = AppCode::of_executable(&exe, &["my-svc".into()]);
        assert!(named.crates().contains(&"my_svc".to_string()));
    }
}
