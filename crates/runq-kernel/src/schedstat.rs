//! `/proc/<pid>/task/<tid>/schedstat`: on-CPU time, run-queue wait, and the
//! number of times the task was picked to run.

use std::path::Path;

/// The three counters of a task's schedstat file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Schedstat {
    /// Time spent on a CPU, in ns (field 1).
    pub cpu_time_ns: u64,
    /// Time spent runnable but waiting for a CPU, in ns (field 2).
    pub run_delay_ns: u64,
    /// Times the scheduler picked this task to run (field 3, pcount).
    pub run_count: u64,
}

impl Schedstat {
    /// Field-wise saturating difference `self - earlier`.
    pub fn delta_since(&self, earlier: &Schedstat) -> Schedstat {
        Schedstat {
            cpu_time_ns: self.cpu_time_ns.saturating_sub(earlier.cpu_time_ns),
            run_delay_ns: self.run_delay_ns.saturating_sub(earlier.run_delay_ns),
            run_count: self.run_count.saturating_sub(earlier.run_count),
        }
    }
}

/// Parses the three space-separated numbers of a schedstat file.
pub fn parse_schedstat(text: &str) -> Option<Schedstat> {
    let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>());
    Some(Schedstat {
        cpu_time_ns: fields.next()?.ok()?,
        run_delay_ns: fields.next()?.ok()?,
        run_count: fields.next()?.ok()?,
    })
}

/// Reads and parses a schedstat file at `path`.
pub fn read_schedstat(path: &Path) -> Option<Schedstat> {
    parse_schedstat(&std::fs::read_to_string(path).ok()?)
}

/// Reads the calling thread's schedstat (`/proc/thread-self/schedstat`).
pub fn read_own_schedstat() -> Option<Schedstat> {
    read_schedstat(Path::new("/proc/thread-self/schedstat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_three_fields() {
        let s = parse_schedstat("123 456 7\n").unwrap();
        assert_eq!(
            s,
            Schedstat {
                cpu_time_ns: 123,
                run_delay_ns: 456,
                run_count: 7
            }
        );
    }

    #[test]
    fn rejects_short_or_garbage() {
        assert!(parse_schedstat("1 2").is_none());
        assert!(parse_schedstat("1 x 3").is_none());
        assert!(parse_schedstat("").is_none());
    }

    #[test]
    fn delta_saturates() {
        let a = Schedstat {
            cpu_time_ns: 10,
            run_delay_ns: 5,
            run_count: 2,
        };
        let b = Schedstat {
            cpu_time_ns: 4,
            run_delay_ns: 9,
            run_count: 1,
        };
        assert_eq!(
            a.delta_since(&b),
            Schedstat {
                cpu_time_ns: 6,
                run_delay_ns: 0,
                run_count: 1
            }
        );
    }

    #[test]
    fn live_kernel_has_own_schedstat() {
        assert!(read_own_schedstat().is_some());
    }
}
