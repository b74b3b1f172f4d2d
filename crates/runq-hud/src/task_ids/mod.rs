//! Task ids: how hud learns which Tokio task each worker is polling.
//!
//! Tokio keeps the current task's id in its thread-local `CONTEXT` and
//! sets it through `tokio::runtime::context::set_current_task_id` as a
//! task's poll begins (the task's id) and ends (the id it restores,
//! usually none). Two ways to read it, tried in this order:
//!
//! - **Thread-local storage** ([`tls`]): the slot's offset from the thread
//!   pointer, from the TLS symbol of `CONTEXT`, the executable's TLS
//!   segment and the store instruction in the function's out-of-line
//!   instances (optimized builds compile it to a plain store; cargo's
//!   release profile inlines it into Tokio's poll, where no uprobe would
//!   see it). The BPF programs then read the id from the worker's own
//!   memory at each sample and switch-out: no probe on the poll path.
//! - **A uprobe** on every instance of the function, whose first argument
//!   is the id: for builds whose code hud does not decode (debug builds,
//!   where the function is called, not inlined).
//!
//! Both need the symbol table: a stripped executable has none, its
//! separate debug file (or an unstripped copy) does, and the executable's
//! own program headers place what they name.

pub mod tls;

use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::mapped::MappedFile;

/// The function that sets a thread's current task.
pub const SET_TASK_FN: &str = "tokio::runtime::context::set_current_task_id";

/// How the current task id is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// From the worker's thread-local storage, at this offset from its
    /// thread pointer (fs base).
    Tls {
        /// The offset, bytes (negative: x86-64's TLS lies below the
        /// thread pointer).
        tp_offset: i64,
    },
    /// A uprobe at these file offsets of the executable.
    Uprobe {
        /// One per instance of [`SET_TASK_FN`].
        offsets: Vec<u64>,
    },
}

impl Method {
    /// How the report names it.
    pub fn label(&self) -> &'static str {
        match self {
            Method::Tls { .. } => "tls",
            Method::Uprobe { .. } => "uprobe",
        }
    }
}

/// Why task ids cannot be tracked in a target.
#[derive(Debug, thiserror::Error)]
pub enum TaskIdsError {
    /// A file could not be read or parsed.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// No instance of [`SET_TASK_FN`] in any symbol table searched.
    #[error(
        "no symbol for {SET_TASK_FN} in {searched} (a Tokio older than 1.29, a stripped \
         executable without its debug file, or a build that inlined every call)"
    )]
    NotFound {
        /// The files searched.
        searched: String,
    },
}

fn unreadable(path: &Path, reason: impl std::fmt::Display) -> TaskIdsError {
    TaskIdsError::Unreadable {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// A function's address (ELF virtual address) and size.
pub type Instance = (u64, u64);

/// Every instance of the function `name` (demangled, without its hash)
/// in the symbol table of the ELF file `data`, by address.
fn instances(data: &[u8], path: &Path, name: &str) -> Result<Vec<Instance>, TaskIdsError> {
    let file = object::File::parse(data).map_err(|e| unreadable(path, e))?;
    // Both manglings spell a path's last segment out (`19set_current_task_id`):
    // only the names that hold it are demangled, not the tens of thousands
    // of a program's symbols.
    let last = name.rsplit("::").next().unwrap_or(name);
    let mut out: Vec<Instance> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.size() > 0)
        .filter(|s| {
            s.name().is_ok_and(|n| {
                n.contains(last) && format!("{:#}", rustc_demangle::demangle(n)) == name
            })
        })
        .map(|s| (s.address(), s.size()))
        .collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The file offset of the virtual address `vaddr` in the ELF file `data`,
/// by its loadable segments.
fn file_offset(data: &[u8], vaddr: u64) -> Option<u64> {
    let file = object::File::parse(data).ok()?;
    file.segments().find_map(|seg| {
        let (offset, size) = seg.file_range();
        let at = vaddr.checked_sub(seg.address())?;
        (at < size).then_some(offset + at)
    })
}

/// How to read the current task id of the executable `exe`, from the
/// symbol table of the first of `exe` and `others` (a debug file, an
/// unstripped copy) that has [`SET_TASK_FN`]: its thread-local slot when
/// [`tls::slot`] finds it, else a uprobe on the function's instances.
pub fn find(exe: &Path, others: &[PathBuf]) -> Result<Method, TaskIdsError> {
    let exe_data = MappedFile::open(exe).map_err(|e| unreadable(exe, e))?;
    let mut searched = vec![exe.display().to_string()];
    let mut found = instances(&exe_data, exe, SET_TASK_FN)?;
    let mut symbols = None;
    for other in others {
        if !found.is_empty() {
            break;
        }
        searched.push(other.display().to_string());
        let data = MappedFile::open(other).map_err(|e| unreadable(other, e))?;
        found = instances(&data, other, SET_TASK_FN)?;
        symbols = Some(data);
    }
    let symbols = symbols.as_deref().unwrap_or(&*exe_data);
    match tls::slot(&exe_data, symbols, &found) {
        Ok(tp_offset) => return Ok(Method::Tls { tp_offset }),
        Err(why) => log::info!("hud: task ids by uprobe: {why}"),
    }
    let offsets: Vec<u64> = found
        .into_iter()
        .filter_map(|(v, _)| file_offset(&exe_data, v))
        .collect();
    if offsets.is_empty() {
        return Err(TaskIdsError::NotFound {
            searched: searched.join(", "),
        });
    }
    Ok(Method::Uprobe { offsets })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary itself is a Rust program without Tokio.
    #[test]
    fn a_program_without_tokio_has_no_instance_and_says_where_it_looked() {
        let exe = std::env::current_exe().unwrap();
        let err = find(&exe, &[]).unwrap_err().to_string();
        assert!(err.contains(SET_TASK_FN) && err.contains(&*exe.to_string_lossy()));
    }

    #[test]
    fn an_unreadable_file_is_named() {
        let err = find(Path::new("/nonexistent/x"), &[]).unwrap_err();
        assert!(err.to_string().starts_with("cannot read /nonexistent/x"));
    }

    #[inline(never)]
    fn marker(x: u64) -> u64 {
        x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(7)
    }

    /// A function of this test binary, found by its name, sits at a file
    /// offset whose bytes are the code this process runs.
    #[test]
    fn an_instance_is_placed_at_the_file_offset_of_its_code() {
        assert_ne!(marker(3), 3);
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let name = "runq_hud::task_ids::tests::marker";
        let found = instances(&data, &exe, name).unwrap();
        assert_eq!(found.len(), 1, "{name} in {}", exe.display());
        let offset = file_offset(&data, found[0].0).unwrap() as usize;
        // SAFETY: the first 16 bytes of a function this process runs.
        let code = unsafe { std::slice::from_raw_parts(marker as *const () as *const u8, 16) };
        assert_eq!(&data[offset..offset + 16], code);
    }
}
