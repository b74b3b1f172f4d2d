//! Turning user-stack addresses into frames with blazesym: symbol tables
//! and DWARF (file:line, inlined functions), demangled, through
//! /proc/PID/map_files so PIE and other mount namespaces work. Results are
//! cached per address, the memory map is cached and re-read only when an
//! address falls outside it, and `--target` can stand in an unstripped
//! copy of the executable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blazesym::symbolize::{Symbolized, Symbolizer};
use blazesym::Pid;
use serde::{Deserialize, Serialize};

pub mod aliases;
pub mod debugfile;
mod exports;
mod frames;
pub mod maps;
mod pass;
use aliases::Aliases;
use debugfile::{ElfInfo, FoundBy};
use exports::Exports;
use frames::{dwarf_frames, merge_names, qualify_across, qualify_enclosed};
use frames::{qualify_inlined, qualify_named};
use maps::CodeMapping;

/// One frame of a symbolized stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Demangled function name (`[unknown]` when not found).
    pub function: Arc<str>,
    /// Source file, when debug info has it.
    pub file: Option<Arc<str>>,
    /// Source line.
    pub line: Option<u32>,
    /// The binary or library the address belongs to.
    pub module: Option<Arc<str>>,
    /// True for a function inlined into the next frame.
    pub inlined: bool,
}

impl Frame {
    /// `file:line` when known.
    pub fn location(&self) -> Option<String> {
        Some(format!("{}:{}", self.file.as_ref()?, self.line?))
    }

    /// A frame without a symbol in a known object: named
    /// `object+0xoffset` (the object's file name and the file offset, as
    /// perf and addr2line take it), never an anonymous address.
    pub fn in_object(module: Arc<str>, file_offset: u64) -> Self {
        let base = module.rsplit('/').next().unwrap_or(&module).to_string();
        Frame {
            function: format!("{base}+{file_offset:#x}").into(),
            file: None,
            line: None,
            module: Some(module),
            inlined: false,
        }
    }

    /// True for a frame named by its object and offset (no symbol), or
    /// after a neighbouring export (`~name (object)`, approximate).
    pub fn is_unsymbolized(&self) -> bool {
        self.function.starts_with("[unknown]")
            || self.function.starts_with('~')
            || self.module.as_deref().is_some_and(|m| {
                let base = m.rsplit('/').next().unwrap_or(m);
                self.function.starts_with(base) && self.function.contains("+0x")
            })
    }

    /// A frame known only by its address (outside every mapped object).
    pub fn unknown(addr: u64) -> Self {
        Frame {
            function: format!("[unknown] {addr:#x}").into(),
            file: None,
            line: None,
            module: None,
            inlined: false,
        }
    }
}

/// A caching symbolizer for one process.
pub struct Symbols {
    symbolizer: Symbolizer,
    pid: u32,
    proc_root: PathBuf,
    /// The code mappings as last read (kept in step with blazesym's cached
    /// copy of the process' memory map).
    mappings: Vec<CodeMapping>,
    mappings_read: Option<Instant>,
    target: Option<TargetBinary>,
    cache: HashMap<u64, Vec<Frame>>,
    /// The exported functions of each object met with an address no
    /// lookup could name, by object path.
    exports: HashMap<PathBuf, Option<Exports>>,
    debug_info_seen: bool,
    /// The objects whose DWARF could not be read (by path): their
    /// DWARF pass is skipped, their symbol tables name their functions.
    no_dwarf: std::cell::RefCell<std::collections::HashSet<String>>,
    /// What the executable's ELF holds, read once.
    exe_elf: std::cell::OnceCell<Option<ElfInfo>>,
    /// The executable's names that share a body, read at first need.
    aliases: std::cell::OnceCell<Aliases>,
}

/// The debug info of the target's executable, in a file of its own: an
/// unstripped copy or a debug-only file (`--debug-file`, or found by
/// build ID or `.gnu_debuglink`), used for the addresses that fall in the
/// executable's mappings. They are looked up by virtual address, which
/// the running executable's segments give.
struct TargetBinary {
    path: PathBuf,
    exe: String,
    found_by: FoundBy,
    exe_info: Option<ElfInfo>,
}

/// Why `--target` cannot stand in for the target's executable.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The file cannot be read as ELF.
    #[error("{path}: not a readable ELF file: {message}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The build IDs differ: symbols would be wrong.
    #[error("{path} is not a copy of the target's executable {exe} (build ID {theirs} vs {ours}): pass the unstripped build of the same binary")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The target's executable.
        exe: String,
        /// Its build ID.
        ours: String,
        /// The file's build ID.
        theirs: String,
    },
}

/// The mapping is refreshed at most this often when addresses fall outside
/// every known mapping (a library loaded later, JIT code).
const MAPS_REFRESH: Duration = Duration::from_millis(500);

fn build_id_hex(path: &Path) -> Result<Option<String>, String> {
    blazesym::helper::read_elf_build_id(path)
        .map(|id| id.map(|b| b.iter().map(|x| format!("{x:02x}")).collect()))
        .map_err(|e| e.to_string())
}

impl Symbols {
    /// A symbolizer for `pid`, its memory map read from `proc_root`.
    pub fn new(proc_root: &Path, pid: u32) -> Self {
        let mut s = Symbols {
            symbolizer: Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                // Objects are keyed by their mapping's address range, so a
                // changed file comes with a new path: no need to re-check
                // every cached object on every lookup.
                .enable_auto_reload(false)
                .build(),
            pid,
            proc_root: proc_root.to_path_buf(),
            mappings: Vec::new(),
            mappings_read: None,
            target: None,
            cache: HashMap::new(),
            exports: HashMap::new(),
            debug_info_seen: false,
            no_dwarf: Default::default(),
            exe_elf: std::cell::OnceCell::new(),
            aliases: std::cell::OnceCell::new(),
        };
        s.refresh_mappings();
        s
    }

    /// Uses `binary` (an unstripped copy of the target's executable, or
    /// its debug-only file) for the executable's own addresses; its build
    /// ID must match.
    pub fn use_target_binary(&mut self, binary: &Path) -> Result<(), TargetError> {
        self.use_debug_file(binary, FoundBy::Given)
    }

    /// Looks for the executable's separate debug info (build-id path,
    /// `.gnu_debuglink`) when the executable has no DWARF of its own, and
    /// uses it; returns how it was found.
    pub fn find_debug_file(&mut self, debug_dirs: &[PathBuf]) -> Option<FoundBy> {
        let info = self.exe_elf().filter(|i| !i.dwarf)?;
        let exe = maps::exe_path(&self.proc_root, self.pid).ok()?;
        let (path, by) = debugfile::find(&exe, info, debug_dirs)?;
        self.use_debug_file(&path, by).ok()?;
        Some(by)
    }

    /// What the running executable's ELF holds (read once, through
    /// /proc/PID/exe).
    fn exe_elf(&self) -> Option<&ElfInfo> {
        self.exe_elf
            .get_or_init(|| ElfInfo::read(&self.proc_root.join(format!("{}/exe", self.pid))))
            .as_ref()
    }

    /// The executable's names that share one body (see [`Aliases`]),
    /// from its debug file's symbol table when one stands in for it.
    pub fn aliases(&self) -> &Aliases {
        self.aliases.get_or_init(|| match &self.target {
            Some(t) => Aliases::of_file(&t.path),
            None => Aliases::of_file(&self.proc_root.join(format!("{}/exe", self.pid))),
        })
    }

    /// The debug file in use and how it was found.
    pub fn debug_file(&self) -> Option<(&Path, FoundBy)> {
        self.target.as_ref().map(|t| (t.path.as_path(), t.found_by))
    }

    /// True when the executable is stripped (no symbol table, no DWARF)
    /// and no debug file stands in for it.
    pub fn executable_stripped(&self) -> bool {
        self.target.is_none() && self.exe_elf().is_some_and(ElfInfo::stripped)
    }

    fn use_debug_file(&mut self, binary: &Path, found_by: FoundBy) -> Result<(), TargetError> {
        let exe = maps::exe_path(&self.proc_root, self.pid)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let unreadable = |message: String| TargetError::Unreadable {
            path: binary.to_path_buf(),
            message,
        };
        let theirs = build_id_hex(binary).map_err(unreadable)?;
        let exe_file = self.proc_root.join(format!("{}/exe", self.pid));
        let ours = build_id_hex(&exe_file).ok().flatten();
        if let (Some(ours), Some(theirs)) = (&ours, &theirs) {
            if ours != theirs {
                return Err(TargetError::Mismatch {
                    path: binary.to_path_buf(),
                    exe,
                    ours: ours.clone(),
                    theirs: theirs.clone(),
                });
            }
        }
        self.target = Some(TargetBinary {
            path: binary.to_path_buf(),
            exe,
            found_by,
            exe_info: self.exe_elf().cloned(),
        });
        self.cache.clear();
        Ok(())
    }

    /// True once any frame came with file:line (the binary has DWARF).
    pub fn debug_info_seen(&self) -> bool {
        self.debug_info_seen
    }

    /// Loads every code object's symbols and debug info now, so the first
    /// stacks do not pay for it while the target is being measured.
    pub fn prewarm(&mut self) {
        let firsts: Vec<u64> = self.mappings.iter().map(|m| m.start + 1).collect();
        self.resolve(&firsts);
    }

    /// Symbolizes every address of `addrs` not yet cached, in one batch.
    pub fn prefetch<'a>(&mut self, addrs: impl IntoIterator<Item = &'a u64>) {
        let mut missing: Vec<u64> = addrs
            .into_iter()
            .copied()
            .filter(|a| !self.cache.contains_key(a))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            self.resolve(&missing);
        }
    }

    /// Frames of a stack, innermost first (inlined callees before their
    /// caller). Return addresses point after the call, so each is looked
    /// up one byte earlier to land on the call instruction's line. An
    /// inlined closure no frame of its own address named is named by a
    /// frame further out (see `frames::qualify_across`), and a function
    /// the linker shares between types by the type its caller is a method
    /// of (see [`aliases::name_by_callers`]).
    pub fn stack(&mut self, addrs: &[u64]) -> Vec<Frame> {
        let mut frames = Vec::with_capacity(addrs.len() + 8);
        for a in addrs {
            frames.extend_from_slice(self.frames_of(*a));
        }
        qualify_across(&mut frames);
        aliases::name_by_callers(&mut frames, self.aliases());
        frames
    }

    /// How many of `addrs` (a stack, innermost first) come before the
    /// first that falls in no code mapping of the process (looked up as
    /// [`Symbols::stack`] does, one byte back). A walk that took data
    /// for a return address (text, a heap pointer) has gone astray
    /// there: what it read is no frame.
    pub fn mapped_len(&mut self, addrs: &[u64]) -> usize {
        self.refresh_if_unmapped(addrs);
        addrs
            .iter()
            .position(|a| maps::find(&self.mappings, a.saturating_sub(1)).is_none())
            .unwrap_or(addrs.len())
    }

    /// The frames of one address (innermost first), resolved if needed.
    pub fn frames_of(&mut self, addr: u64) -> &[Frame] {
        if !self.cache.contains_key(&addr) {
            self.resolve(&[addr]);
        }
        // resolve() caches every address it is given, known or not.
        &self.cache[&addr]
    }

    /// Re-reads the memory map (ours and blazesym's cached copy).
    fn refresh_mappings(&mut self) {
        self.mappings_read = Some(Instant::now());
        if let Ok(mut m) = maps::read_code_mappings(&self.proc_root, self.pid) {
            // In address order (as /proc lists them), for `mapped_len`.
            m.sort_by_key(|m| m.start);
            self.mappings = m;
        }
        let mut vmas = blazesym::symbolize::cache::Process::new(Pid::from(self.pid));
        vmas.cache_perf_map = false;
        // Without a cached copy blazesym reads the map on every call.
        let _ = self
            .symbolizer
            .cache(&blazesym::symbolize::cache::Cache::from(vmas));
    }

    fn refresh_if_unmapped(&mut self, addrs: &[u64]) {
        let unmapped = addrs
            .iter()
            .any(|a| !self.mappings.iter().any(|m| m.contains(*a)));
        let stale = self
            .mappings_read
            .is_none_or(|t| t.elapsed() >= MAPS_REFRESH);
        if unmapped && stale {
            self.refresh_mappings();
        }
    }

    /// The code mapping of `addr`, when it has an object file behind it.
    fn mapping_of(&self, addr: u64) -> Option<usize> {
        self.mappings
            .iter()
            .position(|m| m.contains(addr) && m.path.starts_with('/'))
    }

    /// The file a mapping's addresses are looked up in: `--target` for the
    /// executable, else the mapped object through /proc/PID/map_files
    /// (which reaches into other mount namespaces and deleted files).
    fn object_path(&self, m: &CodeMapping) -> PathBuf {
        match &self.target {
            Some(t) if t.exe == m.path => t.path.clone(),
            _ => self
                .proc_root
                .join(format!("{}/map_files/{:x}-{:x}", self.pid, m.start, m.end)),
        }
    }

    /// For the executable's mapping when a debug file stands in for it:
    /// the virtual addresses of `offsets`, by the running executable's
    /// segments (a debug-only file's own file offsets mean nothing).
    fn virt_offsets(&self, m: &CodeMapping, offsets: &[u64]) -> Option<Vec<u64>> {
        let t = self.target.as_ref().filter(|t| t.exe == m.path)?;
        let info = t.exe_info.as_ref()?;
        offsets.iter().map(|o| info.virt_offset(*o)).collect()
    }

    /// The module name shown for `addr`.
    fn module_of(&self, addr: u64) -> Option<Arc<str>> {
        let m = self.mappings.iter().find(|m| m.contains(addr))?;
        Some(match &self.target {
            Some(t) if t.exe == m.path => Arc::from(&*t.path.to_string_lossy()),
            _ => Arc::from(m.path.as_str()),
        })
    }

    fn resolve(&mut self, addrs: &[u64]) {
        self.refresh_if_unmapped(addrs);
        let lookup: Vec<u64> = addrs.iter().map(|a| a.saturating_sub(1)).collect();
        // The symbol tables name every function (qualified, demangled),
        // libc included; DWARF adds file:line and inlined frames where the
        // binary has it. Merge the two.
        let names: Vec<Option<Arc<str>>> = self
            .pass(&lookup, false)
            .iter()
            .map(|r| match r {
                Some(Symbolized::Sym(sym)) => Some(Arc::from(&*sym.name)),
                _ => None,
            })
            .collect();
        let dwarf = self.pass(&lookup, true);
        let mut resolved = Vec::with_capacity(addrs.len());
        for (i, addr) in addrs.iter().enumerate() {
            let module = self.module_of(lookup[i]);
            let frames = match &dwarf[i] {
                Some(Symbolized::Sym(sym)) => dwarf_frames(sym, module.clone()),
                _ => Vec::new(),
            };
            let offset = self
                .mapping_of(lookup[i])
                .map(|k| self.mappings[k].file_offset(lookup[i]));
            let mut frames = merge_names(frames, names[i].clone(), module, *addr, offset);
            qualify_inlined(&mut frames);
            qualify_named(&mut frames);
            qualify_enclosed(&mut frames);
            resolved.push((*addr, frames));
        }
        drop(dwarf);
        for (addr, frames) in &mut resolved {
            self.approximate(addr.saturating_sub(1), frames);
        }
        self.debug_info_seen |= resolved
            .iter()
            .flat_map(|(_, f)| f)
            .any(|f| f.line.is_some());
        self.cache.extend(resolved);
    }
}

impl Symbols {
    /// Names a frame that only has its object and offset after the
    /// nearest export before it (`~deflate (libz.so.1)`), when the object
    /// exports functions (a stripped library keeps its `.dynsym`).
    fn approximate(&mut self, lookup: u64, frames: &mut [Frame]) {
        let [frame] = frames else { return };
        if frame.function.starts_with("[unknown]") || !frame.is_unsymbolized() {
            return;
        }
        let Some(k) = self.mapping_of(lookup) else {
            return;
        };
        let offset = self.mappings[k].file_offset(lookup);
        let path = self.object_path(&self.mappings[k]);
        let exports = self
            .exports
            .entry(self.mappings[k].path.clone().into())
            .or_insert_with(|| Exports::load(&path));
        if let Some(name) = exports.as_ref().and_then(|e| e.nearest(offset)) {
            let path = &self.mappings[k].path;
            let base = path.rsplit('/').next().unwrap_or(path);
            frame.function = format!("{name} ({base})").into();
        }
    }
}

/// Fixture frames for the classification and detection tests.
#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_find() -> u64 {
        std::hint::black_box(7)
    }

    #[test]
    fn symbolizes_this_process_with_file_and_line() {
        let addr = a_function_to_find as *const () as u64;
        let mut s = Symbols::new(Path::new("/proc"), std::process::id());
        let frames = s.stack(&[addr + 1]);
        let f = frames.last().unwrap();
        assert!(f.function.contains("a_function_to_find"), "{frames:?}");
        assert!(
            f.location().is_some_and(|l| l.contains("symbols/mod.rs")),
            "{frames:?}"
        );
        assert!(s.debug_info_seen());
        assert_eq!(s.stack(&[addr + 1]), frames, "cached");
        assert!(s
            .stack(&[8])
            .last()
            .unwrap()
            .function
            .starts_with("[unknown]"));
    }

    /// A sample can catch a thread at a function's first byte: marked as
    /// the leaf, that address names the function itself, not whatever
    /// lies one byte before it (where a return address is looked up).
    #[test]
    fn a_leaf_at_a_functions_first_byte_names_that_function() {
        let addr = a_function_to_find as *const () as u64;
        let mut s = Symbols::new(Path::new("/proc"), std::process::id());
        let mut stack = [addr];
        crate::prep::mark_leaf(&mut stack);
        let frames = s.stack(&stack);
        let f = frames.last().unwrap();
        assert!(f.function.contains("a_function_to_find"), "{frames:?}");
        let before = s.stack(&[addr]);
        assert!(
            !before
                .last()
                .unwrap()
                .function
                .contains("a_function_to_find"),
            "{before:?}"
        );
    }

    #[test]
    fn a_target_binary_stands_in_for_the_executable() {
        let addr = a_function_to_find as *const () as u64;
        let mut s = Symbols::new(Path::new("/proc"), std::process::id());
        let exe = std::env::current_exe().unwrap();
        s.use_target_binary(&exe).unwrap();
        let frames = s.stack(&[addr + 1]);
        let f = frames.last().unwrap();
        assert!(f.function.contains("a_function_to_find"), "{frames:?}");
        assert!(f.location().is_some_and(|l| l.contains("symbols")));
        assert_eq!(f.module.as_deref(), Some(&*exe.to_string_lossy()));
    }

    #[test]
    fn a_target_binary_must_be_elf_of_the_same_build() {
        let mut s = Symbols::new(Path::new("/proc"), std::process::id());
        let text = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(text.path(), "not elf").unwrap();
        let err = s.use_target_binary(text.path()).unwrap_err();
        assert!(matches!(err, TargetError::Unreadable { .. }), "{err}");
        let other = ["/bin/sh", "/usr/bin/env", "/bin/true"]
            .into_iter()
            .map(Path::new)
            .find(|p| build_id_hex(p).is_ok_and(|id| id.is_some()));
        if let Some(other) = other {
            let err = s.use_target_binary(other).unwrap_err();
            assert!(matches!(err, TargetError::Mismatch { .. }), "{err}");
            assert!(err.to_string().contains("build ID"), "{err}");
        }
    }
}
