//! Every sched_ext dump the kernel writes while runq watches a scheduler,
//! read as it comes: the kernel's own at a BPF scheduler's error exit
//! (`comm[pid] triggered exit kind N:`, written before it disables the
//! scheduler) and each SysRq-D's, block by block, from `trace_pipe` of a
//! tracefs instance of runq's own.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use super::{
    close_instance, open_instance, open_sysrq, parse_payloads, payload_of, starts_a_dump, ScxDump,
};

/// The most lines kept of one dump (a 4,096-CPU host's dump is longer;
/// the first lines name the exit and the CPUs with work come first).
const MAX_BLOCK_LINES: usize = 20_000;

/// One dump: its first line and the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpBlock {
    /// The dump's lines, its first (what triggered it) included.
    pub lines: Vec<String>,
    /// Lines left out past the first 20,000.
    pub cut: usize,
}

impl DumpBlock {
    fn new(first: &str) -> Self {
        DumpBlock {
            lines: vec![first.to_string()],
            cut: 0,
        }
    }

    /// Whether a scheduler's error exit triggered it (not SysRq-D).
    pub fn is_exit(&self) -> bool {
        self.lines
            .first()
            .is_some_and(|l| l.contains("triggered exit kind"))
    }

    /// The CPUs and runnable tasks it lists.
    pub fn parse(&self) -> Option<ScxDump> {
        parse_payloads(self.lines.iter().map(String::as_str))
    }

    fn push(&mut self, line: &str) {
        if self.lines.len() < MAX_BLOCK_LINES {
            self.lines.push(line.to_string());
        } else {
            self.cut += 1;
        }
    }
}

/// A tracefs instance with `sched_ext_dump` on, read without blocking.
/// Dropping it turns the event off and removes the instance.
pub struct DumpStream {
    instance: PathBuf,
    pipe: File,
    sysrq: Option<File>,
    /// A line read in part.
    partial: String,
    current: Option<DumpBlock>,
    _guard: Option<crate::guard::Guard>,
}

impl std::fmt::Debug for DumpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpStream")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl DumpStream {
    /// Sets up the instance (mounting tracefs when it may); the error is
    /// why dumps cannot be had, as a sentence.
    pub fn open() -> Result<DumpStream, String> {
        let (instance, guard) = open_instance()?;
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(instance.join("trace_pipe"));
        let pipe = match pipe {
            Ok(p) => p,
            Err(e) => {
                close_instance(&instance);
                return Err(format!("{}/trace_pipe: {e}", instance.display()));
            }
        };
        Ok(DumpStream {
            instance,
            pipe,
            sysrq: open_sysrq().ok(),
            partial: String::new(),
            current: None,
            _guard: guard,
        })
    }

    /// Has the kernel dump sched_ext's state now (SysRq-D; it writes
    /// nothing while no BPF scheduler is enabled).
    pub fn trigger(&mut self) -> io::Result<()> {
        match self.sysrq.as_mut() {
            Some(f) => f.write_all(b"D"),
            None => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "/proc/sysrq-trigger is not open (the dump needs root)",
            )),
        }
    }

    /// Reads what the kernel wrote since the last read and returns the
    /// dumps it completed: one ends where the next begins, or at a read
    /// that brings nothing new (the kernel writes a dump in one go).
    pub fn read(&mut self) -> io::Result<Vec<DumpBlock>> {
        let text = self.read_available()?;
        let mut done = Vec::new();
        let mut any = false;
        for line in text.lines() {
            let Some(payload) = payload_of(line) else {
                continue;
            };
            any = true;
            if starts_a_dump(payload) {
                done.extend(self.current.replace(DumpBlock::new(payload)));
            } else if let Some(b) = self.current.as_mut() {
                b.push(payload);
            }
        }
        if !any {
            done.extend(self.current.take());
        }
        Ok(done)
    }

    /// The complete lines readable now (a line read in part waits for the
    /// next read).
    fn read_available(&mut self) -> io::Result<String> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            match self.pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.partial.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let complete = self.partial.rfind('\n').map_or(0, |i| i + 1);
        let rest = self.partial.split_off(complete);
        Ok(std::mem::replace(&mut self.partial, rest))
    }
}

impl Drop for DumpStream {
    fn drop(&mut self) {
        close_instance(&self.instance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_dump_is_told_from_a_sysrq_one() {
        let exit = DumpBlock::new("scx_qmap[212] triggered exit kind 1026:");
        assert!(exit.is_exit());
        assert!(!DumpBlock::new("Debug dump triggered by SysRq-D").is_exit());
    }

    #[test]
    fn a_block_keeps_its_first_lines_and_counts_the_rest() {
        let mut b = DumpBlock::new("Debug dump triggered by SysRq-D");
        for _ in 0..MAX_BLOCK_LINES + 5 {
            b.push("CPU 0   : nr_run=1");
        }
        assert_eq!(b.lines.len(), MAX_BLOCK_LINES);
        assert_eq!(b.cut, 6);
    }

    /// As root: on a kernel without sched_ext the stream says so and
    /// leaves no instance; on one with it, it opens, reads no dump while no
    /// scheduler runs, and removes its instance when dropped.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn the_stream_opens_where_it_can_and_leaves_no_instance() {
        let has_event = std::path::Path::new("/sys/kernel/sched_ext").is_dir();
        let mut s = match DumpStream::open() {
            Ok(s) => s,
            Err(why) => {
                assert!(!has_event, "{why}");
                assert!(why.contains("no sched_ext_dump trace event"), "{why}");
                let own = format!("runq-{}-", std::process::id());
                let left = std::fs::read_dir("/sys/kernel/tracing/instances")
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(&own));
                assert!(!left, "an instance was left behind");
                return;
            }
        };
        let dir = s.instance.clone();
        assert!(dir.is_dir());
        let enabled_now = std::fs::read_to_string("/sys/kernel/sched_ext/state")
            .is_ok_and(|st| st.trim() == "enabled");
        if !enabled_now {
            s.trigger().expect("SysRq-D as root");
            assert_eq!(s.read().expect("read"), vec![], "no scheduler, no dump");
        }
        drop(s);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}
