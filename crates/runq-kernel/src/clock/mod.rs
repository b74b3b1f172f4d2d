//! Clocks and CPU queries shared by the tools: CLOCK_MONOTONIC (the
//! clock the kernel's BPF timestamps, `bpf_ktime_get_ns`, and scheduler
//! events use), the thread CPU clock, the current CPU and thread id. All
//! are cheap enough for a work loop's hot path; [`fast`] is cheaper still.

pub mod fast;

/// CLOCK_MONOTONIC in ns (vDSO, no syscall).
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds since the Unix epoch (wall clock; 0 before it).
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// CPU time of the calling process (every thread) in ns.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the calling thread in ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The CPU the calling thread is running on (rseq/vDSO backed in glibc).
#[inline]
pub fn current_cpu() -> usize {
    // SAFETY: no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(0)
}

/// The caller's thread id.
pub fn gettid() -> u32 {
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() };
    tid as u32 // a tid is positive
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_time_moves_forward() {
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::monotonic_ns();
        assert!(b >= a + 2_000_000, "{a} -> {b}");
    }
}
