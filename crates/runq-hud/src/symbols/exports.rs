//! Approximate names for addresses the exact lookup cannot name: in a
//! module that has only `.dynsym` (a stripped shared library), an address
//! inside a static function is named after the nearest exported function
//! before it, as `~deflate`. The `~` says the name is a neighbour's, not
//! the function's own; no offset is given, so every address near one
//! export adds up on one row.

use std::path::Path;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// The exported functions of one object and where its file maps.
#[derive(Debug, Default)]
pub struct Exports {
    /// (virtual address, name), sorted by address.
    functions: Vec<(u64, String)>,
    /// Loadable segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

/// Farther than this from its nearest export, an address is not named
/// after it (it keeps `object+0xoffset`): most functions are shorter, so a
/// longer distance means other, unexported functions lie between, and the
/// neighbour's name would mislead (libc's memmove variants sit kilobytes
/// past `__nss_database_lookup`).
const MAX_DISTANCE: u64 = 0x800;

impl Exports {
    /// Reads the exported functions of the ELF object at `path`; `None`
    /// when it cannot be read or exports none.
    pub fn load(path: &Path) -> Option<Exports> {
        let data = crate::mapped::MappedFile::open(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let mut functions: Vec<(u64, String)> = file
            .dynamic_symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.name().ok()?.to_string())))
            .collect();
        if functions.is_empty() {
            return None;
        }
        functions.sort_unstable();
        let segments = file
            .segments()
            .map(|seg| {
                let (offset, size) = seg.file_range();
                (offset, size, seg.address())
            })
            .collect();
        Some(Exports {
            functions,
            segments,
        })
    }

    /// `~name` for the export at or before `file_offset`.
    pub fn nearest(&self, file_offset: u64) -> Option<String> {
        let vaddr = self
            .segments
            .iter()
            .find(|(off, size, _)| (*off..off + size).contains(&file_offset))
            .map(|(off, _, addr)| addr + (file_offset - off))?;
        let i = self.functions.partition_point(|(a, _)| *a <= vaddr);
        let (start, name) = self.functions.get(i.checked_sub(1)?)?;
        let delta = vaddr - start;
        (delta <= MAX_DISTANCE).then(|| format!("~{name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Exports {
        Exports {
            functions: vec![(0x1000, "inflate".into()), (0x2000, "deflate".into())],
            segments: vec![(0, 0x3000, 0), (0x3000, 0x1000, 0x2400)],
        }
    }

    #[test]
    fn an_address_is_named_after_the_export_before_it() {
        let t = table();
        assert_eq!(t.nearest(0x2010).as_deref(), Some("~deflate"));
        assert_eq!(t.nearest(0x17ff).as_deref(), Some("~inflate"));
        assert_eq!(t.nearest(0x1fff), None, "too far past inflate");
        assert_eq!(t.nearest(0x0fff), None, "before the first export");
        // The second segment maps file 0x3000 at 0x2400.
        assert_eq!(t.nearest(0x3004).as_deref(), Some("~deflate"));
        assert_eq!(t.nearest(0x9000), None, "outside every segment");
    }

    #[test]
    fn a_stripped_system_library_exports_its_api() {
        let libz = Path::new("/lib/x86_64-linux-gnu/libz.so.1");
        let Some(t) = Exports::load(libz) else {
            eprintln!("skipped: no {} here", libz.display());
            return;
        };
        assert!(t.functions.iter().any(|(_, n)| n == "deflate"));
        let (addr, _) = t.functions.iter().find(|(_, n)| n == "deflate").unwrap();
        let (off, _, seg) = t
            .segments
            .iter()
            .find(|(_, size, a)| (*a..a + size).contains(addr))
            .unwrap();
        let name = t.nearest(addr - seg + off + 4).unwrap();
        assert!(name.starts_with('~'), "{name}");
    }
}
