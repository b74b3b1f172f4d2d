//! A clock for work loops: the time stamp counter scaled to nanoseconds,
//! where the kernel itself trusts the TSC (it is invariant and the current
//! clocksource), else CLOCK_MONOTONIC.
//!
//! Reading the TSC is one instruction that touches no memory; the vDSO's
//! CLOCK_MONOTONIC costs about three times as much, and more just after a
//! context switch, when its data page and glibc's dispatch are cold. A
//! ping-pong reads the clock twice per wake, so that difference shows in
//! its round-trip rate.
//!
//! The scale is measured once per process tree: call [`init`] before
//! forking, so that every worker converts ticks with the same numbers and
//! stamps written by one process are comparable in another. The result
//! starts at CLOCK_MONOTONIC's value at calibration and runs at its rate
//! within a few parts per million, so it is for intervals between two
//! readings of this clock, never to be mixed with kernel timestamps or
//! CLOCK_MONOTONIC readings.

use std::sync::OnceLock;
use std::time::Duration;

use super::monotonic_ns;
use crate::tsc;

/// Where [`now_ns`] gets its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The TSC, scaled by a calibration against CLOCK_MONOTONIC.
    Tsc,
    /// CLOCK_MONOTONIC through the vDSO (no usable TSC, or `RUNQ_CLOCK=monotonic`).
    Monotonic,
}

impl Source {
    /// The name used in reports and `RUNQ_CLOCK`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Tsc => "tsc",
            Source::Monotonic => "monotonic",
        }
    }
}

/// A linear map from ticks to ns: `base_ns + (ticks - base_ticks) * mult / 2^32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scale {
    base_ticks: u64,
    base_ns: u64,
    mult: u64,
}

impl Scale {
    /// The map through two (ticks, ns) readings.
    fn through(a: (u64, u64), b: (u64, u64)) -> Option<Scale> {
        let ticks = b.0.checked_sub(a.0).filter(|&t| t > 0)?;
        let ns = b.1.checked_sub(a.1)?;
        let mult = u64::try_from((u128::from(ns) << 32) / u128::from(ticks)).ok()?;
        Some(Scale {
            base_ticks: a.0,
            base_ns: a.1,
            mult,
        })
    }

    #[inline(always)]
    fn ns(&self, ticks: u64) -> u64 {
        let dt = u128::from(ticks.saturating_sub(self.base_ticks));
        self.base_ns + ((dt * u128::from(self.mult)) >> 32) as u64
    }
}

static SCALE: OnceLock<Option<Scale>> = OnceLock::new();

/// Calibration window: long enough that the two readings' uncertainty
/// (tens of ns each) is a few ppm of it.
const WINDOW: Duration = Duration::from_millis(5);

/// Chooses the source and calibrates (once per process; a forked child
/// inherits the result). Returns the chosen source.
pub fn init() -> Source {
    match SCALE.get_or_init(choose) {
        Some(_) => Source::Tsc,
        None => Source::Monotonic,
    }
}

/// The time in ns on this clock (see the module doc for what it may be
/// compared with). Initializes on first use when [`init`] was not called.
#[inline]
pub fn now_ns() -> u64 {
    match SCALE.get_or_init(choose) {
        Some(scale) => scale.ns(tsc::ticks()),
        None => monotonic_ns(),
    }
}

/// Checks `RUNQ_CLOCK`: unset, empty, `tsc` (the default where the TSC
/// can be trusted) or `monotonic`; anything else is the user's mistake,
/// said in one line.
pub fn check_env() -> Result<(), String> {
    match std::env::var("RUNQ_CLOCK").as_deref() {
        Err(_) | Ok("" | "tsc" | "monotonic") => Ok(()),
        Ok(other) => Err(format!(
            "RUNQ_CLOCK={:?} is not a clock: use tsc or monotonic, or unset it",
            other
        )),
    }
}

fn choose() -> Option<Scale> {
    let forced = std::env::var("RUNQ_CLOCK").ok();
    if forced.as_deref() == Some("monotonic") || !tsc_is_trusted() {
        return None;
    }
    let a = paired_reading();
    std::thread::sleep(WINDOW);
    Scale::through(a, paired_reading())
}

/// True when the TSC is invariant and the kernel uses it as its
/// clocksource (so it is synchronized across CPUs).
fn tsc_is_trusted() -> bool {
    cfg!(target_arch = "x86_64")
        && tsc::invariant()
        && std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .is_ok_and(|s| s.trim() == "tsc")
}

/// One (ticks, ns) pair: CLOCK_MONOTONIC read between two counter reads,
/// keeping the tightest bracket of a few tries (a preemption between the
/// reads would skew the pair).
fn paired_reading() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..8 {
        let before = tsc::ticks();
        let ns = monotonic_ns();
        let after = tsc::ticks();
        let width = after.wrapping_sub(before);
        if width < best.0 {
            best = (width, before + width / 2, ns);
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_maps_its_two_points_and_interpolates() {
        let s = Scale::through((1_000, 50), (3_000, 1_050)).unwrap();
        assert_eq!(s.ns(1_000), 50);
        assert_eq!(s.ns(3_000), 1_050);
        assert_eq!(s.ns(2_000), 550);
        assert_eq!(s.ns(500), 50, "ticks before the base do not go back");
    }

    #[test]
    fn a_scale_needs_the_counter_to_move() {
        assert_eq!(Scale::through((5, 0), (5, 10)), None);
        assert_eq!(Scale::through((5, 0), (4, 10)), None);
    }

    #[test]
    fn the_clock_agrees_with_monotonic_over_an_interval() {
        init();
        // Each fast reading is bracketed by two monotonic ones, so a
        // preemption between them widens the bounds instead of failing.
        let bracket = || (monotonic_ns(), now_ns(), monotonic_ns());
        let (a0, f0, b0) = bracket();
        std::thread::sleep(Duration::from_millis(20));
        let (a1, f1, b1) = bracket();
        let fast = f1 - f0;
        let (shortest, longest) = (a1 - b0, b1 - a0);
        // The scale is good to a few ppm; allow 0.1% and 2 µs of reading.
        let slack = longest / 1_000 + 2_000;
        assert!(
            fast + slack >= shortest && fast <= longest + slack,
            "fast {fast} ns outside monotonic [{shortest}, {longest}] ns"
        );
        assert!(SCALE.get().is_some(), "init chose a source");
    }
}
