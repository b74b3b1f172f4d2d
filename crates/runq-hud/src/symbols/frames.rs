//! Frames from blazesym's results: DWARF's inlined callees and their
//! caller, with the symbol table's qualified name on the outermost one.

use std::sync::Arc;

use super::Frame;

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
