//! `/proc/<pid>/task/<tid>/sched` (`CONFIG_SCHED_DEBUG`): the scheduler's
//! per-entity counters. Schedstat keys (`stats.*`, formerly
//! `se.statistics.*`) appear only with `CONFIG_SCHEDSTATS`.
//!
//! Time values print as milliseconds with six decimals; the parser turns
//! them back into integer nanoseconds.

use super::{parse_u64, trim};

macro_rules! sched_fields {
    ($($(#[$doc:meta])* $field:ident => $key:literal,)*) => {
        /// Every counter ctprof reads from a sched file; `None` when the
        /// kernel did not print the key (e.g. no `CONFIG_SCHEDSTATS`).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct TaskSched {
            $($(#[$doc])* pub $field: Option<u64>,)*
            /// `ext.enabled`: 1 when the task runs under sched_ext.
            pub ext_enabled: Option<u64>,
        }

        fn slot<'a>(s: &'a mut TaskSched, key: &[u8]) -> Option<&'a mut Option<u64>> {
            let key = key
                .strip_prefix(b"se.statistics.")
                .or_else(|| key.strip_prefix(b"stats."))
                .unwrap_or(key);
            match key {
                $($key => Some(&mut s.$field),)*
                b"ext.enabled" => Some(&mut s.ext_enabled),
                _ => None,
            }
        }
    };
}

sched_fields! {
    /// On-CPU time in ns (`se.sum_exec_runtime`).
    sum_exec_runtime => b"se.sum_exec_runtime",
    /// Migrations (`se.nr_migrations`).
    nr_migrations => b"se.nr_migrations",
    /// All context switches.
    nr_switches => b"nr_switches",
    /// Voluntary context switches.
    nr_voluntary_switches => b"nr_voluntary_switches",
    /// Involuntary context switches (preemptions).
    nr_involuntary_switches => b"nr_involuntary_switches",
    /// Current fair slice in ns (`se.slice`).
    slice => b"se.slice",
    /// Policy number.
    policy => b"policy",
    /// Kernel priority.
    prio => b"prio",
    /// Total sleep time in ns, including block time.
    sum_sleep_runtime => b"sum_sleep_runtime",
    /// Total block (uninterruptible) time in ns.
    sum_block_runtime => b"sum_block_runtime",
    /// Longest runqueue wait in ns.
    wait_max => b"wait_max",
    /// Longest sleep in ns.
    sleep_max => b"sleep_max",
    /// Longest block in ns.
    block_max => b"block_max",
    /// Longest single execution in ns.
    exec_max => b"exec_max",
    /// Longest slice in ns.
    slice_max => b"slice_max",
    /// Total runqueue wait in ns.
    wait_sum => b"wait_sum",
    /// Runqueue waits.
    wait_count => b"wait_count",
    /// Total iowait in ns.
    iowait_sum => b"iowait_sum",
    /// Iowait events.
    iowait_count => b"iowait_count",
    /// Cold migrations.
    nr_migrations_cold => b"nr_migrations_cold",
    /// Migrations refused by affinity.
    nr_failed_migrations_affine => b"nr_failed_migrations_affine",
    /// Migrations refused because the task was running.
    nr_failed_migrations_running => b"nr_failed_migrations_running",
    /// Migrations refused because the task was cache-hot.
    nr_failed_migrations_hot => b"nr_failed_migrations_hot",
    /// Forced migrations.
    nr_forced_migrations => b"nr_forced_migrations",
    /// Wakeups.
    nr_wakeups => b"nr_wakeups",
    /// Synchronous wakeups.
    nr_wakeups_sync => b"nr_wakeups_sync",
    /// Wakeups that migrated the task.
    nr_wakeups_migrate => b"nr_wakeups_migrate",
    /// Wakeups on the waker's CPU.
    nr_wakeups_local => b"nr_wakeups_local",
    /// Wakeups on another CPU.
    nr_wakeups_remote => b"nr_wakeups_remote",
    /// Successful wake-affine decisions.
    nr_wakeups_affine => b"nr_wakeups_affine",
    /// Wake-affine attempts.
    nr_wakeups_affine_attempts => b"nr_wakeups_affine_attempts",
    /// Time in ns forced idle by core scheduling.
    core_forceidle_sum => b"core_forceidle_sum",
}

/// Parses a sched value: integers as-is, `ms.frac` times as ns.
fn parse_value(v: &[u8]) -> Option<u64> {
    match v.iter().position(|&b| b == b'.') {
        None => parse_u64(v).or_else(|| super::parse_i64(v).map(|_| 0)),
        Some(dot) => {
            let whole = parse_u64(&v[..dot])?;
            let frac = &v[dot + 1..];
            let mut ns = 0u64;
            for i in 0..6 {
                let d = frac.get(i).copied().unwrap_or(b'0');
                if !d.is_ascii_digit() {
                    return None;
                }
                ns = ns * 10 + u64::from(d - b'0');
            }
            whole.checked_mul(1_000_000)?.checked_add(ns)
        }
    }
}

/// Parses sched text; unknown keys and malformed values are skipped.
///
/// One pass over each `key<blanks>:<blanks>value` line: the kernel pads
/// every key to a wide column, so the blanks are skipped eight at a time.
pub fn parse_sched(text: &[u8]) -> TaskSched {
    let mut out = TaskSched::default();
    let mut i = 0;
    while i < text.len() {
        let key_start = i;
        i = find(text, i, |b| matches!(b, b' ' | b'\t' | b':' | b'\n'));
        let key = &text[key_start..i];
        i = skip_blanks(text, i);
        if text.get(i) != Some(&b':') {
            i = find(text, i, |b| b == b'\n') + 1;
            continue;
        }
        let value_start = skip_blanks(text, i + 1);
        i = find(text, value_start, |b| b == b'\n');
        if let Some(slot) = slot(&mut out, key) {
            *slot = parse_value(trim(&text[value_start..i]));
        }
        i += 1;
    }
    out
}

/// The index of the first byte at or after `from` that `stop` accepts, or
/// the length.
fn find(b: &[u8], from: usize, stop: impl Fn(u8) -> bool) -> usize {
    b.get(from..)
        .and_then(|rest| rest.iter().position(|&c| stop(c)))
        .map_or(b.len(), |p| from + p)
}

/// The index of the first byte at or after `from` that is not a space or a
/// tab, or the length.
fn skip_blanks(b: &[u8], mut from: usize) -> usize {
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    while let Some(chunk) = b.get(from..from + 8) {
        if chunk.try_into().ok().map(u64::from_ne_bytes) != Some(SPACES) {
            break;
        }
        from += 8;
    }
    find(b, from, |c| c != b' ' && c != b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_SCHEDSTATS: &[u8] = b"cat (13500, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :      13854540.682274
se.sum_exec_runtime                          :             0.694568
se.nr_migrations                             :                    3
nr_switches                                  :                    9
nr_voluntary_switches                        :                    5
nr_involuntary_switches                      :                    4
policy                                       :                    0
prio                                         :                  120
se.slice                                     :              1400000
numa_preferred_nid                           :                   -1
";

    #[test]
    fn kernel_without_schedstats() {
        let s = parse_sched(NO_SCHEDSTATS);
        assert_eq!(s.sum_exec_runtime, Some(694_568));
        assert_eq!(s.nr_migrations, Some(3));
        assert_eq!(s.nr_voluntary_switches, Some(5));
        assert_eq!(s.nr_involuntary_switches, Some(4));
        assert_eq!(s.slice, Some(1_400_000));
        assert_eq!(s.prio, Some(120));
        assert_eq!(s.wait_sum, None);
        assert_eq!(s.nr_wakeups, None);
    }

    #[test]
    fn schedstat_keys_both_prefixes() {
        let s = parse_sched(
            b"stats.wait_sum : 12.000001\nse.statistics.nr_wakeups : 7\nstats.sum_sleep_runtime : 3.5\next.enabled : 1\n",
        );
        assert_eq!(s.wait_sum, Some(12_000_001));
        assert_eq!(s.nr_wakeups, Some(7));
        assert_eq!(s.sum_sleep_runtime, Some(3_500_000));
        assert_eq!(s.ext_enabled, Some(1));
    }

    #[test]
    fn odd_lines_are_skipped() {
        // A header with a colon, a rule, a key with no value, a key with no
        // colon, a tab, a CR and no final newline.
        let s = parse_sched(
            b"app (7, #threads: 1)\n----\nnr_switches :\nprio 120\nnr_switches\t:\t 9\r\nse.slice : 5",
        );
        assert_eq!(s.nr_switches, Some(9));
        assert_eq!(s.prio, None);
        assert_eq!(s.slice, Some(5));
        assert_eq!(parse_sched(b""), TaskSched::default());
        assert_eq!(parse_sched(b"nr_switches"), TaskSched::default());
        assert_eq!(parse_sched(b"nr_switches    "), TaskSched::default());
        assert_eq!(skip_blanks(b"                  x", 0), 18);
        assert_eq!(skip_blanks(b"   ", 1), 3);
    }

    /// The former parser, line by line (split, find the colon, trim both
    /// sides): the one-pass parser must read the same.
    fn line_by_line(text: &[u8]) -> TaskSched {
        let mut out = TaskSched::default();
        for line in text.split(|&b| b == b'\n') {
            let Some(pos) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            if let Some(slot) = slot(&mut out, trim(&line[..pos])) {
                *slot = parse_value(trim(&line[pos + 1..]));
            }
        }
        out
    }

    #[test]
    fn agrees_with_a_line_by_line_reading() {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("se.sum_exec_runtime".to_string()),
            Just("nr_switches".to_string()),
            Just("stats.wait_sum".to_string()),
            "[a-z_.]{0,6}",
        ];
        let line = (key, "[ \t]{0,12}", "[:x]?", "[ \t]{0,3}", "[0-9.x-]{0,8}");
        proptest!(|(lines in proptest::collection::vec(line, 0..8))| {
            let text: String = lines
                .iter()
                .map(|(k, pad, colon, pad2, v)| format!("{k}{pad}{colon}{pad2}{v}\n"))
                .collect();
            prop_assert_eq!(parse_sched(text.as_bytes()), line_by_line(text.as_bytes()));
        });
        let real = std::fs::read("/proc/self/sched").unwrap_or_default();
        assert_eq!(parse_sched(&real), line_by_line(&real));
        assert_eq!(parse_sched(NO_SCHEDSTATS), line_by_line(NO_SCHEDSTATS));
    }

    #[test]
    fn values() {
        assert_eq!(parse_value(b"0.1"), Some(100_000));
        assert_eq!(parse_value(b"1.x"), None);
        assert_eq!(parse_value(b"-1"), Some(0));
        assert_eq!(parse_value(b""), None);
    }
}
