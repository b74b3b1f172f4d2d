//! What the unwinder needs of one ELF object: its unwind sections, its
//! loadable segments (to place it in the process), and whether its code
//! keeps frame pointers.

use std::ops::Range;
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

/// How an object's frames can be walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnwindMethod {
    /// Its functions keep a frame-pointer chain.
    FramePointers,
    /// DWARF call-frame information (`.eh_frame` or `.debug_frame`).
    DwarfCfi,
    /// Neither: stacks stop in this object.
    None,
}

impl UnwindMethod {
    /// Short label for the status line and the report.
    pub fn label(self) -> &'static str {
        match self {
            UnwindMethod::FramePointers => "frame pointers",
            UnwindMethod::DwarfCfi => "DWARF CFI",
            UnwindMethod::None => "no unwind info",
        }
    }
}

/// A section's address in the object and its bytes.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Addresses as linked (SVMA).
    pub svma: Range<u64>,
    /// Contents (shared with the unwinder's copy of the object).
    pub data: Arc<[u8]>,
}

/// A loadable segment (PT_LOAD).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Its bytes in the file.
    pub file: Range<u64>,
    /// Its linked address (p_vaddr).
    pub vaddr: u64,
    /// It holds code.
    pub executable: bool,
}

impl Segment {
    /// True when a mapping at file `offset` maps this segment: mappings
    /// start at the page below the segment's first byte.
    fn mapped_at(&self, offset: u64) -> bool {
        (self.file.start & !0xfff..self.file.end.max(self.file.start + 1)).contains(&offset)
    }
}

/// The parts of an ELF object the unwinder uses.
#[derive(Debug, Clone, Default)]
pub struct ObjectInfo {
    /// `.eh_frame`.
    pub eh_frame: Option<Section>,
    /// `.eh_frame_hdr` (the binary-search index of `.eh_frame`).
    pub eh_frame_hdr: Option<Section>,
    /// `.debug_frame` (objects built without `.eh_frame`).
    pub debug_frame: Option<Section>,
    /// `.text`'s addresses as linked (its bytes are read only to judge
    /// frame pointers, and not kept).
    pub text: Option<Range<u64>>,
    /// `.got` (for got-relative CFI pointers).
    pub got: Option<Range<u64>>,
    /// Loadable segments.
    pub segments: Vec<Segment>,
    /// True when most of its functions start with a frame-pointer
    /// prologue; `None` when it has no function symbols to judge by.
    pub frame_pointers: Option<bool>,
}

/// x86_64 prologue that sets up a frame pointer: `push %rbp; mov %rsp,%rbp`.
const FP_PROLOGUE: [u8; 4] = [0x55, 0x48, 0x89, 0xe5];
/// `endbr64`, which CET-enabled code puts before the prologue.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
/// How many function symbols are looked at.
const FP_SAMPLE: usize = 4000;

fn section(file: &object::File<'_>, name: &str) -> Option<Section> {
    let s = file.section_by_name(name)?;
    Some(Section {
        svma: s.address()..s.address() + s.size(),
        data: Arc::from(&*s.uncompressed_data().ok()?),
    })
}

/// True when the code at `addr` (inside `.text`, linked at `svma` and
/// holding `code`) starts a frame.
fn starts_with_fp_prologue(svma: &Range<u64>, code: &[u8], addr: u64) -> bool {
    let Some(off) = addr.checked_sub(svma.start) else {
        return false;
    };
    let Some(code) = code.get(off as usize..) else {
        return false;
    };
    let code = code.strip_prefix(&ENDBR64[..]).unwrap_or(code);
    code.starts_with(&FP_PROLOGUE)
}

/// Judges frame pointers by the prologues of the object's functions
/// (skipping tiny ones, which often need no frame either way).
fn judge_frame_pointers(file: &object::File<'_>, svma: &Range<u64>, code: &[u8]) -> Option<bool> {
    let mut seen = 0usize;
    let mut with_fp = 0usize;
    let symbols = file.symbols().chain(file.dynamic_symbols());
    for sym in symbols.filter(|s| s.kind() == SymbolKind::Text && s.size() >= 32) {
        if !svma.contains(&sym.address()) {
            continue;
        }
        seen += 1;
        with_fp += usize::from(starts_with_fp_prologue(svma, code, sym.address()));
        if seen >= FP_SAMPLE {
            break;
        }
    }
    (seen >= 8).then_some(with_fp * 2 >= seen)
}

impl ObjectInfo {
    /// Reads the unwind-related parts of an ELF image.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        let file = object::File::parse(data).map_err(|e| e.to_string())?;
        let text_section = file.section_by_name(".text");
        let text = text_section
            .as_ref()
            .map(|s| s.address()..s.address() + s.size());
        let frame_pointers = text_section.zip(text.as_ref()).and_then(|(s, svma)| {
            let code = s.uncompressed_data().ok()?;
            judge_frame_pointers(&file, svma, &code)
        });
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                let executable = match s.flags() {
                    object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                    _ => false,
                };
                Segment {
                    file: off..off + size,
                    vaddr: s.address(),
                    executable,
                }
            })
            .collect();
        Ok(ObjectInfo {
            eh_frame: section(&file, ".eh_frame"),
            eh_frame_hdr: section(&file, ".eh_frame_hdr"),
            debug_frame: section(&file, ".debug_frame"),
            got: file
                .section_by_name(".got")
                .map(|s| s.address()..s.address() + s.size()),
            text,
            segments,
            frame_pointers,
        })
    }

    /// True when the object carries call-frame information.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.as_ref().is_some_and(|s| !s.data.is_empty())
            || self
                .debug_frame
                .as_ref()
                .is_some_and(|s| !s.data.is_empty())
    }

    /// How its frames are best walked.
    pub fn method(&self) -> UnwindMethod {
        if self.frame_pointers == Some(true) {
            UnwindMethod::FramePointers
        } else if self.has_cfi() {
            UnwindMethod::DwarfCfi
        } else {
            UnwindMethod::None
        }
    }

    /// The linked address (SVMA) of the start of a code mapping at file
    /// `offset`. The mapping starts at a page boundary, which may lie
    /// inside the previous (read-only) segment's last page, so the code
    /// segment is preferred.
    pub fn svma_of_offset(&self, offset: u64) -> Option<u64> {
        let seg = self
            .segments
            .iter()
            .find(|s| s.executable && s.mapped_at(offset))
            .or_else(|| self.segments.iter().find(|s| s.mapped_at(offset)))?;
        Some(seg.vaddr.wrapping_sub(seg.file.start.wrapping_sub(offset)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_binary() -> ObjectInfo {
        let data = std::fs::read("/proc/self/exe").unwrap();
        ObjectInfo::parse(&data).unwrap()
    }

    #[test]
    fn reads_this_test_binary() {
        let info = this_binary();
        assert!(info.has_cfi(), "rustc always emits .eh_frame");
        assert!(info.eh_frame_hdr.is_some());
        assert!(!info.segments.is_empty());
        // The workspace builds with -C force-frame-pointers=yes (.cargo/config.toml)
        // unless RUSTFLAGS overrides it; either way the judgement is made.
        assert!(info.frame_pointers.is_some());
    }

    #[test]
    fn prologues_are_recognized_with_and_without_endbr64() {
        let svma = 0x1000..0x1010;
        let code = [
            0x55, 0x48, 0x89, 0xe5, 0xc3, 0, 0, 0, 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5,
        ];
        let starts = |addr| starts_with_fp_prologue(&svma, &code, addr);
        assert!(starts(0x1000));
        assert!(starts(0x1008));
        assert!(!starts(0x1004));
        assert!(!starts(0x0ff0), "before .text");
        assert!(!starts(0x2000), "after .text");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(ObjectInfo::parse(b"not an ELF file").is_err());
        assert!(ObjectInfo::parse(&[]).is_err());
    }

    #[test]
    fn methods_follow_the_evidence() {
        let mut info = ObjectInfo::default();
        assert_eq!(info.method(), UnwindMethod::None);
        info.eh_frame = Some(Section {
            svma: 0..4,
            data: Arc::from(&[1u8, 2, 3, 4][..]),
        });
        assert_eq!(info.method(), UnwindMethod::DwarfCfi);
        info.frame_pointers = Some(true);
        assert_eq!(info.method(), UnwindMethod::FramePointers);
        // runq-demo as cargo links it: the code segment starts mid-page, in
        // the page where the read-only segment ends.
        info.segments = vec![
            Segment {
                file: 0..0x2f31c,
                vaddr: 0,
                executable: false,
            },
            Segment {
                file: 0x2f320..0xa5410,
                vaddr: 0x30320,
                executable: true,
            },
        ];
        assert_eq!(info.svma_of_offset(0x2f000), Some(0x30000));
        assert_eq!(info.svma_of_offset(0x1000), Some(0x1000));
        assert_eq!(info.svma_of_offset(0xb0000), None);
    }
}
