//! Separate debug info, found the way gdb and perf find it: the
//! build-id path (`/usr/lib/debug/.build-id/xx/yyyy.debug`), then the
//! name in the executable's `.gnu_debuglink` next to it, in its `.debug/`
//! directory and under `/usr/lib/debug/<its directory>`. A file found
//! must carry the executable's build ID when both have one. Also tells
//! whether an executable is stripped, and maps its file offsets to the
//! virtual addresses a debug file is looked up by (a debug-only file made
//! by `objcopy --only-keep-debug` has no code, so its file offsets mean
//! nothing).

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment};

/// The directories searched for separate debug info.
pub const DEBUG_DIRS: [&str; 2] = ["/usr/lib/debug", "/lib/debug"];

/// How a debug file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// `--debug-file`.
    Given,
    /// The build-id path under a debug directory.
    BuildId,
    /// The executable's `.gnu_debuglink`.
    DebugLink,
}

impl FoundBy {
    /// Words for the report.
    pub fn label(self) -> &'static str {
        match self {
            FoundBy::Given => "--debug-file",
            FoundBy::BuildId => "its build-id path",
            FoundBy::DebugLink => "its .gnu_debuglink",
        }
    }
}

/// What an ELF file holds for symbolization.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfInfo {
    /// Its build ID.
    pub build_id: Option<Vec<u8>>,
    /// The file name in its `.gnu_debuglink`.
    pub debuglink: Option<String>,
    /// It has a symbol table (`.symtab`), not only exported symbols.
    pub symtab: bool,
    /// It has DWARF (`.debug_info`).
    pub dwarf: bool,
    /// Loadable segments: (file offset, file size, virtual address).
    pub segments: Vec<(u64, u64, u64)>,
}

impl ElfInfo {
    /// Reads `path`; `None` when it is not a readable ELF file.
    pub fn read(path: &Path) -> Option<ElfInfo> {
        let data = crate::mapped::MappedFile::open(path).ok()?;
        Self::parse(&data)
    }

    /// Parses an ELF image.
    pub fn parse(data: &[u8]) -> Option<ElfInfo> {
        let file = object::File::parse(data).ok()?;
        let section_has_data = |name: &str| {
            file.section_by_name(name)
                .is_some_and(|s| s.file_range().is_some_and(|(_, size)| size > 0))
        };
        Some(ElfInfo {
            build_id: file.build_id().ok().flatten().map(<[u8]>::to_vec),
            debuglink: file
                .gnu_debuglink()
                .ok()
                .flatten()
                .map(|(name, _crc)| String::from_utf8_lossy(name).into_owned()),
            symtab: section_has_data(".symtab"),
            dwarf: section_has_data(".debug_info"),
            segments: file
                .segments()
                .map(|seg| {
                    let (offset, size) = seg.file_range();
                    (offset, size, seg.address())
                })
                .collect(),
        })
    }

    /// True when it has neither a symbol table nor DWARF: only exported
    /// symbols name its functions.
    pub fn stripped(&self) -> bool {
        !self.symtab && !self.dwarf
    }

    /// The virtual address of a file offset in one of its loadable
    /// segments.
    pub fn virt_offset(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, size, _)| (*off..off + size).contains(&file_offset))
            .map(|(off, _, vaddr)| file_offset - off + vaddr)
    }
}

/// Lowercase hex of a build ID.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where to look for the debug info of the executable at `exe` (its path
/// as the target's memory map names it), in gdb's order.
pub fn candidates(exe: &Path, info: &ElfInfo, debug_dirs: &[PathBuf]) -> Vec<(PathBuf, FoundBy)> {
    let mut out = Vec::new();
    if let Some(id) = info.build_id.as_deref().filter(|id| id.len() >= 2) {
        let rel = format!(".build-id/{:02x}/{}.debug", id[0], hex(&id[1..]));
        for d in debug_dirs {
            out.push((d.join(&rel), FoundBy::BuildId));
        }
    }
    if let (Some(link), Some(dir)) = (&info.debuglink, exe.parent()) {
        out.push((dir.join(link), FoundBy::DebugLink));
        out.push((dir.join(".debug").join(link), FoundBy::DebugLink));
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        for d in debug_dirs {
            out.push((d.join(rel).join(link), FoundBy::DebugLink));
        }
    }
    out
}

/// The separate debug info of the executable at `exe`, which holds
/// `info`: the first candidate that exists, is not the executable itself,
/// has DWARF or a symbol table, and carries the same build ID.
pub fn find(exe: &Path, info: &ElfInfo, debug_dirs: &[PathBuf]) -> Option<(PathBuf, FoundBy)> {
    candidates(exe, info, debug_dirs)
        .into_iter()
        .filter(|(p, _)| p != exe && p.is_file())
        .find(|(p, _)| {
            ElfInfo::read(p).is_some_and(|d| {
                (d.dwarf || d.symtab)
                    && match (&d.build_id, &info.build_id) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    }
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn info(build_id: Option<&[u8]>, link: Option<&str>) -> ElfInfo {
        ElfInfo {
            build_id: build_id.map(<[u8]>::to_vec),
            debuglink: link.map(str::to_string),
            ..ElfInfo::default()
        }
    }

    #[test]
    fn candidates_follow_gdbs_order() {
        let dirs = [PathBuf::from("/usr/lib/debug")];
        let c = candidates(
            Path::new("/opt/svc/bin/svc"),
            &info(Some(&[0xab, 0x01, 0xff]), Some("svc.debug")),
            &dirs,
        );
        let paths: Vec<String> = c.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "/usr/lib/debug/.build-id/ab/01ff.debug",
                "/opt/svc/bin/svc.debug",
                "/opt/svc/bin/.debug/svc.debug",
                "/usr/lib/debug/opt/svc/bin/svc.debug",
            ]
        );
        assert_eq!(c[0].1, FoundBy::BuildId);
        assert_eq!(c[1].1, FoundBy::DebugLink);
        assert!(candidates(Path::new("/x"), &info(None, None), &dirs).is_empty());
    }

    /// objcopy (binutils) on this test binary: a stripped copy with a
    /// debuglink to a debug-only file, found next to it and by build ID.
    #[test]
    fn finds_a_debug_only_file_by_debuglink_and_by_build_id() {
        let me = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (exe, debug) = (dir.path().join("svc"), dir.path().join("svc.debug"));
        let objcopy = |args: &[&std::ffi::OsStr]| {
            Command::new("objcopy")
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        if !objcopy(&["--only-keep-debug".as_ref(), me.as_ref(), debug.as_ref()]) {
            eprintln!("skipped: needs objcopy (binutils)");
            return;
        }
        let link = format!("--add-gnu-debuglink={}", debug.display());
        assert!(objcopy(&[
            "--strip-all".as_ref(),
            link.as_ref(),
            me.as_ref(),
            exe.as_ref()
        ]));
        let stripped = ElfInfo::read(&exe).unwrap();
        assert!(stripped.stripped() && stripped.debuglink.as_deref() == Some("svc.debug"));
        let kept = ElfInfo::read(&debug).unwrap();
        assert!(kept.dwarf && kept.build_id == stripped.build_id);
        assert_eq!(
            find(&exe, &stripped, &[]),
            Some((debug.clone(), FoundBy::DebugLink))
        );
        // The same file under a debug directory's build-id path.
        let id = stripped.build_id.clone().unwrap();
        let by_id = dir
            .path()
            .join(format!("lib/.build-id/{:02x}", id[0]))
            .join(format!("{}.debug", hex(&id[1..])));
        std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
        std::fs::rename(&debug, &by_id).unwrap();
        let dirs = [dir.path().join("lib")];
        assert_eq!(
            find(&exe, &stripped, &dirs),
            Some((by_id, FoundBy::BuildId))
        );
        assert_eq!(
            find(&exe, &stripped, &[]),
            None,
            "the link's target is gone"
        );
    }

    #[test]
    fn file_offsets_map_to_virtual_addresses() {
        let i = ElfInfo {
            segments: vec![(0, 0x1000, 0), (0x1000, 0x5000, 0x2000)],
            ..ElfInfo::default()
        };
        assert_eq!(i.virt_offset(0x1234), Some(0x2234));
        assert_eq!(i.virt_offset(0x10), Some(0x10));
        assert_eq!(i.virt_offset(0x9000), None);
    }
}
