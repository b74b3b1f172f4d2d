//! Turning user-stack addresses into frames with blazesym: symbol tables
//! and DWARF (file:line, inlined functions), demangled, through
//! /proc/PID/map_files so PIE and other mount namespaces work. Results are
//! cached per address.

use std::collections::HashMap;

use blazesym::symbolize::source::{Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::Pid;
use serde::Serialize;

/// One frame of a symbolized stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

    fn resolve(&mut self, addrs: &[u64]) {
        let lookup: Vec<u64> = addrs.iter().map(|a| a.saturating_sub(1)).collect();
        let mut src = Process::new(Pid::from(self.pid));
        src.debug_syms = true;
        let src = Source::Process(src);
        let results = self
            .symbolizer
            .symbolize(&src, Input::AbsAddr(&lookup))
            .unwrap_or_default();
        for (i, addr) in addrs.iter().enumerate() {
            let frames = match results.get(i) {
                Some(Symbolized::Sym(sym)) => {
                    let module = sym
                        .module
                        .as_ref()
                        .map(|m| m.to_string_lossy().into_owned());
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
                    self.debug_info_seen |= line.is_some();
                    frames.push(Frame {
                        function: sym.name.to_string(),
                        file,
                        line,
                        module,
                        inlined: false,
                    });
                    frames
                }
                _ => vec![Frame::unknown(*addr)],
            };
            self.cache.insert(*addr, frames);
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
