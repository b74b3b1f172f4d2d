//! What the kernel's log says about a BPF scheduler's end: sched_ext
//! prints `sched_ext: BPF scheduler "NAME" disabled (REASON)` when it
//! disables one (an error, a stall its watchdog caught, or an ordinary
//! unregistration), then, for an error, `sched_ext: NAME: MESSAGE` (the
//! stalled task, the `scx_bpf_error` text). The reasons are the kernel's
//! `scx_exit_reason()` strings (6.12: `runtime error`, `scx_bpf_error`,
//! `runnable task stall` are errors; `unregistered from user space`,
//! `unregistered from BPF`, `unregistered from the main kernel`,
//! `disabled by sysrq-S` are not).

use serde::{Deserialize, Serialize};

/// A BPF scheduler's end as the kernel logged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScxExit {
    /// The scheduler's ops name (`qmap`, `simple`, `bpfland`).
    pub scheduler: String,
    /// The kernel's reason (`runnable task stall`).
    pub reason: String,
    /// True for an error exit (the kernel ejected the scheduler), false
    /// for an unregistration.
    pub error: bool,
    /// The error's message (`systemd-udevd[51] failed to run for 5.077s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ScxExit {
    /// One clause: `the kernel ejected BPF scheduler "qmap": runnable task
    /// stall: systemd-udevd[51] failed to run for 5.077s`.
    pub fn describe(&self) -> String {
        let verb = if self.error {
            "the kernel ejected"
        } else {
            "the kernel disabled"
        };
        let name = short_name(&self.scheduler);
        match &self.message {
            Some(m) => format!("{verb} BPF scheduler {name}: {}: {m}", self.reason),
            None => format!("{verb} BPF scheduler {name}: {}", self.reason),
        }
    }
}

/// A scheduler's ops name for a sentence: scx's Rust schedulers name
/// theirs `NAME_VERSION_TARGET` (`rustland_1.1.4_x86_64_unknown_linux_gnu`),
/// which is written `"rustland" 1.1.4` so that the reason after it fits a
/// first line; any other name is quoted whole.
fn short_name(ops: &str) -> String {
    let split = ops.match_indices('_').find_map(|(i, _)| {
        let rest = &ops[i + 1..];
        let version = rest.split('_').next()?;
        let dotted = version.split('.').count() == 3
            && version
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        (dotted && i > 0).then(|| (&ops[..i], version))
    });
    match split {
        Some((name, version)) => format!("{name:?} {version}"),
        None => format!("{ops:?}"),
    }
}

const ERROR_REASONS: [&str; 3] = ["runtime error", "scx_bpf_error", "runnable task stall"];

/// The last scheduler end in `lines` (kernel log messages, oldest first,
/// with or without a `sched_ext: ` prefix), with its message when the
/// line after it carries one.
pub fn parse_exit<S: AsRef<str>>(lines: &[S]) -> Option<ScxExit> {
    let mut found = None;
    for (i, line) in lines.iter().enumerate() {
        let Some((name, reason)) = disabled_line(line.as_ref()) else {
            continue;
        };
        let message = lines.get(i + 1).and_then(|next| {
            let rest = next.as_ref().trim();
            let rest = rest.strip_prefix("sched_ext: ").unwrap_or(rest);
            rest.strip_prefix(&format!("{name}: ")).map(str::to_string)
        });
        found = Some(ScxExit {
            scheduler: name.to_string(),
            error: ERROR_REASONS.contains(&reason),
            reason: reason.to_string(),
            message,
        });
    }
    found
}

/// The end of BPF scheduler `ops` as its own process reported it from
/// the exit info the kernel handed it (scx's `UEI_REPORT`: `EXIT: REASON`
/// or `EXIT: REASON (MESSAGE)`, anywhere in the line, after a logger's
/// prefix): what stands for the kernel's log where that is unreadable.
pub fn parse_uei_exit(ops: &str, line: &str) -> Option<ScxExit> {
    let rest = line.split_once("EXIT: ")?.1.trim();
    let (reason, message) = match rest.split_once(" (") {
        Some((r, m)) => (r, Some(m.strip_suffix(')').unwrap_or(m).to_string())),
        None => (rest, None),
    };
    (!reason.is_empty()).then(|| ScxExit {
        scheduler: ops.to_string(),
        error: ERROR_REASONS.contains(&reason),
        reason: reason.to_string(),
        message,
    })
}

/// `(name, reason)` of a `BPF scheduler "NAME" disabled (REASON)` line.
fn disabled_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.split_once("BPF scheduler \"")?.1;
    let (name, rest) = rest.split_once('"')?;
    let reason = rest.trim().strip_prefix("disabled (")?.strip_suffix(')')?;
    Some((name, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_versioned_ops_name_is_written_short() {
        assert_eq!(
            short_name("rustland_1.1.4_x86_64_unknown_linux_gnu"),
            "\"rustland\" 1.1.4"
        );
        assert_eq!(
            short_name("bpfland_1.1.4_x86_64_unknown_linux_gnu"),
            "\"bpfland\" 1.1.4"
        );
        assert_eq!(short_name("qmap"), "\"qmap\"");
        assert_eq!(short_name("my_sched_v2"), "\"my_sched_v2\"");
        assert_eq!(short_name("_1.2.3"), "\"_1.2.3\"");
    }

    #[test]
    fn a_watchdog_stall_names_the_stalled_task() {
        // What a 6.12.117 guest logged under scx_qmap -t 5 (runq's kmsg
        // lines of the run, `scheduler_death.kernel_log`).
        let lines = [
            "sched_ext: BPF scheduler \"qmap\" enabled",
            "sched_ext: BPF scheduler \"qmap\" disabled (runnable task stall)",
            "sched_ext: qmap: systemd-udevd[51] failed to run for 5.077s",
            "   scx_watchdog_workfn+0x14a/0x1f0",
        ];
        let e = parse_exit(&lines).unwrap();
        assert_eq!(e.scheduler, "qmap");
        assert_eq!(e.reason, "runnable task stall");
        assert!(e.error);
        assert_eq!(
            e.message.as_deref(),
            Some("systemd-udevd[51] failed to run for 5.077s")
        );
        assert_eq!(
            e.describe(),
            "the kernel ejected BPF scheduler \"qmap\": runnable task stall: systemd-udevd[51] failed to run for 5.077s"
        );
    }

    #[test]
    fn a_schedulers_own_exit_report_gives_the_kernels_reason() {
        // scx_qmap's last stderr line once the kernel ejected it (6.12).
        let line = "EXIT: runnable task stall (systemd-udevd[64] failed to run for 5.056s)";
        let e = parse_uei_exit("qmap", line).unwrap();
        assert_eq!(
            e.describe(),
            "the kernel ejected BPF scheduler \"qmap\": runnable task stall: \
             systemd-udevd[64] failed to run for 5.056s"
        );
        // A Rust scheduler's logger prefix; an unregistration, no message.
        let e = parse_uei_exit(
            "rustland",
            "12:00:01 [INFO] EXIT: unregistered from user space",
        )
        .unwrap();
        assert_eq!(
            (e.reason.as_str(), e.error, e.message),
            ("unregistered from user space", false, None)
        );
        assert_eq!(parse_uei_exit("x", "exit status 1"), None);
        assert_eq!(parse_uei_exit("x", "EXIT: "), None);
    }

    #[test]
    fn an_unregistration_is_not_an_error_and_the_last_end_wins() {
        let lines = [
            "sched_ext: BPF scheduler \"qmap\" disabled (scx_bpf_error)",
            "sched_ext: qmap: injected error",
            "sched_ext: BPF scheduler \"simple\" enabled",
            "sched_ext: BPF scheduler \"simple\" disabled (unregistered from user space)",
        ];
        let e = parse_exit(&lines).unwrap();
        assert_eq!(
            (e.scheduler.as_str(), e.error, e.message),
            ("simple", false, None)
        );
        assert_eq!(
            parse_exit(&lines[..2]).unwrap().message.as_deref(),
            Some("injected error")
        );
        assert_eq!(
            parse_exit(&["sched_ext: BPF scheduler \"x\" enabled"]),
            None
        );
    }
}
