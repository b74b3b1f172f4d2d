//! Task ids: where the target's Tokio sets a thread's current task, for
//! the uprobe that tags every event with the task being polled.
//!
//! Tokio calls `tokio::runtime::context::set_current_task_id(Option<Id>)`
//! as a task's poll begins (with the task's id) and ends (with the id it
//! restores, usually none). The function is small but is called from
//! several places, so builds keep it out of line: cargo's debug and
//! release profiles keep one instance per codegen unit that uses it, each
//! with a local symbol in `.symtab`. A stripped executable has none; its
//! separate debug file (or an unstripped copy) still does, and the
//! executable's own program headers place them.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// The function that sets a thread's current task.
pub const SET_TASK_FN: &str = "tokio::runtime::context::set_current_task_id";

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
         executable without its debug file, or a build that inlined it)"
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

/// The addresses (ELF virtual addresses) of every instance of the
/// function `name` (demangled, without its hash) in the symbol table of
/// the ELF file `data`.
fn instances(data: &[u8], path: &Path, name: &str) -> Result<Vec<u64>, TaskIdsError> {
    let file = object::File::parse(data).map_err(|e| unreadable(path, e))?;
    let mut out: Vec<u64> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.size() > 0)
        .filter(|s| {
            s.name()
                .is_ok_and(|n| format!("{:#}", rustc_demangle::demangle(n)) == name)
        })
        .map(|s| s.address())
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

/// Where the uprobe goes: the file offsets in the executable `exe` of
/// every instance of [`SET_TASK_FN`], found in the symbol table of the
/// first of `exe` and `others` (a debug file, an unstripped copy) that
/// has it.
pub fn find(exe: &Path, others: &[PathBuf]) -> Result<Vec<u64>, TaskIdsError> {
    let exe_data = std::fs::read(exe).map_err(|e| unreadable(exe, e))?;
    let mut searched = vec![exe.display().to_string()];
    let mut vaddrs = instances(&exe_data, exe, SET_TASK_FN)?;
    for other in others {
        if !vaddrs.is_empty() {
            break;
        }
        searched.push(other.display().to_string());
        let data = std::fs::read(other).map_err(|e| unreadable(other, e))?;
        vaddrs = instances(&data, other, SET_TASK_FN)?;
    }
    let offsets: Vec<u64> = vaddrs
        .into_iter()
        .filter_map(|v| file_offset(&exe_data, v))
        .collect();
    if offsets.is_empty() {
        return Err(TaskIdsError::NotFound {
            searched: searched.join(", "),
        });
    }
    Ok(offsets)
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
        let vaddrs = instances(&data, &exe, name).unwrap();
        assert_eq!(vaddrs.len(), 1, "{name} in {}", exe.display());
        let offset = file_offset(&data, vaddrs[0]).unwrap() as usize;
        // SAFETY: the first 16 bytes of a function this process runs.
        let code = unsafe { std::slice::from_raw_parts(marker as *const () as *const u8, 16) };
        assert_eq!(&data[offset..offset + 16], code);
    }
}
