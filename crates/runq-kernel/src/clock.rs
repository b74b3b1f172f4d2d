//! Clocks shared by the tools: CLOCK_MONOTONIC, the clock the kernel's
//! BPF timestamps (`bpf_ktime_get_ns`) and scheduler events use.

/// CLOCK_MONOTONIC in ns (vDSO, no syscall).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
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
