//! Exact polls (`--exact-polls`): where Tokio's task poll sits in the
//! target, for the uprobes that time every poll, and which instance an
//! address belongs to.
//!
//! Every task's poll goes through `tokio::runtime::task::raw::poll::<T, S>`,
//! one instance per future type. Its address is stored in the task's
//! vtable, so no build inlines it away: each instance keeps a symbol in
//! the executable's `.symtab` (cargo's release profile keeps it; `strip`
//! removes it, and `--debug-file` then gives an unstripped copy).

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use crate::symbols::maps::CodeMapping;

/// The function every task poll goes through.
pub const POLL_FN: &str = "tokio::runtime::task::raw::poll";

/// One instance of [`POLL_FN`] in the executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// Its address in the ELF file's address space.
    pub vaddr: u64,
    /// Its length in bytes.
    pub size: u64,
    /// Its offset in the file (where a uprobe attaches).
    pub file_offset: u64,
    /// When the instance is only a jump to the function that does the
    /// work (`Harness::poll`, in optimized builds), that function: no
    /// stack shows the instance itself, only it.
    pub body: Option<Body>,
}

/// The function an instance of [`POLL_FN`] jumps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body {
    /// Its length in bytes.
    pub size: u64,
    /// Its offset in the file.
    pub file_offset: u64,
}

/// A text symbol: address, size, file offset.
type TextSymbol = (u64, u64, u64);

/// Where a `jmp rel32` / `jmp rel8` at `vaddr` (code bytes `code`) goes.
fn jump_target(vaddr: u64, code: &[u8]) -> Option<u64> {
    match code {
        [0xe9, a, b, c, d, ..] => {
            let rel = i32::from_le_bytes([*a, *b, *c, *d]);
            (vaddr + 5).checked_add_signed(rel.into())
        }
        [0xeb, rel, ..] => (vaddr + 2).checked_add_signed((*rel as i8).into()),
        _ => None,
    }
}

/// Where a function that ends in a tail jump goes: `jmp` alone (a thunk),
/// or after a frame-pointer prologue and epilogue (`push rbp; mov rbp,
/// rsp; pop rbp; jmp`, with frame pointers forced).
fn tail_jump(vaddr: u64, code: &[u8]) -> Option<u64> {
    [
        code.len().checked_sub(5),
        code.len().checked_sub(2),
        Some(0),
    ]
    .into_iter()
    .flatten()
    .find_map(|at| {
        let target = jump_target(vaddr + at as u64, &code[at..])?;
        let len = if code[at] == 0xe9 { 5 } else { 2 };
        (at + len == code.len()).then_some(target)
    })
}

/// The function among `functions` (sorted) that `addr` falls in.
fn function_at(functions: &[TextSymbol], addr: u64) -> Option<TextSymbol> {
    let i = functions.partition_point(|(a, _, _)| *a <= addr);
    let f = *functions.get(i.checked_sub(1)?)?;
    (addr < f.0 + f.1).then_some(f)
}

/// Why exact polls cannot be timed in this target.
#[derive(Debug, thiserror::Error)]
pub enum PollSitesError {
    /// The executable could not be read or parsed.
    #[error("--exact-polls: cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// No symbol table, or no instance of Tokio's task poll in it.
    #[error(
        "--exact-polls: {path} has no symbol for {POLL_FN} (stripped, or not a Tokio program); \
         pass --debug-file with an unstripped copy, or leave out --exact-polls"
    )]
    NotFound {
        /// The file.
        path: String,
    },
}

/// True when a demangled symbol name is an instance of [`POLL_FN`]
/// (legacy mangling shows no generic arguments; v0 shows `::<T, S>`).
pub fn is_poll_fn(demangled: &str) -> bool {
    demangled
        .strip_prefix(POLL_FN)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::<"))
}

/// True when a mangled symbol name is an instance of [`POLL_FN`]. Both
/// manglings spell the path out (`3raw4poll`): only the names that hold
/// it are demangled, not the tens of thousands of a program's symbols.
fn is_poll_symbol(mangled: &str) -> bool {
    mangled.contains("3raw4poll") && is_poll_fn(&format!("{:#}", rustc_demangle::demangle(mangled)))
}

/// The instances of [`POLL_FN`] in the ELF file at `path`, by address.
pub fn find(path: &Path) -> Result<Vec<Site>, PollSitesError> {
    let unreadable = |reason: String| PollSitesError::Unreadable {
        path: path.display().to_string(),
        reason,
    };
    let data = crate::mapped::MappedFile::open(path).map_err(|e| unreadable(e.to_string()))?;
    let file = object::File::parse(&*data).map_err(|e| unreadable(e.to_string()))?;
    let text = |s: &object::Symbol| -> Option<TextSymbol> {
        let section = file.section_by_index(s.section_index()?).ok()?;
        let (offset, _) = section.file_range()?;
        Some((
            s.address(),
            s.size(),
            s.address() - section.address() + offset,
        ))
    };
    let defined = || {
        file.symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.size() > 0)
    };
    let mut functions: Vec<TextSymbol> = defined().filter_map(|s| text(&s)).collect();
    functions.sort_unstable();
    let mut sites: Vec<Site> = defined()
        .filter(|s| s.name().is_ok_and(is_poll_symbol))
        .filter_map(|s| {
            let (vaddr, size, file_offset) = text(&s)?;
            let code = data.get(file_offset as usize..(file_offset + size) as usize)?;
            let body = tail_jump(vaddr, code)
                .and_then(|target| function_at(&functions, target))
                .map(|(_, size, file_offset)| Body { size, file_offset });
            Some(Site {
                vaddr,
                size,
                file_offset,
                body,
            })
        })
        .collect();
    sites.sort_unstable_by_key(|s| s.vaddr);
    sites.dedup_by_key(|s| s.vaddr);
    if sites.is_empty() {
        return Err(PollSitesError::NotFound {
            path: path.display().to_string(),
        });
    }
    Ok(sites)
}

/// The instances where the running target has them: runtime address
/// ranges (an instance's own and its body's), sorted, each with the
/// instance's runtime start.
#[derive(Debug, Clone, Default)]
pub struct RuntimeSites {
    ranges: Vec<(u64, u64, u64)>,
}

/// The runtime address of a file offset, in the mapping that holds it.
fn runtime_address(file_offset: u64, exe_mappings: &[CodeMapping]) -> Option<u64> {
    let m = exe_mappings
        .iter()
        .find(|m| (m.offset..m.offset + (m.end - m.start)).contains(&file_offset))?;
    Some(m.start + (file_offset - m.offset))
}

impl RuntimeSites {
    /// Places `sites` by the target's mappings of its executable
    /// (`exe_mappings`: its executable code mappings).
    pub fn place(sites: &[Site], exe_mappings: &[CodeMapping]) -> Self {
        let mut ranges = Vec::new();
        for s in sites {
            let Some(start) = runtime_address(s.file_offset, exe_mappings) else {
                continue;
            };
            ranges.push((start, start + s.size, start));
            let body = s.body.and_then(|b| {
                let at = runtime_address(b.file_offset, exe_mappings)?;
                Some((at, at + b.size, start))
            });
            ranges.extend(body);
        }
        ranges.sort_unstable();
        ranges.dedup_by_key(|r| r.0);
        RuntimeSites { ranges }
    }

    /// True when no instance could be placed.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The instance (its runtime start address) that `addr` falls in.
    pub fn instance_of(&self, addr: u64) -> Option<u64> {
        let i = self.ranges.partition_point(|(start, _, _)| *start <= addr);
        let (_, end, instance) = *self.ranges.get(i.checked_sub(1)?)?;
        (addr < end).then_some(instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_fn_names_in_both_manglings() {
        assert!(is_poll_fn("tokio::runtime::task::raw::poll"));
        assert!(is_poll_fn(
            "tokio::runtime::task::raw::poll::<app::serve::{closure#0}, alloc::sync::Arc<h>>"
        ));
        assert!(!is_poll_fn("tokio::runtime::task::raw::poll_future"));
        assert!(!is_poll_fn(
            "tokio::runtime::task::harness::Harness<T,S>::poll"
        ));
        let legacy = "_ZN5tokio7runtime4task3raw4poll17h0123456789abcdefE";
        assert!(is_poll_fn(&format!(
            "{:#}",
            rustc_demangle::demangle(legacy)
        )));
        assert!(is_poll_symbol(legacy));
        let v0 = "_RINvNtNtNtCs1234_5tokio7runtime4task3raw4pollNtCs5678_3app5ServeE";
        assert!(is_poll_symbol(v0));
        assert!(!is_poll_symbol(
            "_ZN5tokio7runtime4task3raw11poll_future17h0123456789abcdefE"
        ));
    }

    #[test]
    fn sites_are_placed_by_the_mapping_of_their_file_offset() {
        let sites = [
            Site {
                vaddr: 0x21000,
                size: 0x80,
                file_offset: 0x20000,
                body: None,
            },
            Site {
                vaddr: 0x22000,
                size: 0x10,
                file_offset: 0x21000,
                body: Some(Body {
                    size: 0x200,
                    file_offset: 0x30000,
                }),
            },
        ];
        let maps = [CodeMapping {
            start: 0x5555_0001_0000,
            end: 0x5555_0009_0000,
            offset: 0x10000,
            path: "/app".into(),
        }];
        let rt = RuntimeSites::place(&sites, &maps);
        assert_eq!(rt.instance_of(0x5555_0002_0000), Some(0x5555_0002_0000));
        assert_eq!(rt.instance_of(0x5555_0002_007f), Some(0x5555_0002_0000));
        assert_eq!(rt.instance_of(0x5555_0002_0080), None);
        assert_eq!(rt.instance_of(0x5555_0002_1008), Some(0x5555_0002_1000));
        assert_eq!(rt.instance_of(0x5555_0002_1010), None);
        // An address in the body names the instance that jumps to it.
        assert_eq!(rt.instance_of(0x5555_0003_01ff), Some(0x5555_0002_1000));
        assert_eq!(rt.instance_of(0x10), None);
        assert!(RuntimeSites::place(&sites, &[]).is_empty());
    }

    #[test]
    fn jumps_are_followed_to_the_function_they_reach() {
        // jmp rel32 from 0x30bf0 to 0x2bf40, as a release build's thunk.
        let rel = (0x2bf40i64 - 0x30bf5) as i32;
        let mut code = vec![0xe9];
        code.extend_from_slice(&rel.to_le_bytes());
        assert_eq!(jump_target(0x30bf0, &code), Some(0x2bf40));
        assert_eq!(jump_target(0x100, &[0xeb, 0xfe]), Some(0x100));
        assert_eq!(jump_target(0x100, &[0x55, 0x48]), None, "push rbp: no jump");
        // The whole function is the jump, or ends in it after a frame.
        assert_eq!(tail_jump(0x30bf0, &code), Some(0x2bf40));
        let mut framed = vec![0x55, 0x48, 0x89, 0xe5, 0x5d, 0xe9];
        let rel = (0x2bf40i64 - 0x30bfa) as i32;
        framed.extend_from_slice(&rel.to_le_bytes());
        assert_eq!(tail_jump(0x30bf0, &framed), Some(0x2bf40));
        assert_eq!(tail_jump(0x30bf0, &[0x55, 0x48, 0x89, 0xe5, 0xc3]), None);
        let functions = [(0x2bf00, 0x100, 0x2af00), (0x30bf0, 0x10, 0x2fbf0)];
        assert_eq!(function_at(&functions, 0x2bf40), Some(functions[0]));
        assert_eq!(function_at(&functions, 0x2c000), None);
    }

    #[test]
    fn a_binary_without_tokio_has_no_sites() {
        let err = find(Path::new("/bin/sh")).unwrap_err();
        assert!(err.to_string().contains("no symbol for"), "{err}");
        let err = find(Path::new("/nonexistent")).unwrap_err();
        assert!(err.to_string().contains("cannot read"), "{err}");
    }
}
