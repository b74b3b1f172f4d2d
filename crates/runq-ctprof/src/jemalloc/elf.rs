//! The parts of an executable the jemalloc reader needs — jemalloc's
//! thread-local `tsd_tls` symbol, the TLS segment and the debug sections —
//! read with the `object` crate (already in the tree through aya), through
//! a read cache so a large executable is not loaded whole.

use std::fs::File;

use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::read::ReadCache;
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolKind};

/// The TLS segment of an executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsSegment {
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_align`.
    pub align: u64,
}

/// An opened executable.
pub struct Elf {
    cache: ReadCache<File>,
}

impl std::fmt::Debug for Elf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elf").finish_non_exhaustive()
    }
}

impl Elf {
    /// Opens `file`; `None` for anything but a readable ELF64 file.
    pub fn open(file: File) -> Option<Elf> {
        let elf = Elf {
            cache: ReadCache::new(file),
        };
        elf.parsed()?;
        Some(elf)
    }

    fn parsed(&self) -> Option<ElfFile64<'_, Endianness, &ReadCache<File>>> {
        ElfFile64::parse(&self.cache).ok()
    }

    /// The TLS segment (`PT_TLS`), if the executable has one.
    pub fn tls(&self) -> Option<TlsSegment> {
        let elf = self.parsed()?;
        let endian = elf.endian();
        elf.elf_program_headers()
            .iter()
            .find(|ph| ph.p_type(endian) == object::elf::PT_TLS)
            .map(|ph| TlsSegment {
                memsz: ph.p_memsz(endian),
                align: ph.p_align(endian).max(1),
            })
    }

    /// A section's bytes by name (empty for `SHT_NOBITS`).
    pub fn section(&self, name: &str) -> Option<Vec<u8>> {
        let elf = self.parsed()?;
        let section = elf.section_by_name(name)?;
        Some(section.data().ok()?.to_vec())
    }

    /// Value of the first TLS symbol whose name ends with `suffix`
    /// (searched in `.symtab`).
    pub fn tls_symbol(&self, suffix: &str) -> Option<u64> {
        let elf = self.parsed()?;
        let found = elf
            .symbols()
            .find(|s| s.kind() == SymbolKind::Tls && s.name().is_ok_and(|n| n.ends_with(suffix)));
        found.map(|s| s.address())
    }
}

/// Offset of a symbol from the thread pointer for the executable's static
/// TLS block (x86_64 variant II: the block ends at the thread pointer).
pub fn tp_offset(tls: TlsSegment, st_value: u64) -> i64 {
    let block = tls.memsz.div_ceil(tls.align) * tls.align;
    st_value as i64 - block as i64
}
