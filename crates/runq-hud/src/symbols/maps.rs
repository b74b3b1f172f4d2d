//! The code mappings of a process (executable regions with a backing
//! object), read from /proc/PID/maps.

use std::path::{Path, PathBuf};

/// One executable mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeMapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset of `start` in the backing file.
    pub offset: u64,
    /// The backing object as /proc shows it (a path, or `[vdso]`).
    pub path: String,
}

impl CodeMapping {
    /// True when `addr` falls inside the mapping.
    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }

    /// The file offset of `addr` (which must be inside the mapping).
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.offset
    }
}

/// Parses the executable, object-backed lines of a maps file; anonymous
/// executable memory (JIT code) has no object and is left out.
pub fn parse_code_mappings(text: &str) -> Vec<CodeMapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<CodeMapping> {
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        f
    };
    let (range, perms, offset, _dev, _inode) = (field(), field(), field(), field(), field());
    let path = rest.trim();
    if !perms.contains('x') || path.is_empty() {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    Some(CodeMapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        path: path.to_string(),
    })
}

/// The mapping `addr` falls in, among `mappings` in address order.
pub fn find(mappings: &[CodeMapping], addr: u64) -> Option<&CodeMapping> {
    let i = mappings.partition_point(|m| m.start <= addr);
    mappings[..i].last().filter(|m| m.contains(addr))
}

/// Reads the code mappings of `pid` under `proc_root`.
pub fn read_code_mappings(proc_root: &Path, pid: u32) -> std::io::Result<Vec<CodeMapping>> {
    let text = std::fs::read_to_string(proc_root.join(format!("{pid}/maps")))?;
    Ok(parse_code_mappings(&text))
}

/// The target's executable as /proc/PID/maps names it.
pub fn exe_path(proc_root: &Path, pid: u32) -> std::io::Result<PathBuf> {
    std::fs::read_link(proc_root.join(format!("{pid}/exe")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
5581a0000000-5581a0010000 r--p 00000000 fd:01 1311 /usr/bin/my app
5581a0010000-5581a0090000 r-xp 00010000 fd:01 1311 /usr/bin/my app
5581a0090000-5581a00a0000 rw-p 00090000 fd:01 1311 /usr/bin/my app
7f0000000000-7f0000021000 rw-p 00000000 00:00 0
7f1000000000-7f1000001000 rwxp 00000000 00:00 0
7f2000028000-7f20001bd000 r-xp 00028000 fd:01 2222                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f3000000000-7f3000002000 r-xp 00000000 fd:01 3333 /tmp/gone (deleted)
7ffd4e5f6000-7ffd4e5f8000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn keeps_executable_object_backed_mappings() {
        let m = parse_code_mappings(MAPS);
        let paths: Vec<&str> = m.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/usr/bin/my app",
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/tmp/gone (deleted)",
                "[vdso]",
                "[vsyscall]"
            ]
        );
        assert_eq!(m[0].start, 0x5581a0010000);
        assert_eq!(m[0].offset, 0x10000);
        assert!(m[0].contains(0x5581a0010000) && !m[0].contains(0x5581a0090000));
        assert_eq!(m[0].file_offset(0x5581a0010123), 0x10123);
        assert_eq!(find(&m, 0x7f2000028000).unwrap().path, m[1].path);
        assert_eq!(find(&m, 0x7ffd4e5f7fff).unwrap().path, "[vdso]");
        // Between mappings, before the first, and ASCII text read as an
        // address ("witch.co"): in none.
        for addr in [0x5581a0090000, 0x1000, 0x6f632e6863746977] {
            assert!(find(&m, addr).is_none(), "{addr:#x}");
        }
    }

    #[test]
    fn skips_garbage_lines() {
        assert!(parse_code_mappings("not a maps line\n\nzz-yy r-xp 0 0 0 /x\n").is_empty());
    }
}
