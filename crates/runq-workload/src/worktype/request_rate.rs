//! RequestRate: an open-loop request load with a fixed arrival rate, like
//! schbench `-R` or taobench's `arrival_rate`.
//!
//! Requests arrive at intended times fixed in advance: `rps` per second
//! for the whole group, evenly spaced or (with `poisson`) with exponential
//! gaps from a seeded generator. The workers share the arrival clock as
//! leader and followers: the leader sleeps until the next intended arrival
//! (`clock_nanosleep` TIMER_ABSTIME, in slices so STOP ends it), claims
//! it, hands the clock to a follower with a futex wake and serves the
//! request (`service_iters` spin units); followers wait on the futex. A
//! request's latency is its completion time minus its INTENDED arrival, so
//! a late clock or a stalled server adds to the latency instead of
//! silently lowering the load (no coordinated omission), and when the
//! workers fall behind, the arrivals they missed are served late, not
//! skipped. Every worker serves, so one unit per request makes the group's
//! work rate the achieved request rate.

use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS};
use super::timer_latency::sleep_until;
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::shared::{futex_wait, futex_wake, SharedRegion};
use crate::spin::spin_burst;
use crate::stop::stop_requested;
use crate::telemetry::{Telemetry, CHUNK_UNITS};
use runq_kernel::clock::monotonic_ns;

/// RequestRate parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Intended arrivals per second for the whole group.
    pub rps: u64,
    /// Spin units a worker spends serving one request.
    pub service_iters: u64,
    /// Exponential gaps between arrivals (a Poisson process of rate
    /// `rps`) instead of a fixed interval.
    pub poisson: bool,
    /// Seed of the Poisson gaps (the same seed gives the same schedule).
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            rps: 1000,
            service_iters: 10_000,
            poisson: false,
            seed: 1,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "RequestRate",
    summary: "open-loop requests at a fixed arrival rate (rps for the group, evenly spaced or \
              Poisson); the worker holding the arrival clock sleeps to each intended arrival, \
              hands the clock on with a futex wake and serves the request",
    units: "one unit per request served, so work/s is the achieved request rate; arrivals \
            due but not taken when the run stops are the worker report's backlog",
    wakes: Some("each request: completion time minus its intended arrival time"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::RequestLatency,
    params: &[
        ParamRange::new("rps", 1, 10_000_000),
        ParamRange::new("service_iters", 0, MAX_ITERS),
        ParamRange::new("seed", 0, u32::MAX as i64),
    ],
    needs: super::HostNeed::Nothing,
};

/// Longest single wait, so a stop is seen within it.
const WAIT_SLICE_NS: u64 = 10_000_000;
/// Byte offsets in the shared region: the clock's holder word, then the
/// schedule on its own cache line.
const LEADER: usize = 0;
const START: usize = 64;
const INDEX: usize = 72;
const NEXT: usize = 80;
const RNG: usize = 88;
/// Poisson arrivals simulated one by one when counting a backlog; beyond
/// this many the rest of the span is counted at the mean rate.
const MAX_SIMULATED: u64 = 1_000_000;

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Arrivals {
    rps: u64,
    poisson: bool,
}

/// The intended arrival times: where the schedule began, the index of
/// the next arrival, its time, and the gap generator's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Schedule {
    start_ns: u64,
    index: u64,
    next_ns: u64,
    rng: u64,
}

impl Schedule {
    /// A schedule whose first arrival is at `start_ns`.
    fn begin(start_ns: u64, seed: u64) -> Self {
        Schedule {
            start_ns,
            index: 0,
            next_ns: start_ns,
            rng: seed,
        }
    }

    /// Moves on to the arrival after `next_ns`. Fixed arrivals are
    /// computed from the start, so rounding never drifts the rate.
    fn advance(&mut self, a: Arrivals) {
        self.index += 1;
        self.next_ns = if a.poisson {
            self.next_ns + exponential_gap_ns(&mut self.rng, a.rps)
        } else {
            let offset = u128::from(self.index) * 1_000_000_000 / u128::from(a.rps);
            self.start_ns + u64::try_from(offset).unwrap_or(u64::MAX)
        };
    }

    /// Arrivals from `next_ns` on that are due by `now_ns`.
    fn due_by(mut self, now_ns: u64, a: Arrivals) -> u64 {
        let mut due = 0;
        while self.next_ns <= now_ns && due < MAX_SIMULATED {
            due += 1;
            self.advance(a);
        }
        if self.next_ns <= now_ns {
            let rest = u128::from(now_ns - self.next_ns) * u128::from(a.rps) / 1_000_000_000;
            due += 1 + u64::try_from(rest).unwrap_or(u64::MAX);
        }
        due
    }
}

/// splitmix64: the next value of the generator whose state is `state`
/// (RequestRate's arrival gaps, Taobench's request mix).
pub(super) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An exponential gap of mean `1 / rps` seconds, in ns.
fn exponential_gap_ns(state: &mut u64, rps: u64) -> u64 {
    let u = (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    let gap = -(1.0 - u).ln() * 1e9 / rps as f64;
    gap.round() as u64
}

/// A request's latency: from its intended arrival to its completion.
fn request_latency_ns(intended_ns: u64, done_ns: u64) -> u64 {
    done_ns.saturating_sub(intended_ns)
}

/// The group's shared clock.
#[derive(Clone)]
struct Clock(SharedRegion);

impl Clock {
    fn leader(&self) -> &AtomicU32 {
        self.0.atomic_u32(LEADER)
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        self.0.atomic_u64(offset)
    }

    /// Takes the clock; waits in slices while another worker holds it.
    /// False on STOP.
    fn take(&self, tel: &mut Telemetry) -> bool {
        let leader = self.leader();
        loop {
            if leader
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
            if stop_requested() {
                return false;
            }
            tel.plan(WAIT_SLICE_NS); // an idle server waiting for work
            futex_wait(leader, 1, WAIT_SLICE_NS);
        }
    }

    /// Gives the clock to a waiting follower.
    fn hand_over(&self) {
        self.leader().store(0, Ordering::Release);
        futex_wake(self.leader(), 1);
    }

    /// The schedule (only the clock's holder reads or writes it); begun
    /// now with `seed` on first use.
    fn schedule(&self, seed: u64) -> Schedule {
        let s = Schedule {
            start_ns: self.word(START).load(Ordering::Relaxed),
            index: self.word(INDEX).load(Ordering::Relaxed),
            next_ns: self.word(NEXT).load(Ordering::Relaxed),
            rng: self.word(RNG).load(Ordering::Relaxed),
        };
        if s.start_ns == 0 {
            return Schedule::begin(monotonic_ns(), seed);
        }
        s
    }

    fn store(&self, s: Schedule) {
        self.word(START).store(s.start_ns, Ordering::Relaxed);
        self.word(INDEX).store(s.index, Ordering::Relaxed);
        self.word(NEXT).store(s.next_ns, Ordering::Relaxed);
        self.word(RNG).store(s.rng, Ordering::Relaxed);
    }
}

/// Sleeps until `at_ns` (CLOCK_MONOTONIC) in slices; false on STOP.
fn sleep_until_arrival(at_ns: u64, tel: &mut Telemetry) -> bool {
    tel.plan(at_ns.saturating_sub(monotonic_ns()));
    loop {
        let now = monotonic_ns();
        if now >= at_ns {
            return true;
        }
        if stop_requested() {
            return false;
        }
        sleep_until(at_ns.min(now + WAIT_SLICE_NS));
    }
}

struct Body {
    clock: Clock,
    arrivals: Arrivals,
    seed: u64,
    service_iters: u64,
    /// Arrivals due and untaken at STOP, counted by the clock's holder.
    backlog: Option<u64>,
    /// The timer slack is set, in the worker's own thread.
    slack_set: bool,
}

impl Body {
    /// At STOP, with the clock held: counts the arrivals due and not
    /// taken, and keeps the clock so no other worker counts them again.
    fn count_backlog(&mut self, s: Schedule) {
        self.backlog = Some(s.due_by(monotonic_ns(), self.arrivals));
    }

    /// After serving at STOP: takes a free clock to count the backlog (a
    /// clock held by a sleeping leader is counted by that leader).
    fn count_backlog_if_clock_free(&mut self) {
        let free = self
            .clock
            .leader()
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if free {
            self.count_backlog(self.clock.schedule(self.seed));
        }
    }
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.slack_set {
            // The arrival clock's accuracy, not the default 50 µs of timer
            // slack, should bound how late an arrival is taken.
            super::fine_timer_slack();
            self.slack_set = true;
        }
        if !self.clock.take(tel) {
            return 0;
        }
        let mut s = self.clock.schedule(self.seed);
        if !sleep_until_arrival(s.next_ns, tel) {
            self.count_backlog(s);
            return 0;
        }
        let intended = s.next_ns;
        s.advance(self.arrivals);
        self.clock.store(s);
        self.clock.hand_over();
        tel.work_in_chunks(self.service_iters, CHUNK_UNITS, spin_burst);
        tel.record_wake(request_latency_ns(intended, monotonic_ns()));
        if stop_requested() {
            self.count_backlog_if_clock_free();
        }
        1
    }

    fn backlog(&self) -> Option<u64> {
        self.backlog
    }
}

struct Group {
    clock: Clock,
    params: Params,
}

impl PreparedWork for Group {
    fn worker(&mut self, _idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        Ok(Box::new(Body {
            clock: self.clock.clone(),
            arrivals: Arrivals {
                rps: self.params.rps,
                poisson: self.params.poisson,
            },
            seed: self.params.seed,
            service_iters: self.params.service_iters,
            backlog: None,
            slack_set: false,
        }))
    }
}

/// Maps the group's clock and schedule.
pub fn prepare(p: &Params, _workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(Group {
        clock: Clock(SharedRegion::new(128)?),
        params: p.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED: Arrivals = Arrivals {
        rps: 3,
        poisson: false,
    };

    /// The first `n` intended arrival times of a schedule.
    fn times(mut s: Schedule, a: Arrivals, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let t = s.next_ns;
                s.advance(a);
                t
            })
            .collect()
    }

    #[test]
    fn latency_counts_from_the_intended_arrival() {
        // Intended at 1.000 s, taken late at 1.004 s, done at 1.005 s:
        // the 4 ms the clock was late count.
        assert_eq!(request_latency_ns(1_000_000_000, 1_005_000_000), 5_000_000);
        assert_eq!(request_latency_ns(10, 10), 0);
        assert_eq!(
            request_latency_ns(10, 5),
            0,
            "a clock step never underflows"
        );
    }

    #[test]
    fn fixed_arrivals_are_exact_from_the_start() {
        let s = Schedule::begin(1_000, 0);
        // 1e9 / 3 is not an integer: each time is computed from the start.
        assert_eq!(
            times(s, FIXED, 4),
            [1_000, 333_334_333, 666_667_666, 1_000_001_000]
        );
    }

    #[test]
    fn poisson_arrivals_repeat_with_their_seed_and_keep_the_rate() {
        let a = Arrivals {
            rps: 1000,
            poisson: true,
        };
        let first = times(Schedule::begin(0, 42), a, 20_001);
        assert_eq!(first, times(Schedule::begin(0, 42), a, 20_001));
        assert_ne!(first, times(Schedule::begin(0, 43), a, 20_001));
        assert!(first.windows(2).all(|w| w[0] <= w[1]));
        let gaps: Vec<u64> = first.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.windows(2).any(|w| w[0] != w[1]), "gaps vary");
        // 20,000 gaps of mean 1 ms: the mean is within 3% of it.
        let mean = first[20_000] as f64 / 20_000.0;
        assert!((mean - 1e6).abs() < 3e4, "mean gap {mean} ns");
    }

    #[test]
    fn the_backlog_counts_arrivals_due_and_not_taken() {
        let s = Schedule::begin(0, 0);
        assert_eq!(s.due_by(0, FIXED), 1, "the first arrival is due at once");
        assert_eq!(s.due_by(999_999_999, FIXED), 3);
        let mut later = s;
        later.advance(FIXED);
        assert_eq!(later.due_by(1_000_000_000, FIXED), 3);
        let mut ahead = s;
        ahead.next_ns = 5;
        assert_eq!(ahead.due_by(4, FIXED), 0);
        // Beyond the simulated arrivals, the rest is counted at the rate.
        let fast = Arrivals {
            rps: 10_000_000,
            poisson: false,
        };
        assert_eq!(s.due_by(1_000_000_000, fast), 10_000_001);
    }
}
