//! `/proc/<pid>/task/<tid>/io`: per-task I/O accounting
//! (`CONFIG_TASK_IO_ACCOUNTING`).

use super::{kv_lines, parse_u64};

/// The seven counters of an io file; a key the kernel omitted stays `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskIo {
    /// Bytes passed to read-like syscalls.
    pub rchar: Option<u64>,
    /// Bytes passed to write-like syscalls.
    pub wchar: Option<u64>,
    /// Read syscalls.
    pub syscr: Option<u64>,
    /// Write syscalls.
    pub syscw: Option<u64>,
    /// Bytes fetched from storage.
    pub read_bytes: Option<u64>,
    /// Bytes sent to storage.
    pub write_bytes: Option<u64>,
    /// Dirty bytes whose writeback this task cancelled (by truncating).
    pub cancelled_write_bytes: Option<u64>,
}

/// Parses io text.
pub fn parse_io(text: &[u8]) -> TaskIo {
    let mut out = TaskIo::default();
    for (k, v) in kv_lines(text, b':') {
        let slot = match k {
            b"rchar" => &mut out.rchar,
            b"wchar" => &mut out.wchar,
            b"syscr" => &mut out.syscr,
            b"syscw" => &mut out.syscw,
            b"read_bytes" => &mut out.read_bytes,
            b"write_bytes" => &mut out.write_bytes,
            b"cancelled_write_bytes" => &mut out.cancelled_write_bytes,
            _ => continue,
        };
        *slot = parse_u64(v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_keys() {
        let io = parse_io(b"rchar: 6976\nwchar: 1\nsyscr: 10\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 5\n");
        assert_eq!(io.rchar, Some(6976));
        assert_eq!(io.syscw, Some(2));
        assert_eq!(io.read_bytes, Some(4096));
        assert_eq!(io.cancelled_write_bytes, Some(5));
        assert_eq!(parse_io(b"rchar: x\n").rchar, None);
    }
}
