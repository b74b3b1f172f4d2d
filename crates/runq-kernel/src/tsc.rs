//! The time stamp counter: `rdtsc` on x86_64, `cntvct_el0` on aarch64,
//! its frequency (calibrated against CLOCK_MONOTONIC) and whether it is
//! invariant (ticks at a constant rate through frequency changes and idle
//! states), which is what makes ticks comparable across processes.

use std::time::{Duration, Instant};

use serde::Serialize;

/// Reads the counter.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v: u64;
        // SAFETY: reading the virtual counter register is allowed at EL0.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v) };
        v
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // Fallback: nanoseconds of CLOCK_MONOTONIC.
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// What is known about the counter on this machine.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TscInfo {
    /// Measured ticks per second.
    pub hz: f64,
    /// True when the counter runs at a constant rate in every P/C-state.
    pub invariant: bool,
}

/// Measures the counter against CLOCK_MONOTONIC over `window`.
pub fn calibrate(window: Duration) -> f64 {
    let (t0, c0) = (Instant::now(), ticks());
    std::thread::sleep(window);
    let (c1, elapsed) = (ticks(), t0.elapsed());
    c1.wrapping_sub(c0) as f64 / elapsed.as_secs_f64()
}

/// Whether the counter is invariant: CPUID leaf 0x8000_0007 EDX bit 8 on
/// x86_64 (or the `constant_tsc` + `nonstop_tsc` flags the kernel shows);
/// always on aarch64, whose generic timer has a fixed frequency.
pub fn invariant() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
        if max >= 0x8000_0007 {
            let edx = core::arch::x86_64::__cpuid(0x8000_0007).edx;
            if edx & (1 << 8) != 0 {
                return true;
            }
        }
        cpuinfo_flags_say_invariant(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        cfg!(target_arch = "aarch64")
    }
}

/// True when the first `flags` line of /proc/cpuinfo lists both
/// `constant_tsc` and `nonstop_tsc`.
pub fn cpuinfo_flags_say_invariant(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| {
            let flags: Vec<&str> = l.split_whitespace().collect();
            flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
        })
        .unwrap_or(false)
}

/// Calibrates over 100 ms and checks invariance.
pub fn info() -> TscInfo {
    TscInfo {
        hz: calibrate(Duration::from_millis(100)),
        invariant: invariant(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_advances_and_calibrates_to_a_plausible_rate() {
        let a = ticks();
        let b = ticks();
        assert!(b >= a);
        let hz = calibrate(Duration::from_millis(20));
        assert!(hz > 1e6 && hz < 1e11, "{hz}");
    }

    #[test]
    fn cpuinfo_flags_are_parsed() {
        let yes = "processor : 0\nflags : fpu tsc constant_tsc nonstop_tsc sse\n";
        let no = "flags : fpu tsc constant_tsc\n";
        assert!(cpuinfo_flags_say_invariant(yes));
        assert!(!cpuinfo_flags_say_invariant(no));
        assert!(!cpuinfo_flags_say_invariant(""));
    }
}
