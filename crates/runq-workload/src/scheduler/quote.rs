//! Which lines of a scheduler's stdout and stderr say why it failed:
//! lines that mention an error, the verifier, an exit, a failure or a
//! panic (none from a backtrace: the indented frames after `Stack
//! backtrace:` or `Backtrace:` name functions, not causes), and the
//! verifier's own reason from
//! libbpf's program load log (`-- BEGIN PROG LOAD LOG --` … `-- END PROG
//! LOAD LOG --`: its last line before the statistics), which a Rust
//! scheduler may print on stdout while its error goes to stderr.

/// Words that make a line worth quoting (matched in lower case).
const KEY_WORDS: [&str; 5] = ["error", "verifier", "exit", "fail", "panicked"];

/// What one line is, for quoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// Ordinary output.
    Plain,
    /// A line that says error, verifier, exit, fail or panicked.
    Key,
    /// The end of a program load log: the verifier's reason
    /// (`prog 'lavd_enqueue': only read is supported`).
    Verifier(String),
}

/// Reads a stream's lines in order and tells each one's kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Classifier {
    /// Inside a program load log: the program's name and the log's last
    /// line that was not a statistic.
    load_log: Option<(String, Option<String>)>,
    /// Inside a backtrace: its indented frames are no key lines.
    in_stack: bool,
}

impl Classifier {
    /// The kind of the next line.
    pub fn feed(&mut self, line: &str) -> LineKind {
        let text = line.trim();
        if let Some((prog, last)) = &mut self.load_log {
            if text.contains("-- END PROG LOAD LOG --") {
                let reason = last.take().unwrap_or_else(|| "(empty log)".into());
                let prog = std::mem::take(prog);
                self.load_log = None;
                return LineKind::Verifier(format!("prog '{prog}': {reason}"));
            }
            if !text.is_empty() && !is_statistic(text) {
                *last = Some(text.to_string());
            }
            return LineKind::Plain;
        }
        if text.contains("-- BEGIN PROG LOAD LOG --") {
            self.load_log = Some((prog_name(text).unwrap_or("?").to_string(), None));
            return LineKind::Plain;
        }
        let lower = text.to_ascii_lowercase();
        if self.in_stack && line.starts_with([' ', '\t']) && !text.is_empty() {
            return LineKind::Plain;
        }
        self.in_stack = lower == "backtrace:" || lower.starts_with("stack backtrace:");
        match !self.in_stack && KEY_WORDS.iter().any(|w| lower.contains(w)) {
            true => LineKind::Key,
            false => LineKind::Plain,
        }
    }

    /// At the end of the stream: the reason of a load log it cut short.
    pub fn finish(&mut self) -> Option<String> {
        let (prog, last) = self.load_log.take()?;
        Some(format!("prog '{prog}': {}", last?))
    }
}

/// The verifier's summary lines after its reason.
fn is_statistic(text: &str) -> bool {
    [
        "processed ",
        "verification time",
        "stack depth",
        "mark_read",
    ]
    .iter()
    .any(|p| text.starts_with(p))
}

/// `NAME` of a libbpf `prog 'NAME': ...` line.
fn prog_name(text: &str) -> Option<&str> {
    let rest = text.split_once("prog '")?.1;
    Some(rest.split_once('\'')?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(lines: &[&str]) -> (Vec<LineKind>, Option<String>) {
        let mut c = Classifier::default();
        let kinds = lines.iter().map(|l| c.feed(l)).collect();
        (kinds, c.finish())
    }

    /// What a Rust scheduler whose program the verifier rejects prints,
    /// in the shape libbpf and anyhow give it (scx_lavd on 6.12, issue 62).
    const LAVD_STDOUT: [&str; 9] = [
        "libbpf: prog 'lavd_enqueue': BPF program load failed: Permission denied",
        "libbpf: prog 'lavd_enqueue': -- BEGIN PROG LOAD LOG --",
        "0: R1=ctx() R10=fp0",
        "; if (err) return error; @ main.bpf.c:812",
        "1234: (7b) *(u64 *)(r1 +0) = r2",
        "only read is supported",
        "processed 5678 insns (limit 1000000) max_states_per_insn 4 total_states 310",
        "-- END PROG LOAD LOG --",
        "libbpf: failed to load object 'bpf_bpf'",
    ];

    #[test]
    fn the_verifier_reason_is_the_load_logs_last_line_before_its_statistics() {
        let (k, rest) = kinds(&LAVD_STDOUT);
        assert_eq!(k[0], LineKind::Key);
        assert!(k[1..7].iter().all(|k| *k == LineKind::Plain), "{k:?}");
        assert_eq!(
            k[7],
            LineKind::Verifier("prog 'lavd_enqueue': only read is supported".into())
        );
        assert_eq!(k[8], LineKind::Key);
        assert_eq!(rest, None);
    }

    #[test]
    fn a_load_log_cut_short_still_gives_its_last_line() {
        let (_, rest) = kinds(&LAVD_STDOUT[..6]);
        assert_eq!(
            rest.as_deref(),
            Some("prog 'lavd_enqueue': only read is supported")
        );
        assert_eq!(kinds(&LAVD_STDOUT[..2]).1, None);
    }

    #[test]
    fn a_kernel_backtrace_in_a_schedulers_exit_dump_is_skipped_to_its_end() {
        // scx_qmap's stderr when the kernel ejected it (6.12, TCG).
        let (k, _) = kinds(&[
            "kworker/u16:1[40] triggered exit kind 1026:",
            "  runnable task stall (systemd-udevd[64] failed to run for 5.056s)",
            "",
            "Backtrace:",
            "  scx_ops_error_irq_workfn+0x40/0x50",
            "  irq_work_run_list+0x2e/0x40",
            "",
            "EXIT: runnable task stall (systemd-udevd[64] failed to run for 5.056s)",
        ]);
        let key: Vec<usize> = (0..k.len()).filter(|&i| k[i] == LineKind::Key).collect();
        assert_eq!(key, [0, 1, 7]);
    }

    #[test]
    fn key_words_mark_lines_until_a_stack_backtrace() {
        let (k, _) = kinds(&[
            "Error: Failed to attach struct_ops",
            "EXIT: runnable task stall (runq[81] failed to run for 5.067s)",
            "thread 'main' panicked at src/main.rs:10:5",
            "loading scheduler",
            "Stack backtrace:",
            "   0: anyhow::error::<impl anyhow::Error>::msg",
        ]);
        assert_eq!(
            k,
            [
                LineKind::Key,
                LineKind::Key,
                LineKind::Key,
                LineKind::Plain,
                LineKind::Plain,
                LineKind::Plain
            ]
        );
    }
}
