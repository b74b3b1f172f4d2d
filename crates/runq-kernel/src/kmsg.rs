//! The kernel log through `/dev/kmsg`: a cursor that starts at the end and
//! reads what the kernel logs afterwards (e.g. a sched_ext error dump).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// Extracts the message text of one `/dev/kmsg` record
/// (`prio,seq,usec,flags[,...];text`).
pub fn parse_kmsg_record(record: &str) -> Option<&str> {
    let (header, text) = record.split_once(';')?;
    let mut fields = header.split(',');
    fields.next()?.parse::<u32>().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    Some(text.trim_end_matches('\n'))
}

/// Reads kernel log records appended after it was opened.
#[derive(Debug)]
pub struct KmsgCursor(File);

impl KmsgCursor {
    /// Opens `/dev/kmsg` positioned after the last existing record.
    pub fn open_at_end() -> io::Result<Self> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")?;
        // SAFETY: lseek on a descriptor we own.
        unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_END) };
        Ok(KmsgCursor(f))
    }

    /// Every new record's text (one read per record), until none is left.
    pub fn read_new(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.0.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    if let Some(text) = parse_kmsg_record(&rec) {
                        out.push(text.to_string());
                    }
                }
                // EPIPE: records were overwritten; keep reading from the next.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records() {
        assert_eq!(
            parse_kmsg_record("6,1234,5678,-;sched_ext: BPF scheduler \"x\" errored\n"),
            Some("sched_ext: BPF scheduler \"x\" errored")
        );
        assert_eq!(parse_kmsg_record("4,1,2,-,caller=T1;hello"), Some("hello"));
        assert_eq!(parse_kmsg_record("garbage"), None);
        assert_eq!(parse_kmsg_record("x,1,2,-;t"), None);
    }
}
