//! Just enough ELF64 (little-endian) to find jemalloc's thread-local
//! `tsd_tls` symbol, the executable's TLS segment and its debug sections.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The TLS segment of an executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsSegment {
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_align`.
    pub align: u64,
}

/// A section's file range.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// File offset.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

/// The parts of an ELF file the jemalloc reader needs.
#[derive(Debug)]
pub struct Elf {
    file: File,
    /// TLS segment, if the executable has one.
    pub tls: Option<TlsSegment>,
    sections: Vec<(String, Section, u32)>,
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

fn read_range(file: &File, offset: u64, size: u64) -> Option<Vec<u8>> {
    if size > 1 << 30 {
        return None;
    }
    let mut buf = vec![0u8; size as usize];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

impl Elf {
    /// Parses the headers of `file`; `None` for anything but ELF64 LE.
    pub fn open(file: File) -> Option<Elf> {
        let hdr = read_range(&file, 0, 64)?;
        if hdr.get(0..4)? != b"\x7fELF" || hdr[4] != 2 || hdr[5] != 1 {
            return None;
        }
        let (phoff, shoff) = (u64_at(&hdr, 0x20)?, u64_at(&hdr, 0x28)?);
        let (phentsize, phnum) = (u16_at(&hdr, 0x36)? as u64, u16_at(&hdr, 0x38)? as u64);
        let (shentsize, shnum, shstrndx) = (
            u16_at(&hdr, 0x3a)? as u64,
            u16_at(&hdr, 0x3c)? as u64,
            u16_at(&hdr, 0x3e)? as usize,
        );
        let ph = read_range(&file, phoff, phentsize * phnum)?;
        let tls = (0..phnum as usize).find_map(|i| {
            let o = i * phentsize as usize;
            (u32_at(&ph, o)? == 7).then(|| TlsSegment {
                memsz: u64_at(&ph, o + 40).unwrap_or(0),
                align: u64_at(&ph, o + 48).unwrap_or(1).max(1),
            })
        });
        let sh = read_range(&file, shoff, shentsize * shnum)?;
        let raw: Vec<(u32, u32, Section, u32)> = (0..shnum as usize)
            .filter_map(|i| {
                let o = i * shentsize as usize;
                Some((
                    u32_at(&sh, o)?,
                    u32_at(&sh, o + 4)?,
                    Section {
                        offset: u64_at(&sh, o + 24)?,
                        size: u64_at(&sh, o + 32)?,
                    },
                    u32_at(&sh, o + 40)?,
                ))
            })
            .collect();
        let names = raw
            .get(shstrndx)
            .and_then(|s| read_range(&file, s.2.offset, s.2.size))
            .unwrap_or_default();
        let sections = raw
            .iter()
            .map(|(name, ty, sec, link)| {
                let n = names.get(*name as usize..).unwrap_or(&[]);
                let end = n.iter().position(|&b| b == 0).unwrap_or(n.len());
                // Type 8 (SHT_NOBITS) has no file bytes.
                let sec = if *ty == 8 {
                    Section { offset: 0, size: 0 }
                } else {
                    *sec
                };
                (String::from_utf8_lossy(&n[..end]).into_owned(), sec, *link)
            })
            .collect();
        Some(Elf {
            file,
            tls,
            sections,
        })
    }

    /// Reads a section by name.
    pub fn section(&self, name: &str) -> Option<Vec<u8>> {
        let (_, s, _) = self.sections.iter().find(|(n, _, _)| n == name)?;
        read_range(&self.file, s.offset, s.size)
    }

    /// Value of the first `STT_TLS` symbol whose name ends with `suffix`
    /// (searched in `.symtab`).
    pub fn tls_symbol(&self, suffix: &str) -> Option<u64> {
        let idx = self.sections.iter().position(|(n, _, _)| n == ".symtab")?;
        let (_, symtab, link) = &self.sections[idx];
        let strtab = self.sections.get(*link as usize)?.1;
        let syms = read_range(&self.file, symtab.offset, symtab.size)?;
        let strs = read_range(&self.file, strtab.offset, strtab.size)?;
        syms.chunks_exact(24).find_map(|s| {
            if s[4] & 0xf != 6 {
                return None;
            }
            let name = strs.get(u32_at(s, 0)? as usize..)?;
            let end = name.iter().position(|&b| b == 0)?;
            name[..end]
                .ends_with(suffix.as_bytes())
                .then(|| u64_at(s, 8))
                .flatten()
        })
    }
}

/// Offset of a symbol from the thread pointer for the executable's static
/// TLS block (x86_64 variant II: the block ends at the thread pointer).
pub fn tp_offset(tls: TlsSegment, st_value: u64) -> i64 {
    let block = tls.memsz.div_ceil(tls.align) * tls.align;
    st_value as i64 - block as i64
}
