//! The longest runnable wait on the host: how long any task that was
//! runnable waited for a CPU, measured by `bpf/runqwait.bpf.c` on the
//! classic tracepoints `sched/sched_wakeup`, `sched/sched_wakeup_new` and
//! `sched/sched_switch` (a wait runs from the wakeup, or from a preemption,
//! to the task's next switch-in), as runqslower does. Loaded with aya; the
//! programs detach when the [`HostWait`] is dropped.

use aya::maps::{Array, PerCpuArray};
use aya::programs::TracePoint;
use aya::Ebpf;

/// The compiled object, 8-byte aligned as the ELF parser wants.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/runqwait.bpf.o"));

/// The object's bytes.
pub fn object() -> &'static [u8] {
    &OBJECT.0
}

/// The tracepoints the probe attaches to, with their programs.
pub const TRACEPOINTS: [(&str, &str); 3] = [
    ("runqwait_wakeup", "sched_wakeup"),
    ("runqwait_wakeup_new", "sched_wakeup_new"),
    ("runqwait_switch", "sched_switch"),
];

/// Why the probe could not start or be read.
#[derive(Debug, thiserror::Error)]
pub enum HostWaitError {
    /// This process may not load BPF programs.
    #[error("loading BPF programs needs CAP_BPF and CAP_PERFMON: run as root")]
    NotPermitted,
    /// The object did not load (verifier, map creation).
    #[error("loading the runnable-wait BPF programs failed: {0}")]
    Load(String),
    /// tracefs is missing and could not be mounted.
    #[error(transparent)]
    Tracefs(#[from] runq_kernel::tracefs::TracefsError),
    /// A tracepoint could not be attached.
    #[error("attaching to the tracepoint sched/{tracepoint} failed: {reason} (is it in /sys/kernel/tracing/events/sched?)")]
    Attach {
        /// Which tracepoint.
        tracepoint: &'static str,
        /// Why.
        reason: String,
    },
    /// A map could not be read or written.
    #[error("reading the runnable-wait BPF map {map} failed: {reason}")]
    Map {
        /// Which map.
        map: &'static str,
        /// Why.
        reason: String,
    },
}

/// One CPU's figures, as `struct wait_stats` in runqwait.bpf.c.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawStats {
    max_ns: u64,
    max_at_ns: u64,
    max_pid: u32,
    max_cpu: u32,
    max_comm: [u8; 16],
    count: u64,
    sum_ns: u64,
    untracked: u64,
}

// SAFETY: plain integers and bytes, no padding (64 bytes, asserted in the C).
unsafe impl aya::Pod for RawStats {}

/// The waits since [`HostWait::begin`], over every CPU.
pub use runq_kernel::runnable_wait::WaitFigures;

/// The loaded, attached programs.
pub struct HostWait {
    ebpf: Ebpf,
    begun_ns: u64,
}

impl HostWait {
    /// Loads the programs and attaches the three tracepoints (mounting
    /// tracefs first when it is not). Waits are kept from [`Self::begin`].
    pub fn start() -> Result<HostWait, HostWaitError> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        Self::load_and_attach().map_err(|e| match e {
            HostWaitError::Load(_) | HostWaitError::Attach { .. } if !root => {
                HostWaitError::NotPermitted
            }
            e => e,
        })
    }

    fn load_and_attach() -> Result<HostWait, HostWaitError> {
        let mut ebpf =
            crate::bpf::load_object(object()).map_err(|e| HostWaitError::Load(e.to_string()))?;
        runq_kernel::tracefs::ensure_mounted()?;
        for (prog, tracepoint) in TRACEPOINTS {
            let attach_err = |e: aya::programs::ProgramError| HostWaitError::Attach {
                tracepoint,
                reason: e.to_string(),
            };
            let tp: &mut TracePoint = ebpf
                .program_mut(prog)
                .ok_or_else(|| HostWaitError::Load(format!("no program {prog} in the object")))?
                .try_into()
                .map_err(attach_err)?;
            tp.load().map_err(attach_err)?;
            tp.attach("sched", tracepoint).map_err(attach_err)?;
        }
        Ok(HostWait { ebpf, begun_ns: 0 })
    }

    /// Keeps the waits that end from now on (the run's start); waits that
    /// ended before are not counted. Calling it again starts over.
    pub fn begin(&mut self) -> Result<(), HostWaitError> {
        // CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns.
        let now = runq_kernel::clock::monotonic_ns();
        let map_err = |e: aya::maps::MapError| HostWaitError::Map {
            map: "CONFIG",
            reason: e.to_string(),
        };
        let map = self.ebpf.map_mut("CONFIG").ok_or(HostWaitError::Map {
            map: "CONFIG",
            reason: "not in the object".into(),
        })?;
        let mut config: Array<_, u64> = Array::try_from(map).map_err(map_err)?;
        config.set(0, now, 0).map_err(map_err)?;
        self.begun_ns = now;
        Ok(())
    }

    /// The waits since [`Self::begin`]: the longest over every CPU, and
    /// the count and total of all.
    pub fn read(&self) -> Result<WaitFigures, HostWaitError> {
        let map_err = |reason: String| HostWaitError::Map {
            map: "STATS",
            reason,
        };
        let map = self
            .ebpf
            .map("STATS")
            .ok_or_else(|| map_err("not in the object".into()))?;
        let stats: PerCpuArray<_, RawStats> =
            PerCpuArray::try_from(map).map_err(|e| map_err(e.to_string()))?;
        let per_cpu = stats.get(&0, 0).map_err(|e| map_err(e.to_string()))?;
        Ok(combine(&per_cpu, self.begun_ns))
    }
}

/// Every CPU's figures as one: the longest wait, and the sums.
fn combine(per_cpu: &[RawStats], begun_ns: u64) -> WaitFigures {
    let mut out = WaitFigures::default();
    for s in per_cpu {
        out.waits += s.count;
        out.sum_ns += s.sum_ns;
        out.untracked += s.untracked;
        if s.max_ns > out.longest_ns {
            let len = s.max_comm.iter().position(|&b| b == 0).unwrap_or(16);
            out.longest_ns = s.max_ns;
            out.pid = s.max_pid;
            out.comm = String::from_utf8_lossy(&s.max_comm[..len]).into_owned();
            out.cpu = s.max_cpu;
            out.at_ns = s.max_at_ns.saturating_sub(begun_ns);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(max_ns: u64, pid: u32, comm: &str, count: u64, sum_ns: u64) -> RawStats {
        let mut s = RawStats {
            max_ns,
            max_at_ns: 5_000 + max_ns,
            max_pid: pid,
            max_cpu: pid % 2,
            count,
            sum_ns,
            ..RawStats::default()
        };
        s.max_comm[..comm.len()].copy_from_slice(comm.as_bytes());
        s
    }

    #[test]
    fn the_longest_wait_of_any_cpu_and_the_sums_of_all() {
        let cpus = [
            raw(3_000, 11, "yes", 4, 6_000),
            raw(9_000, 12, "spinner", 2, 10_000),
            RawStats::default(),
        ];
        let s = combine(&cpus, 5_000);
        assert_eq!((s.longest_ns, s.pid, s.cpu), (9_000, 12, 0));
        assert_eq!(s.comm, "spinner");
        assert_eq!(s.at_ns, 9_000);
        assert_eq!((s.waits, s.sum_ns), (6, 16_000));
        assert_eq!(combine(&[], 0), WaitFigures::default());
    }

    #[test]
    fn the_mirror_has_the_c_layout() {
        assert_eq!(std::mem::size_of::<RawStats>(), 64);
        assert_eq!(std::mem::offset_of!(RawStats, max_pid), 16);
        assert_eq!(std::mem::offset_of!(RawStats, max_comm), 24);
        assert_eq!(std::mem::offset_of!(RawStats, count), 40);
    }

    /// As root: the programs load and attach, and a busy host has waits.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn loads_attaches_and_counts_waits() {
        let mut probe = HostWait::start().expect("the probe starts as root");
        probe.begin().unwrap();
        let spinners: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let t = std::time::Instant::now();
                    while t.elapsed() < std::time::Duration::from_millis(300) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        spinners.into_iter().for_each(|t| t.join().unwrap());
        let s = probe.read().unwrap();
        assert!(s.waits > 0, "{s:?}");
        assert!(s.longest_ns > 0 && s.pid > 0 && !s.comm.is_empty(), "{s:?}");
        assert!(s.sum_ns >= s.longest_ns, "{s:?}");
    }
}
