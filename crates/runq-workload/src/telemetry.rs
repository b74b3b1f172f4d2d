//! The per-worker recorder: work units, checkpoints every 1024 units
//! (migrations, CPUs used), scheduling gaps ([`crate::gap`]), reservoir-sampled wake
//! latencies and iteration costs, and the schedstat/NUMA deltas that turn
//! into a [`WorkerReport`] at the end.
//!
//! Everything timed inside the loop uses the work loops' clock
//! ([`runq_kernel::clock::fast`]); the run's wall time uses CLOCK_MONOTONIC,
//! which is what the thread CPU clock and schedstat are compared with.

use std::collections::BTreeSet;

use runq_kernel::schedstat::{read_own_schedstat, Schedstat};

use crate::alarm::{freeze_recording, Freeze, Watchdog};
use crate::gap::GapMeter;
use crate::progress::ProgressSlot;
use crate::report::{Migration, WatchdogFiring, WorkerReport, MAX_WAKE_SAMPLES};
use crate::reservoir::Reservoir;
use crate::stop::stop_requested;
use runq_kernel::clock::fast::now_ns;
use runq_kernel::clock::{current_cpu, monotonic_ns, thread_cpu_ns};

/// Work units between migration/gap checkpoints.
pub const CHECK_PERIOD_UNITS: u64 = 1024;
/// The most spin units a long iteration does between two progress points
/// ([`Telemetry::work_in_chunks`]): 65,536 take about 0.3 ms, and a
/// cache-missing read-modify-write step about 0.1 µs, so a stop is seen
/// within a few ms whatever the parameters. Types whose unit costs more
/// pass a smaller chunk.
pub const CHUNK_UNITS: u64 = 1 << 16;
/// Most migrations kept in the report's list (the count is exact).
pub const MAX_MIGRATIONS_KEPT: usize = 10_000;

/// Live telemetry of one worker, updated from its work loop.
///
/// The fields every iteration touches come first and the struct is laid
/// out in declaration order on a cache-line boundary: right after a
/// context switch they are cold, and three lines miss less than nine.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Telemetry {
    /// The clock reading that ended the iteration's last wake (0: none);
    /// the iteration's end reuses it instead of reading the clock again.
    wake_end_ns: u64,
    last_iteration_end_ns: u64,
    /// The last progress point: an iteration's end or a chunk of a long
    /// iteration ([`Self::progress_within`]).
    last_point_ns: u64,
    planned_ns: u64,
    iterations: u64,
    work_units: u64,
    /// Every plan declared so far, for the report.
    planned_total_ns: u64,
    /// The least gap that sets off an armed alarm (the watchdog, the
    /// recorder's freeze; `u64::MAX`: none armed).
    alarm_ns: u64,
    /// Where the counters are published for the run loop's snapshots.
    progress: Option<ProgressSlot>,
    wakes: Reservoir,
    costs: Reservoir,
    /// CLOCK_MONOTONIC at the start, for the wall time.
    start_wall_ns: u64,
    /// The loop clock at the start, for offsets (gap and migration times).
    start_ns: u64,
    start_cpu_time_ns: u64,
    schedstat_before: Option<Schedstat>,
    numa_migrated_before: u64,
    last_check_ns: u64,
    last_cpu: usize,
    cpus_used: BTreeSet<usize>,
    migrations: Vec<Migration>,
    migration_count: u64,
    gaps: GapMeter,
    watchdog: Option<Watchdog>,
    watchdog_fired: Option<WatchdogFiring>,
    freeze: Option<Freeze>,
    /// Request latencies (Schbench, Taobench), made on the first one.
    requests: Option<Reservoir>,
}

impl Telemetry {
    /// Starts recording now (call right before the work loop).
    pub fn start() -> Self {
        let start_wall_ns = monotonic_ns();
        let start_ns = now_ns();
        let cpu = current_cpu();
        let seed = start_ns ^ (u64::from(runq_kernel::clock::gettid()) << 32);
        Telemetry {
            start_wall_ns,
            start_ns,
            start_cpu_time_ns: thread_cpu_ns(),
            schedstat_before: read_own_schedstat(),
            numa_migrated_before: crate::own_numa::pages_migrated(),
            work_units: 0,
            iterations: 0,
            progress: None,
            last_iteration_end_ns: start_ns,
            last_point_ns: start_ns,
            planned_ns: 0,
            planned_total_ns: 0,
            alarm_ns: u64::MAX,
            watchdog: None,
            freeze: None,
            watchdog_fired: None,
            last_check_ns: start_ns,
            last_cpu: cpu,
            cpus_used: BTreeSet::from([cpu]),
            migrations: Vec::new(),
            migration_count: 0,
            gaps: GapMeter::start(start_ns),
            wakes: Reservoir::new(MAX_WAKE_SAMPLES, seed),
            costs: Reservoir::new(MAX_WAKE_SAMPLES, seed.rotate_left(17)),
            wake_end_ns: 0,
            requests: None,
        }
    }

    /// Records one wake (resume) latency in ns.
    #[inline]
    pub fn record_wake(&mut self, latency_ns: u64) {
        self.wakes.record(latency_ns);
    }

    /// Records a wake that counts from `t0` (a reading of
    /// [`runq_kernel::clock::fast::now_ns`]) to now, reading the clock
    /// once. That reading also ends the iteration (see
    /// [`Self::end_iteration`]), so a ping-pong pays two clock reads per
    /// round trip, not three; each cost sample is still one whole loop.
    #[inline]
    pub fn record_wake_since(&mut self, t0: u64) {
        let now = now_ns();
        self.wakes.record(now.saturating_sub(t0));
        self.wake_end_ns = now;
    }

    /// Records the wake latency of a wakee woken by a waker that stamped
    /// `stamp` just before its wake call (see [`crate::wake_stamp`]): from
    /// the stamp to now, reading the clock once (that reading also ends
    /// the iteration, as in [`Self::record_wake_since`]). No stamp (0): no
    /// sample.
    #[inline]
    pub fn record_wake_stamped(&mut self, stamp: u64) {
        let now = now_ns();
        if let Some(ns) = crate::wake_stamp::wake_latency_ns(stamp, now) {
            self.wakes.record(ns);
        }
        self.wake_end_ns = now;
    }

    /// Records the wake latency of a blocking call (a pipe read, a
    /// `waitpid`) that began at `wait_start` for an event its waker
    /// stamped `stamp`; a call that found its event already there records
    /// nothing (see [`crate::wake_stamp::waited_wake_latency_ns`]).
    #[inline]
    pub fn record_wake_if_waited(&mut self, wait_start: u64, stamp: u64) {
        let now = now_ns();
        if let Some(ns) = crate::wake_stamp::waited_wake_latency_ns(wait_start, stamp, now) {
            self.wakes.record(ns);
        }
        self.wake_end_ns = now;
    }

    /// Records one request latency in ns (Schbench: from the worker's
    /// wake to its request's end, think time included, as schbench's
    /// request latency; Taobench: from a client's first post to its
    /// operation's end). The reservoir is made on the first one.
    pub fn record_request(&mut self, latency_ns: u64) {
        let seed = self.start_ns.rotate_left(31);
        self.requests
            .get_or_insert_with(|| Reservoir::new(MAX_WAKE_SAMPLES, seed))
            .record(latency_ns);
    }

    /// Publishes the counters to `slot` after every iteration (see
    /// [`crate::progress`]).
    pub fn publish_to(&mut self, slot: ProgressSlot) {
        slot.publish(self.work_units, self.iterations);
        self.progress = Some(slot);
    }

    /// Arms the watchdog: once the worker's longest gap (see
    /// [`crate::gap`]) passes `w.stuck_ns` before the stop, SIGUSR2 goes
    /// to the scheduler, once, and the report says when and why.
    pub fn arm_watchdog(&mut self, w: Watchdog) {
        self.watchdog = Some(w);
        self.rearm();
    }

    /// Arms the flight recorder's stop-on-threshold trigger: once the
    /// worker's longest gap passes `f.gap_ns` before the stop, the
    /// recording is frozen, once (see [`Freeze`]).
    pub fn arm_freeze(&mut self, f: Freeze) {
        self.freeze = Some(f);
        self.rearm();
    }

    /// The alarm bound: the least of the armed ones.
    fn rearm(&mut self) {
        let w = self.watchdog.map_or(u64::MAX, |w| w.stuck_ns);
        let f = self.freeze.map_or(u64::MAX, |f| f.gap_ns);
        self.alarm_ns = w.min(f);
    }

    /// Does `units` units of `step` (which does the units it is asked for
    /// and returns them): in one call when they fit in `chunk`, else in
    /// chunks with a progress point after each (see
    /// [`Self::progress_within`]), ending early at the stop. Returns the
    /// units done.
    #[inline(always)]
    pub fn work_in_chunks(
        &mut self,
        units: u64,
        chunk: u64,
        mut step: impl FnMut(u64) -> u64,
    ) -> u64 {
        if units <= chunk {
            return step(units);
        }
        self.long_work(units, chunk.max(1), &mut step)
    }

    /// A turn of `units` spin units ([`crate::spin::spin_burst`] through
    /// [`Self::work_in_chunks`]), counted as at least one: a legal zero
    /// (`spin_iters = 0`: a ping-pong of pure hand-overs) still does a
    /// turn, and the report counts it.
    #[inline(always)]
    pub fn spin(&mut self, units: u64) -> u64 {
        self.work_in_chunks(units, CHUNK_UNITS, crate::spin::spin_burst)
            .max(1)
    }

    #[inline(never)]
    fn long_work(&mut self, units: u64, chunk: u64, step: &mut dyn FnMut(u64) -> u64) -> u64 {
        let mut done = 0u64;
        while done < units {
            done += step((units - done).min(chunk)).max(1);
            if stop_requested() {
                break;
            }
            self.progress_within(done);
        }
        done
    }

    /// A progress point inside a long iteration that has done `done`
    /// units so far: publishes them (the run loop's snapshots and stall
    /// checks see a long burst advance), feeds the gap meter the time
    /// since the last point, and runs the watchdog.
    #[inline]
    pub fn progress_within(&mut self, done: u64) {
        let now = now_ns();
        let unplanned = self.unplanned_since_point(now);
        self.gaps.after_iteration(now, unplanned);
        self.check_watchdog(now);
        if let Some(p) = &self.progress {
            p.publish(self.work_units.wrapping_add(done), self.iterations);
        }
    }

    /// Time since the last progress point beyond what was planned; the
    /// plan is used up as the time passes.
    #[inline(always)]
    fn unplanned_since_point(&mut self, now: u64) -> u64 {
        let since = now.saturating_sub(self.last_point_ns);
        self.last_point_ns = now;
        let covered = since.min(self.planned_ns);
        self.planned_ns -= covered;
        since - covered
    }

    #[inline(always)]
    fn check_watchdog(&mut self, now: u64) {
        if self.gaps.longest_ns() > self.alarm_ns {
            self.alarm(now);
        }
    }

    /// Sets off each armed alarm whose bound the longest gap passed, once,
    /// unless the run is already stopping (what happens after the stop is
    /// not the scheduler's doing, and the recorder stops then anyway).
    #[cold]
    fn alarm(&mut self, now: u64) {
        if stop_requested() {
            return;
        }
        let longest = self.gaps.longest_ns();
        if let Some(f) = self.freeze.filter(|f| longest > f.gap_ns) {
            self.freeze = None;
            freeze_recording(f);
        }
        if self.watchdog.is_some_and(|w| longest > w.stuck_ns) {
            self.fire_watchdog(now);
        }
        self.rearm();
    }

    /// Signals the scheduler once.
    fn fire_watchdog(&mut self, now: u64) {
        let Some(w) = self.watchdog.take() else {
            return;
        };
        // SAFETY: kill(2) with a pid we were given.
        unsafe { libc::kill(w.scheduler_pid as libc::pid_t, libc::SIGUSR2) };
        self.watchdog_fired = Some(WatchdogFiring {
            at_ms: now.saturating_sub(self.start_ns) / 1_000_000,
            stall_ms: self.gaps.longest_ns() / 1_000_000,
        });
    }

    /// Declares that the current iteration intends to spend up to `ns`
    /// waiting or bursting by design (a sleep, a timed burst, a partner's
    /// planned interval). The watchdog only counts time beyond this plan.
    #[inline]
    pub fn plan(&mut self, ns: u64) {
        self.planned_ns = self.planned_ns.saturating_add(ns);
        self.planned_total_ns = self.planned_total_ns.saturating_add(ns);
    }

    /// Closes one outer iteration that did `units` work units: samples its
    /// cost (up to now, or up to the end of the iteration's last wake when
    /// it was recorded with [`Self::record_wake_since`]) and runs the checkpoint when the unit count is a multiple of
    /// [`CHECK_PERIOD_UNITS`]. Iterations that did no work skip the check.
    /// Returns the iteration's unplanned time in ns: its wall-clock cost
    /// minus what it declared with [`Self::plan`]. Always inlined, into
    /// the loop of each work type (see [`crate::worktype::WorkerBody::iterate`]).
    #[inline(always)]
    pub fn end_iteration(&mut self, units: u64) -> u64 {
        let now = match std::mem::take(&mut self.wake_end_ns) {
            0 => now_ns(),
            wake_end => wake_end,
        };
        let cost = now.saturating_sub(self.last_iteration_end_ns);
        self.costs.record(cost);
        self.last_iteration_end_ns = now;
        self.iterations += 1;
        let unplanned = self.unplanned_since_point(now);
        self.planned_ns = 0;
        self.gaps.after_iteration(now, unplanned);
        self.check_watchdog(now);
        if units == 0 {
            self.publish();
            return unplanned;
        }
        self.work_units = self.work_units.wrapping_add(units);
        self.publish();
        if self.work_units % CHECK_PERIOD_UNITS == 0 {
            self.checkpoint(now);
        }
        unplanned
    }

    #[inline(always)]
    fn publish(&self) {
        if let Some(p) = &self.progress {
            p.publish(self.work_units, self.iterations);
        }
    }

    #[cold]
    fn checkpoint(&mut self, now: u64) {
        let cpu = current_cpu();
        if cpu != self.last_cpu {
            self.migration_count += 1;
            if self.migrations.len() < MAX_MIGRATIONS_KEPT {
                self.migrations.push(Migration {
                    at_ms: now.saturating_sub(self.start_ns) / 1_000_000,
                    from_cpu: self.last_cpu,
                    to_cpu: cpu,
                });
            }
            self.cpus_used.insert(cpu);
            self.last_cpu = cpu;
        }
        self.last_check_ns = now;
    }

    /// Ends recording and builds the report.
    pub fn finish(self, group_idx: usize, is_messenger: bool) -> WorkerReport {
        let wall_time_ns = monotonic_ns().saturating_sub(self.start_wall_ns);
        let cpu_time_ns = thread_cpu_ns().saturating_sub(self.start_cpu_time_ns);
        let sched = match (read_own_schedstat(), self.schedstat_before) {
            (Some(after), Some(before)) => after.delta_since(&before),
            _ => Schedstat::default(),
        };
        let max_gap_source = self.gaps.source();
        let gap = self.gaps.finish(now_ns());
        let (resume_latencies_ns, wake_sample_total) = self.wakes.into_parts();
        let (iteration_costs_ns, iteration_cost_sample_total) = self.costs.into_parts();
        let (request_latencies_ns, request_sample_total) =
            self.requests.map(Reservoir::into_parts).unwrap_or_default();
        WorkerReport {
            tid: runq_kernel::clock::gettid(),
            work_units: self.work_units,
            cpu_time_ns,
            wall_time_ns,
            off_cpu_ns: wall_time_ns.saturating_sub(cpu_time_ns),
            migration_count: self.migration_count,
            cpus_used: self.cpus_used,
            migrations: self.migrations,
            max_gap_ms: gap.ns / 1_000_000,
            max_gap_cpu: gap.cpu,
            max_gap_at_ms: gap.at_ns / 1_000_000,
            max_gap_source,
            resume_latencies_ns,
            wake_sample_total,
            iteration_costs_ns,
            iteration_cost_sample_total,
            request_latencies_ns,
            request_sample_total,
            iterations: self.iterations,
            schedstat_run_delay_ns: sched.run_delay_ns,
            schedstat_run_count: sched.run_count,
            schedstat_cpu_time_ns: sched.cpu_time_ns,
            completed: true,
            numa_pages: crate::own_numa::own_pages_per_node(),
            vmstat_numa_pages_migrated: crate::own_numa::pages_migrated()
                .saturating_sub(self.numa_migrated_before),
            exit_info: None,
            is_messenger,
            role: 0,
            partner_lost: None,
            backlog: None,
            group_idx,
            affinity_error: None,
            start_error: None,
            planned_wait_ns: self.planned_total_ns,
            watchdog: self.watchdog_fired,
            runnable_at_deadline: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_cadence_follows_unit_multiples() {
        // 320 units per iteration (PageFaultChurn): gcd(320, 1024) = 64, so
        // a checkpoint every 16 iterations.
        let mut t = Telemetry::start();
        let mut checks = 0;
        for _ in 0..160 {
            let before = t.last_check_ns;
            std::thread::sleep(std::time::Duration::from_micros(1));
            t.end_iteration(320);
            checks += u32::from(t.last_check_ns != before);
        }
        assert_eq!(checks, 10);
        assert_eq!(t.iterations, 160);
    }

    #[test]
    fn an_iteration_ends_at_its_last_wake_when_one_was_recorded() {
        let mut t = Telemetry::start();
        let t0 = now_ns();
        t.record_wake_since(t0);
        let wake_end = t.wake_end_ns;
        assert!(wake_end >= t0);
        std::thread::sleep(std::time::Duration::from_millis(2));
        t.end_iteration(1);
        assert_eq!(
            t.last_iteration_end_ns, wake_end,
            "the wake's reading is reused"
        );
        assert_eq!(t.wake_end_ns, 0, "and used once");
        std::thread::sleep(std::time::Duration::from_millis(2));
        t.end_iteration(1);
        assert!(
            t.last_iteration_end_ns >= wake_end + 4_000_000,
            "then the clock again"
        );
        assert_eq!(t.wakes.total(), 1);
    }

    #[test]
    fn zero_unit_iterations_do_not_check() {
        let mut t = Telemetry::start();
        let before = t.last_check_ns;
        for _ in 0..10 {
            t.end_iteration(0);
        }
        assert_eq!(t.last_check_ns, before);
        assert_eq!(t.iterations, 10);
        assert_eq!(t.work_units, 0);
    }

    #[test]
    fn planned_time_is_not_a_stall() {
        let mut t = Telemetry::start();
        t.end_iteration(1);
        t.plan(u64::MAX / 2);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(t.end_iteration(1), 0, "a planned sleep is not a stall");
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(
            t.end_iteration(1) >= 2_000_000,
            "the plan lasts one iteration"
        );
    }

    #[test]
    fn a_gap_past_the_bound_freezes_the_recording_once() {
        use std::os::fd::AsRawFd;
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "1").unwrap();
        let fd = std::fs::OpenOptions::new()
            .write(true)
            .open(file.path())
            .unwrap();
        let mut t = Telemetry::start();
        t.gaps = GapMeter::on_iteration_time(now_ns());
        t.arm_freeze(Freeze {
            tracing_on_fd: fd.as_raw_fd(),
            gap_ns: 1_000_000,
        });
        std::thread::sleep(std::time::Duration::from_millis(3));
        t.end_iteration(1);
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "0", "frozen");
        assert!(t.freeze.is_none() && t.alarm_ns == u64::MAX, "disarmed");
        std::fs::write(file.path(), "1").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        t.end_iteration(1);
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "1", "once");
    }

    #[test]
    fn finish_fills_times_and_samples() {
        let mut t = Telemetry::start();
        for i in 0..5 {
            t.record_wake(i * 10);
            crate::spin::spin_burst(1024);
            t.end_iteration(1024);
        }
        let r = t.finish(3, true);
        assert_eq!(r.work_units, 5 * 1024);
        assert_eq!(r.resume_latencies_ns, vec![0, 10, 20, 30, 40]);
        assert_eq!(r.wake_sample_total, 5);
        assert_eq!(r.iteration_cost_sample_total, 5);
        assert!(r.wall_time_ns >= r.cpu_time_ns || r.wall_time_ns + 1_000_000 > r.cpu_time_ns);
        assert_eq!(r.off_cpu_ns, r.wall_time_ns.saturating_sub(r.cpu_time_ns));
        assert!(r.completed && r.is_messenger && r.group_idx == 3);
        assert!(!r.cpus_used.is_empty());
    }
}
