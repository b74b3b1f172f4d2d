//! `/proc/<pid>/task/<tid>/stat`: the one-line task record.
//!
//! The comm field sits in parentheses and may itself contain spaces and
//! parentheses, so the parser splits at the *last* `)`.

/// The fields of a task's stat line that ctprof uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskStat {
    /// Thread name (field 2, without the parentheses).
    pub comm: String,
    /// State letter (field 3).
    pub state: char,
    /// Parent pid (field 4).
    pub ppid: i64,
    /// Minor faults (field 10).
    pub minflt: u64,
    /// Major faults (field 12).
    pub majflt: u64,
    /// User time in USER_HZ ticks (field 14).
    pub utime: u64,
    /// System time in USER_HZ ticks (field 15).
    pub stime: u64,
    /// Reaped children's user time in USER_HZ ticks (field 16).
    pub cutime: u64,
    /// Reaped children's system time in USER_HZ ticks (field 17).
    pub cstime: u64,
    /// Kernel priority (field 18).
    pub priority: i64,
    /// Nice value (field 19).
    pub nice: i64,
    /// Threads in the process (field 20).
    pub num_threads: u64,
    /// Start time after boot in USER_HZ ticks (field 22).
    pub start_time: u64,
    /// CPU last run on (field 39).
    pub processor: i64,
    /// Real-time priority (field 40).
    pub rt_priority: u64,
    /// Scheduling policy number (field 41).
    pub policy: u64,
}

/// Parses a stat line; `None` if it is truncated or malformed.
pub fn parse_stat(text: &[u8]) -> Option<TaskStat> {
    let open = text.iter().position(|&b| b == b'(')?;
    let close = text.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let comm = String::from_utf8_lossy(&text[open + 1..close]).into_owned();
    // Fields after the comm, numbered from 3.
    let mut rest = text[close + 1..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let state = *rest.next()?.first()? as char;
    // fields[n] holds field n (1-based, as proc(5) numbers them).
    let mut fields = [0i64; 42];
    let mut count = 0;
    for (i, f) in rest.take(38).enumerate() {
        fields[i + 4] = super::parse_i64(f).or_else(|| super::parse_u64(f).map(|v| v as i64))?;
        count += 1;
    }
    if count < 38 {
        return None;
    }
    let u = |n: usize| fields[n].max(0) as u64;
    Some(TaskStat {
        comm,
        state,
        ppid: fields[4],
        minflt: u(10),
        majflt: u(12),
        utime: u(14),
        stime: u(15),
        cutime: u(16),
        cstime: u(17),
        priority: fields[18],
        nice: fields[19],
        num_threads: u(20),
        start_time: u(22),
        processor: fields[39],
        rt_priority: u(40),
        policy: u(41),
    })
}

/// The policy name for a `SCHED_*` number, as `chrt` prints it.
pub fn policy_name(policy: u64) -> &'static str {
    match policy {
        0 => "SCHED_OTHER",
        1 => "SCHED_FIFO",
        2 => "SCHED_RR",
        3 => "SCHED_BATCH",
        5 => "SCHED_IDLE",
        6 => "SCHED_DEADLINE",
        7 => "SCHED_EXT",
        _ => "SCHED_UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "13503 (cat) R 13498 13498 26876 0 -1 4194304 101 0 0 0 3 4 0 0 20 0 1 0 1386729 3133440 410 18446744073709551615 93974586118144 93974586138025 140729437548224 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 93974586154032 93974586155648 93975105101824 140729437551329 140729437551349 140729437551349 140729437552619 0\n";

    #[test]
    fn parses_live_shape() {
        let s = parse_stat(LINE.as_bytes()).unwrap();
        assert_eq!(s.comm, "cat");
        assert_eq!(s.state, 'R');
        assert_eq!(s.minflt, 101);
        assert_eq!((s.utime, s.stime), (3, 4));
        assert_eq!((s.priority, s.nice, s.num_threads), (20, 0, 1));
        assert_eq!(s.start_time, 1386729);
        assert_eq!((s.processor, s.rt_priority, s.policy), (1, 0, 0));
    }

    #[test]
    fn comm_with_spaces_and_parens() {
        let line = LINE.replace("(cat)", "(a) b (c))");
        let s = parse_stat(line.as_bytes()).unwrap();
        assert_eq!(s.comm, "a) b (c)");
        assert_eq!(s.start_time, 1386729);
    }

    #[test]
    fn truncated_is_none() {
        assert!(parse_stat(&LINE.as_bytes()[..60]).is_none());
        assert!(parse_stat(b"").is_none());
        assert!(parse_stat(b"1 (x").is_none());
        assert!(parse_stat(b"1 x) R").is_none());
    }

    #[test]
    fn policy_names() {
        assert_eq!(policy_name(0), "SCHED_OTHER");
        assert_eq!(policy_name(6), "SCHED_DEADLINE");
        assert_eq!(policy_name(99), "SCHED_UNKNOWN");
    }
}
