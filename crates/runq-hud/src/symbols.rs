//! Turning user-stack addresses into frames with blazesym: symbol tables
//! and DWARF (file:line, inlined functions), demangled, through
//! /proc/PID/map_files so PIE and other mount namespaces work. Results are
//! cached per address.

use std::collections::HashMap;

use blazesym::symbolize::source::{Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::Pid;
use serde::{Deserialize, Serialize};

/// One frame of a symbolized stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Demangled function name (`[unknown]` when not found).
    pub function: String,
    /// Source file, when debug info has it.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// The binary or library the address belongs to.
    pub module: Option<String>,
    /// True for a function inlined into the next frame.
    pub inlined: bool,
}

impl Frame {
    /// `file:line` when known.
    pub fn location(&self) -> Option<String> {
        Some(format!("{}:{}", self.file.as_ref()?, self.line?))
    }

    /// A frame known only by its address.
    pub fn unknown(addr: u64) -> Self {
        Frame {
            function: format!("[unknown] {addr:#x}"),
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
    cache: HashMap<u64, Vec<Frame>>,
    debug_info_seen: bool,
}

fn code_location(ci: Option<&blazesym::symbolize::CodeInfo<'_>>) -> (Option<String>, Option<u32>) {
    match ci {
        Some(ci) => {
            let file = match &ci.dir {
                Some(d) => d.join(&*ci.file).display().to_string(),
                None => ci.file.to_string_lossy().into_owned(),
            };
            (Some(file), ci.line)
        }
        None => (None, None),
    }
}

impl Symbols {
    /// A symbolizer for `pid`.
    pub fn new(pid: u32) -> Self {
        Symbols {
            symbolizer: Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .build(),
            pid,
            cache: HashMap::new(),
            debug_info_seen: false,
        }
    }

    /// True once any frame came with file:line (the binary has DWARF).
    pub fn debug_info_seen(&self) -> bool {
        self.debug_info_seen
    }

    /// Frames of a stack, innermost first (inlined callees before their
    /// caller). Return addresses point after the call, so each is looked
    /// up one byte earlier to land on the call instruction's line.
    pub fn stack(&mut self, addrs: &[u64]) -> Vec<Frame> {
        let missing: Vec<u64> = addrs
            .iter()
            .copied()
            .filter(|a| !self.cache.contains_key(a))
            .collect();
        if !missing.is_empty() {
            self.resolve(&missing);
        }
        addrs
            .iter()
            .flat_map(|a| {
                self.cache
                    .get(a)
                    .cloned()
                    .unwrap_or_else(|| vec![Frame::unknown(*a)])
            })
            .collect()
    }

    /// One symbolization pass; `debug` selects DWARF (file:line, inlined
    /// frames, short names) over the symbol tables (qualified names). A
    /// batch fails as a whole when one module's debug info cannot be read
    /// (libc without its debug package, say), so a failed batch is retried
    /// address by address.
    fn pass(&self, lookup: &[u64], debug: bool) -> Vec<Symbolized<'_>> {
        let mut src = Process::new(Pid::from(self.pid));
        src.debug_syms = debug;
        let src = Source::Process(src);
        if let Ok(all) = self.symbolizer.symbolize(&src, Input::AbsAddr(lookup)) {
            return all;
        }
        lookup
            .iter()
            .map(|a| {
                self.symbolizer
                    .symbolize_single(&src, Input::AbsAddr(*a))
                    .unwrap_or(Symbolized::Unknown(
                        blazesym::symbolize::Reason::IgnoredError,
                    ))
            })
            .collect()
    }

    fn resolve(&mut self, addrs: &[u64]) {
        let lookup: Vec<u64> = addrs.iter().map(|a| a.saturating_sub(1)).collect();
        // The symbol tables name every function (qualified, demangled),
        // libc included; DWARF adds file:line and inlined frames where the
        // binary has it. Merge the two.
        let names: Vec<(Option<String>, Option<String>)> = self
            .pass(&lookup, false)
            .iter()
            .map(|r| match r {
                Symbolized::Sym(sym) => (
                    Some(sym.name.to_string()),
                    sym.module
                        .as_ref()
                        .map(|m| m.to_string_lossy().into_owned()),
                ),
                _ => (None, None),
            })
            .collect();
        let dwarf = self.pass(&lookup, true);
        let mut resolved = Vec::with_capacity(addrs.len());
        for (i, addr) in addrs.iter().enumerate() {
            let (elf_name, elf_module) = names.get(i).cloned().unwrap_or((None, None));
            let mut frames = match dwarf.get(i) {
                Some(Symbolized::Sym(sym)) => dwarf_frames(sym, elf_module.clone()),
                _ => Vec::new(),
            };
            match (frames.last_mut(), elf_name) {
                // The real (outermost) function: prefer its qualified name.
                (Some(outer), Some(name)) => outer.function = name,
                (None, Some(name)) => frames.push(Frame {
                    function: name,
                    file: None,
                    line: None,
                    module: elf_module,
                    inlined: false,
                }),
                (Some(_), None) => {}
                (None, None) => frames.push(Frame::unknown(*addr)),
            }
            resolved.push((*addr, frames));
        }
        drop(dwarf);
        self.debug_info_seen |= resolved
            .iter()
            .flat_map(|(_, f)| f)
            .any(|f| f.line.is_some());
        self.cache.extend(resolved);
    }
}

/// Frames of one DWARF result: inlined callees (innermost first), then the
/// function they were inlined into.
fn dwarf_frames(sym: &blazesym::symbolize::Sym<'_>, elf_module: Option<String>) -> Vec<Frame> {
    let module = sym
        .module
        .as_ref()
        .map(|m| m.to_string_lossy().into_owned())
        .or(elf_module);
    let mut frames: Vec<Frame> = sym
        .inlined
        .iter()
        .rev()
        .map(|f| {
            let (file, line) = code_location(f.code_info.as_ref());
            Frame {
                function: f.name.to_string(),
                file,
                line,
                module: module.clone(),
                inlined: true,
            }
        })
        .collect();
    let (file, line) = code_location(sym.code_info.as_deref());
    frames.push(Frame {
        function: sym.name.to_string(),
        file,
        line,
        module,
        inlined: false,
    });
    frames
}

/// Fixture frames for the classification and detection tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::Frame;

    /// A frame whose source file sits where its crate's sources would:
    /// std under /rustc, tokio under the cargo registry, the rest in the
    /// program.
    pub(crate) fn frame(name: &str) -> Frame {
        let file = if name.starts_with("std::") {
            "/rustc/0123abcd/library/std/src/thread/mod.rs"
        } else if name.starts_with("tokio::") {
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/runtime/x.rs"
        } else {
            "/home/me/app/src/lib.rs"
        };
        Frame {
            function: name.into(),
            file: Some(file.into()),
            line: Some(3),
            module: None,
            inlined: false,
        }
    }
}

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
        let mut s = Symbols::new(std::process::id());
        let frames = s.stack(&[addr + 1]);
        let f = frames.last().unwrap();
        assert!(f.function.contains("a_function_to_find"), "{frames:?}");
        assert!(
            f.location().is_some_and(|l| l.contains("symbols.rs")),
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
}
