//! The kernel's CPU list format (`0-3,8,10-11`), used by cpuset files,
//! `/sys/devices/system/cpu/online` and `Cpus_allowed_list`.

use std::collections::BTreeSet;
use std::fmt;

/// A malformed CPU list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list {text:?}: {reason}")]
pub struct CpuListError {
    /// The text that failed to parse.
    pub text: String,
    /// What was wrong with it.
    pub reason: &'static str,
}

/// Largest CPU number accepted; guards against `0-4294967295` style input.
pub const MAX_CPU: usize = 1 << 16;

/// Parses a CPU list such as `0-3,8`. Whitespace around the list is ignored;
/// an empty list parses to an empty set.
pub fn parse_cpu_list(text: &str) -> Result<BTreeSet<usize>, CpuListError> {
    let err = |reason| CpuListError {
        text: text.to_string(),
        reason,
    };
    let mut cpus = BTreeSet::new();
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    for part in trimmed.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo, hi),
            None => (part, part),
        };
        let lo: usize = lo.trim().parse().map_err(|_| err("not a number"))?;
        let hi: usize = hi.trim().parse().map_err(|_| err("not a number"))?;
        if lo > hi {
            return Err(err("range start is above its end"));
        }
        if hi > MAX_CPU {
            return Err(err("CPU number too large"));
        }
        cpus.extend(lo..=hi);
    }
    Ok(cpus)
}

/// Formats a set of CPUs in the kernel's compact list form.
pub struct CpuListDisplay<'a>(pub &'a BTreeSet<usize>);

impl fmt::Display for CpuListDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut iter = self.0.iter().copied().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().unwrap_or(end);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

/// The CPUs the kernel reports online, from `/sys/devices/system/cpu/online`,
/// falling back to `0..available_parallelism` when that file is unreadable.
pub fn online_cpus() -> BTreeSet<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| parse_cpu_list(&text).ok())
        .filter(|set| !set.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_singles() {
        let set = parse_cpu_list("0-3,8,10-11\n").unwrap();
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
    }

    #[test]
    fn empty_is_empty() {
        assert!(parse_cpu_list(" \n").unwrap().is_empty());
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_cpu_list("a-b").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("0-999999999").is_err());
        assert!(parse_cpu_list("1,,2").is_err());
    }

    #[test]
    fn display_round_trips() {
        let set = parse_cpu_list("0-3,8,10-11").unwrap();
        assert_eq!(CpuListDisplay(&set).to_string(), "0-3,8,10-11");
    }

    #[test]
    fn online_cpus_is_never_empty() {
        assert!(!online_cpus().is_empty());
    }
}
