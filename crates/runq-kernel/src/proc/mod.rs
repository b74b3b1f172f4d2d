//! Per-task `/proc` files: `stat`, `status`, `sched`, `io`, `cgroup` and
//! `smaps_rollup`, plus a reader that reuses one buffer across many files.
//!
//! Parsers take bytes and return `Option`/typed values so a truncated or
//! foreign file never panics; [`FileReader`] does the I/O with raw
//! `open`/`read` so a host-wide walk allocates nothing per file.

pub mod cgroup_file;
pub mod io;
pub mod reader;
pub mod sched;
pub mod smaps_rollup;
pub mod stat;
pub mod status;
pub mod tasks;

pub use cgroup_file::{parse_task_cgroup, TaskCgroups};
pub use io::{parse_io, TaskIo};
pub use reader::FileReader;
pub use sched::{parse_sched, TaskSched};
pub use smaps_rollup::parse_smaps_rollup;
pub use stat::{parse_stat, TaskStat};
pub use status::{parse_status, TaskStatus};

/// Splits `key<sep>value` lines: yields trimmed key and trimmed value bytes.
pub(crate) fn kv_lines(text: &[u8], sep: u8) -> impl Iterator<Item = (&[u8], &[u8])> {
    text.split(|&b| b == b'\n').filter_map(move |line| {
        let pos = line.iter().position(|&b| b == sep)?;
        Some((trim(&line[..pos]), trim(&line[pos + 1..])))
    })
}

/// Trims ASCII whitespace at both ends.
pub(crate) fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

/// Parses an unsigned decimal without allocating; `None` on anything else.
pub(crate) fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Parses a signed decimal without allocating.
pub(crate) fn parse_i64(b: &[u8]) -> Option<i64> {
    match b.first() {
        Some(b'-') => parse_u64(&b[1..])
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        _ => parse_u64(b).and_then(|v| i64::try_from(v).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"42"), Some(42));
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"99999999999999999999"), None);
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(trim(b"  a b \n"), b"a b");
        assert_eq!(trim(b"   "), b"");
    }
}
