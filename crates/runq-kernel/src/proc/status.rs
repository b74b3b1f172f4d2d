//! `/proc/<pid>/task/<tid>/status`: the fallback source of context-switch
//! counts and the allowed-CPU list when `/proc/<tid>/sched` is absent.

use super::{kv_lines, parse_u64};

/// The status fields ctprof uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStatus {
    /// `voluntary_ctxt_switches`.
    pub voluntary_ctxt_switches: Option<u64>,
    /// `nonvoluntary_ctxt_switches`.
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// `Threads`.
    pub threads: Option<u64>,
    /// `Cpus_allowed_list`, as text (parse with `cpulist`).
    pub cpus_allowed_list: Option<String>,
}

/// Parses status text; unknown or malformed lines are skipped.
pub fn parse_status(text: &[u8]) -> TaskStatus {
    let mut out = TaskStatus::default();
    for (k, v) in kv_lines(text, b':') {
        match k {
            b"voluntary_ctxt_switches" => out.voluntary_ctxt_switches = parse_u64(v),
            b"nonvoluntary_ctxt_switches" => out.nonvoluntary_ctxt_switches = parse_u64(v),
            b"Threads" => out.threads = parse_u64(v),
            b"Cpus_allowed_list" => {
                out.cpus_allowed_list = Some(String::from_utf8_lossy(v).into_owned())
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields() {
        let s = parse_status(
            b"Name:\tx\nThreads:\t3\nCpus_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t2\n",
        );
        assert_eq!(s.threads, Some(3));
        assert_eq!(s.voluntary_ctxt_switches, Some(7));
        assert_eq!(s.nonvoluntary_ctxt_switches, Some(2));
        assert_eq!(s.cpus_allowed_list.as_deref(), Some("0-1"));
        assert_eq!(parse_status(b"garbage"), TaskStatus::default());
    }
}
