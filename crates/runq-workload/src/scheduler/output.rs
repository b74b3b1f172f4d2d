//! The scheduler's stdout and stderr. A thread drains each pipe for the
//! scheduler's whole life, so a chatty scheduler never blocks on a full
//! pipe, and keeps a bounded [`LineLog`]: the verifier's reason when a
//! program load log passed, the first lines that say error, verifier,
//! exit, fail or panicked (see [`super::quote`]) and the last lines, each
//! cut at [`MAX_LINE_BYTES`].

use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::quote::{Classifier, LineKind};

/// Lines of a stream a report quotes at most.
pub(crate) const EXCERPT_LINES: usize = 5;
/// Longest line kept; the rest of a longer line is dropped.
const MAX_LINE_BYTES: usize = 400;
/// Last lines a start error quotes of a stream that said nothing worse.
const LAST_LINES_QUOTED: usize = 3;

/// A bounded record of a stream's lines: the first [`EXCERPT_LINES`] key
/// lines (error, verifier, exit, fail, panicked; none from a stack
/// backtrace), the first verifier reason, and the last [`EXCERPT_LINES`]
/// non-blank lines, with their line numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LineLog {
    errors: Vec<(u64, String)>,
    tail: VecDeque<(u64, String)>,
    verifier: Option<String>,
    classifier: Classifier,
    total: u64,
}

impl LineLog {
    /// Records one line (without its newline).
    pub fn push(&mut self, line: &str) {
        self.total += 1;
        let line = line.trim_end();
        if line.is_empty() {
            return;
        }
        let n = self.total;
        match self.classifier.feed(line) {
            LineKind::Key if self.errors.len() < EXCERPT_LINES => {
                self.errors.push((n, line.to_string()));
            }
            LineKind::Verifier(why) => {
                self.verifier.get_or_insert(why);
            }
            _ => {}
        }
        if self.tail.len() == EXCERPT_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back((n, line.to_string()));
    }

    /// The stream ended: a program load log it cut short still gives its
    /// reason.
    pub fn finish(&mut self) {
        if let Some(why) = self.classifier.finish() {
            self.verifier.get_or_insert(why);
        }
    }

    /// Lines seen in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The last non-blank line.
    pub fn last(&self) -> Option<&str> {
        self.tail.back().map(|(_, l)| l.as_str())
    }

    /// The verifier's reason (`prog 'x': only read is supported`), when a
    /// program load log passed.
    pub fn verifier(&self) -> Option<&str> {
        self.verifier.as_deref()
    }

    /// The verifier's reason (`verifier: prog 'x': ...`) and the key
    /// lines, in that order.
    fn key_lines(&self) -> Vec<String> {
        self.verifier
            .iter()
            .map(|v| format!("verifier: {v}"))
            .chain(self.errors.iter().map(|(_, l)| l.clone()))
            .collect()
    }

    /// What a start error quotes of this stream: its key lines, or when
    /// it had none and no verifier reason its last [`LAST_LINES_QUOTED`]
    /// lines.
    pub fn quoted(&self) -> Vec<String> {
        if self.errors.is_empty() && self.verifier.is_some() {
            return Vec::new();
        }
        let skip = self.tail.len().saturating_sub(LAST_LINES_QUOTED);
        let lines: Vec<&(u64, String)> = match self.errors.is_empty() {
            false => self.errors.iter().collect(),
            true => self.tail.iter().skip(skip).collect(),
        };
        lines
            .into_iter()
            .map(|(_, l)| l.trim().to_string())
            .collect()
    }

    /// At most [`EXCERPT_LINES`] lines worth quoting: the verifier's
    /// reason, the key lines, then the last lines, each in the order
    /// written and none twice.
    pub fn excerpt(&self) -> Vec<String> {
        let mut lines = self.key_lines();
        lines.truncate(EXCERPT_LINES);
        let room = EXCERPT_LINES - lines.len();
        let mut rest: Vec<String> = self
            .tail
            .iter()
            .rev()
            .filter(|(n, _)| !self.errors.iter().any(|(e, _)| e == n))
            .take(room)
            .map(|(_, l)| l.clone())
            .collect();
        rest.reverse();
        lines.extend(rest);
        lines
    }
}

/// `; the verifier rejected prog 'x': why; stderr: a | b; stdout: c`: what a
/// failed start quotes of both streams (stderr first, where schedulers
/// report; libbpf's log may be on stdout), or nothing when both were
/// silent.
pub(crate) fn quote_streams(out: &LineLog, err: &LineLog) -> String {
    let mut text = String::new();
    if let Some(v) = err.verifier().or(out.verifier()) {
        text.push_str(&format!("; the verifier rejected {v}"));
    }
    for (name, log) in [("stderr", err), ("stdout", out)] {
        let lines = log.quoted();
        if !lines.is_empty() {
            text.push_str(&format!("; {name}: {}", lines.join(" | ")));
        }
    }
    text
}

/// Calls `on_line` for every line `r` yields until EOF or an error, each
/// cut at [`MAX_LINE_BYTES`] (marked with `...`), invalid UTF-8 replaced.
fn read_lines(mut r: impl Read, mut on_line: impl FnMut(&str)) {
    let mut buf = [0u8; 8192];
    let mut line = Vec::with_capacity(MAX_LINE_BYTES);
    let mut cut = false;
    let mut emit = |line: &mut Vec<u8>, cut: &mut bool| {
        let mut text = String::from_utf8_lossy(line).into_owned();
        if *cut {
            text.push_str("...");
        }
        on_line(&text);
        line.clear();
        *cut = false;
    };
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        for &b in &buf[..n] {
            match b {
                b'\n' => emit(&mut line, &mut cut),
                _ if line.len() < MAX_LINE_BYTES => line.push(b),
                _ => cut = true,
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line, &mut cut);
    }
}

/// A stream being drained by its thread into a shared [`LineLog`].
#[derive(Debug, Clone, Default)]
pub(super) struct Watched {
    /// What the stream has said so far.
    pub log: Arc<Mutex<LineLog>>,
    /// Set once a line matched the pattern (shared by both streams).
    pub matched: Arc<AtomicBool>,
    /// Set when the thread reached EOF.
    pub done: Arc<AtomicBool>,
}

impl Watched {
    /// A copy of the log as it stands.
    pub fn snapshot(&self) -> LineLog {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits up to `limit` for the thread to reach EOF (a process that
    /// inherited the pipe may hold it open longer).
    pub(crate) fn wait_done(&self, limit: Duration) {
        let end = Instant::now() + limit;
        while !self.done.load(Ordering::Relaxed) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Starts a thread draining `r` into a [`Watched`]; with `pattern`, the
/// first matching line sets `matched`, which may be shared with another
/// stream's watcher. The thread ends at EOF (when every
/// holder of the pipe's write end has exited).
pub(super) fn watch(
    r: impl Read + Send + 'static,
    name: &str,
    pattern: Option<regex::Regex>,
    matched: Arc<AtomicBool>,
) -> std::io::Result<Watched> {
    let w = Watched {
        matched,
        ..Watched::default()
    };
    let (log, matched, done) = (w.log.clone(), w.matched.clone(), w.done.clone());
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            read_lines(r, |line| {
                if let Some(p) = &pattern {
                    if !matched.load(Ordering::Relaxed) && p.is_match(line) {
                        matched.store(true, Ordering::Relaxed);
                    }
                }
                if let Ok(mut l) = log.lock() {
                    l.push(line);
                }
            });
            if let Ok(mut l) = log.lock() {
                l.finish();
            }
            done.store(true, Ordering::Relaxed);
        })?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(lines: &[&str]) -> LineLog {
        let mut log = LineLog::default();
        lines.iter().for_each(|l| log.push(l));
        log
    }

    #[test]
    fn error_lines_come_first_then_the_last_lines() {
        let mut lines: Vec<String> = (0..200).map(|i| format!("noise {i}")).collect();
        lines[50] = "ERROR: scx_bpf_error: invalid CPU -1 from ops.select_cpu".into();
        lines[120] = "libbpf: map 'stats': error -22".into();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let log = log_of(&refs);
        assert_eq!(log.total(), 200);
        assert_eq!(
            log.excerpt(),
            [
                "ERROR: scx_bpf_error: invalid CPU -1 from ops.select_cpu",
                "libbpf: map 'stats': error -22",
                "noise 197",
                "noise 198",
                "noise 199",
            ]
        );
    }

    #[test]
    fn without_error_lines_the_last_lines_are_quoted() {
        let log = log_of(&["a", "b", "", "c", "d", "e", "f", "  "]);
        assert_eq!(log.excerpt(), ["b", "c", "d", "e", "f"]);
        assert_eq!(log.last(), Some("f"));
        assert_eq!(log.total(), 8);
    }

    #[test]
    fn a_recent_error_line_is_not_quoted_twice() {
        let log = log_of(&["x", "y", "fatal error: boom", "z"]);
        assert_eq!(log.excerpt(), ["fatal error: boom", "x", "y", "z"]);
    }

    #[test]
    fn only_the_first_error_lines_are_kept() {
        let lines: Vec<String> = (0..50).map(|i| format!("Error {i}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let log = log_of(&refs);
        assert_eq!(
            log.excerpt(),
            ["Error 0", "Error 1", "Error 2", "Error 3", "Error 4"]
        );
        assert_eq!(log.excerpt().len(), EXCERPT_LINES);
    }

    #[test]
    fn a_failed_load_quotes_the_verifier_and_both_streams_key_lines() {
        let mut out = log_of(&[
            "libbpf: prog 'lavd_enqueue': BPF program load failed: Permission denied",
            "libbpf: prog 'lavd_enqueue': -- BEGIN PROG LOAD LOG --",
            "; if (err) return error; @ main.bpf.c:812",
            "only read is supported",
            "processed 5678 insns (limit 1000000) max_states_per_insn 4",
            "-- END PROG LOAD LOG --",
        ]);
        out.finish();
        let err = log_of(&[
            "Error: Failed to load BPF program",
            "",
            "Caused by:",
            "    Permission denied (os error 13)",
            "Stack backtrace:",
            "   0: anyhow::error::<impl anyhow::Error>::msg",
        ]);
        assert_eq!(
            quote_streams(&out, &err),
            "; the verifier rejected prog 'lavd_enqueue': only read is supported; \
             stderr: Error: Failed to load BPF program | Permission denied (os error 13); \
             stdout: libbpf: prog 'lavd_enqueue': \
             BPF program load failed: Permission denied"
        );
        assert_eq!(
            out.excerpt()[..2],
            [
                "verifier: prog 'lavd_enqueue': only read is supported",
                "libbpf: prog 'lavd_enqueue': BPF program load failed: Permission denied",
            ]
        );
    }

    #[test]
    fn silent_streams_quote_their_last_lines_or_nothing() {
        let out = log_of(&["a", "b", "c", "d"]);
        assert_eq!(
            quote_streams(&out, &LineLog::default()),
            "; stdout: b | c | d"
        );
        assert_eq!(quote_streams(&LineLog::default(), &LineLog::default()), "");
    }

    #[test]
    fn lines_are_split_across_reads_and_cut_when_long() {
        let long = "x".repeat(10_000);
        let mut text = b"one\r\ntw\xffo\n".to_vec();
        text.extend_from_slice(long.as_bytes());
        text.extend_from_slice(b"\nlast");
        let mut got = Vec::new();
        read_lines(&text[..], |l| got.push(l.to_string()));
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], "one\r");
        assert_eq!(got[1], "tw\u{fffd}o");
        assert_eq!(got[2].len(), MAX_LINE_BYTES + 3);
        assert!(got[2].ends_with("..."));
        assert_eq!(got[3], "last");
    }
}
