//! Evidence within a budget: the recorder starts exact (a program on every
//! scheduler event of the watched tasks), measures what its programs cost
//! over a probe window after the workers' release (their run time, from
//! the kernel's BPF statistics, switched on for the window only), and,
//! when that cost is over runq's overhead budget, detaches the per-event
//! programs and samples each CPU instead (`recorder_sample` on a software
//! cpu-clock event): the scheduler under test then pays a sample per
//! millisecond per CPU, not a program per event.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use aya::programs::perf_event::{perf_sw_ids, PerfEventScope, PerfTypeId, SamplePolicy};
use aya::programs::PerfEvent;
use runq_kernel::task_record::{Fidelity, FidelityMode};

use crate::{Recorder, RecorderError};

/// Which fidelity a run's evidence has (`--evidence`; `off` is no
/// recorder at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// Exact while its measured cost fits the budget, sampled when not.
    Auto,
    /// Exact throughout, whatever it costs.
    Exact,
    /// Sampled from the release on.
    Sampled,
}

/// How the recorder keeps within its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// The fidelity asked for.
    pub evidence: Evidence,
    /// The budget, in CPUs (0.01: 1% of one CPU).
    pub budget_cpus: f64,
    /// Samples per second per CPU under sampled fidelity. 250 by
    /// default: at 1 kHz the cpu-clock's interrupts alone cost a pinned
    /// futex hand-over 1.3% on a 2-CPU VM (each interrupt exits the VM),
    /// more than the whole budget; at 250 Hz the default keeps 0.99 of
    /// the run without a recorder, and a 3 s run still has 750 samples
    /// per CPU (a share of 50% to ±3.6%).
    pub sample_hz: u64,
    /// How long the exact programs are measured before the choice.
    pub probe: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            evidence: Evidence::Auto,
            budget_cpus: 0.01,
            sample_hz: 250,
            probe: Duration::from_millis(100),
        }
    }
}

/// When, after the release, the workers have pinned themselves.
const PLACED_AFTER: Duration = Duration::from_millis(300);

/// The programs' summed run time and runs at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    at: Instant,
    run_time: Duration,
    runs: u64,
}

/// Where the recorder is in its choice.
#[derive(Debug, Default)]
pub(crate) struct FidelityState {
    /// The kernel's BPF statistics, on while this is held.
    stats: Option<OwnedFd>,
    /// The workers' release.
    released: Option<Instant>,
    /// The reading at the start of the probe window.
    probe_start: Option<Reading>,
    /// The reading when sampling began (its own cost from there on).
    sampled_from: Option<Reading>,
    /// The reading when sampling stopped, at the run's end.
    sampled_until: Option<Reading>,
    /// The choice, once made.
    pub(crate) fidelity: Option<Fidelity>,
    /// Each watched worker's allowed CPUs when sampling began.
    pub(crate) allowed: std::collections::BTreeMap<u32, Vec<u32>>,
    /// CLOCK_MONOTONIC when the per-event programs were detached, ns.
    pub(crate) switched_ns: u64,
}

/// The budget rule: the fidelity a measured exact cost (`exact_cpus` at
/// `events_per_s`) calls for, with the reason in one clause.
pub fn decide(exact_cpus: f64, events_per_s: f64, policy: &Policy) -> (FidelityMode, String) {
    let pct = |cpus: f64| cpus * 100.0;
    if exact_cpus <= policy.budget_cpus {
        return (
            FidelityMode::Exact,
            format!(
                "exact: recording cost {:.2}% of a CPU at {} events/s, within the {:.2}% budget",
                pct(exact_cpus),
                events(events_per_s),
                pct(policy.budget_cpus)
            ),
        );
    }
    (
        FidelityMode::Sampled,
        format!(
            "sampled at {}: exact recording would have cost {:.1}% of a CPU at {} events/s \
             (budget {:.2}%)",
            hz(policy.sample_hz),
            pct(exact_cpus),
            events(events_per_s),
            pct(policy.budget_cpus)
        ),
    )
}

fn events(per_s: f64) -> String {
    if per_s >= 1000.0 {
        format!("{:.0}k", per_s / 1000.0)
    } else {
        format!("{per_s:.0}")
    }
}

fn hz(hz: u64) -> String {
    if hz % 1000 == 0 {
        format!("{} kHz", hz / 1000)
    } else {
        format!("{hz} Hz")
    }
}

impl Recorder {
    /// Called on each tick of the run with the time since the workers'
    /// release: measures the exact programs over the probe window and
    /// keeps them or switches to sampling, as `policy` says. Errors are
    /// logged and leave the recorder exact.
    pub fn tick(&mut self, policy: &Policy) {
        if self.state.fidelity.is_some() {
            self.read_allowed_once_placed();
            return;
        }
        let now = Instant::now();
        let released = *self.state.released.get_or_insert(now);
        match policy.evidence {
            Evidence::Exact => {
                self.state.fidelity = Some(Fidelity {
                    mode: FidelityMode::Exact,
                    reason: "exact (--evidence exact): its cost was not measured".into(),
                    budget_cpus: policy.budget_cpus,
                    ..Fidelity::default()
                });
            }
            Evidence::Sampled => {
                let reason = format!("sampled at {} (--evidence sampled)", hz(policy.sample_hz));
                self.sample_or_stay_exact(policy, None, reason, released);
            }
            Evidence::Auto => self.probe(policy, released),
        }
    }

    /// The probe of [`Evidence::Auto`]: starts the window, then decides.
    fn probe(&mut self, policy: &Policy, released: Instant) {
        let Some(start) = self.state.probe_start else {
            match aya::sys::enable_stats(aya::sys::Stats::RunTime) {
                Ok(fd) => self.state.stats = Some(fd),
                Err(e) => {
                    log::warn!("recorder: BPF statistics unavailable ({e}); staying exact");
                    self.state.fidelity = Some(Fidelity {
                        reason: format!("exact: its cost could not be measured ({e})"),
                        budget_cpus: policy.budget_cpus,
                        ..Fidelity::default()
                    });
                    return;
                }
            }
            self.state.probe_start = Some(self.reading());
            return;
        };
        let end = self.reading();
        let secs = end.at.duration_since(start.at).as_secs_f64();
        if secs < policy.probe.as_secs_f64() {
            return;
        }
        let exact_cpus = end.run_time.saturating_sub(start.run_time).as_secs_f64() / secs;
        let per_s = end.runs.saturating_sub(start.runs) as f64 / secs;
        let (mode, reason) = decide(exact_cpus, per_s, policy);
        log::info!("recorder: {reason}");
        let measured = Some((exact_cpus, per_s));
        if mode == FidelityMode::Sampled {
            self.sample_or_stay_exact(policy, measured, reason, released);
        } else {
            self.state.stats = None;
            self.state.fidelity = Some(Fidelity {
                mode,
                reason,
                budget_cpus: policy.budget_cpus,
                exact_cpus: Some(exact_cpus),
                events_per_s: Some(per_s),
                ..Fidelity::default()
            });
        }
    }

    /// Switches to sampling; when that fails, stays exact and says why.
    fn sample_or_stay_exact(
        &mut self,
        policy: &Policy,
        measured: Option<(f64, f64)>,
        reason: String,
        released: Instant,
    ) {
        let mut f = Fidelity {
            mode: FidelityMode::Sampled,
            reason,
            budget_cpus: policy.budget_cpus,
            exact_cpus: measured.map(|m| m.0),
            events_per_s: measured.map(|m| m.1),
            sample_hz: Some(policy.sample_hz),
            switched_at_ms: Some(released.elapsed().as_millis() as u64),
            ..Fidelity::default()
        };
        if let Err(e) = self.switch_to_sampled(policy.sample_hz) {
            log::warn!("recorder: could not switch to sampling ({e}); staying exact");
            f.mode = FidelityMode::Exact;
            f.reason = format!("exact: sampling could not start ({e})");
            f.sample_hz = None;
            f.switched_at_ms = None;
            self.state.stats = None;
        } else {
            if self.state.stats.is_none() {
                self.state.stats = aya::sys::enable_stats(aya::sys::Stats::RunTime).ok();
            }
            self.state.sampled_from = Some(self.reading());
            self.state.switched_ns = runq_kernel::clock::monotonic_ns();
        }
        self.state.fidelity = Some(f);
    }

    /// Under sampled fidelity, reads each worker's allowed CPUs once, when
    /// the workers have placed themselves ([`PLACED_AFTER`] after the
    /// release): a worker's holders are the tasks sampled on those CPUs.
    fn read_allowed_once_placed(&mut self) {
        let sampled = self.state.sampled_from.is_some();
        let placed = self
            .state
            .released
            .is_some_and(|r| r.elapsed() >= PLACED_AFTER);
        if sampled && placed && self.state.allowed.is_empty() {
            self.state.allowed = self
                .watched
                .iter()
                .filter_map(|&t| Some((t, allowed_cpus(t)?)))
                .collect();
        }
    }

    /// Detaches the per-event programs (they stop at once) and attaches
    /// the sampler to every online CPU's cpu-clock at `hz`.
    fn switch_to_sampled(&mut self, hz: u64) -> Result<(), RecorderError> {
        // The sampler first: if it cannot run, the exact programs stay.
        self.attach_sampler(hz)?;
        for (name, p) in self.ebpf.programs_mut() {
            // The classic object's unused variants were never loaded.
            let unloaded = match p {
                aya::programs::Program::TracePoint(tp) => tp.unload(),
                aya::programs::Program::BtfTracePoint(tp) => tp.unload(),
                _ => continue,
            };
            if let Err(e) = unloaded {
                log::debug!("recorder: unloading {name}: {e}");
            }
        }
        Ok(())
    }

    /// Loads `recorder_sample` and attaches it to every online CPU's
    /// cpu-clock at `hz` (unloaded again if one CPU refuses it).
    fn attach_sampler(&mut self, hz: u64) -> Result<(), RecorderError> {
        let sampler: &mut PerfEvent =
            Recorder::program(&mut self.ebpf, "recorder_sample", "cpu-clock")?;
        sampler.load().map_err(crate::attach_error("cpu-clock"))?;
        let cpus = aya::util::online_cpus()
            .map_err(|(what, e)| RecorderError::Load(format!("{what}: {e}")));
        let attached = cpus.and_then(|cpus| {
            cpus.into_iter().try_for_each(|cpu| {
                sampler
                    .attach(
                        PerfTypeId::Software,
                        perf_sw_ids::PERF_COUNT_SW_CPU_CLOCK as u64,
                        PerfEventScope::AllProcessesOneCpu { cpu },
                        SamplePolicy::Frequency(hz),
                        false,
                    )
                    .map(drop)
                    .map_err(crate::attach_error("cpu-clock"))
            })
        });
        if attached.is_err() {
            let _ = sampler.unload();
        }
        attached
    }

    /// Stops sampling at the run's end (the sampler is unloaded, its
    /// samples kept): what the collection does is not the run's.
    pub fn stop_sampling(&mut self) {
        if self.state.sampled_from.is_none() || self.state.sampled_until.is_some() {
            return;
        }
        self.state.sampled_until = Some(self.reading());
        if let Some(aya::programs::Program::PerfEvent(p)) = self.ebpf.program_mut("recorder_sample")
        {
            if let Err(e) = p.unload() {
                log::warn!("recorder: stopping the sampler: {e}");
            }
        }
    }

    /// The loaded programs' summed run time and runs now.
    fn reading(&self) -> Reading {
        let (mut run_time, mut runs) = (Duration::ZERO, 0);
        for (_, p) in self.ebpf.programs() {
            if let Ok(info) = p.info() {
                run_time += info.run_time();
                runs += info.run_count();
            }
        }
        Reading {
            at: Instant::now(),
            run_time,
            runs,
        }
    }

    /// The fidelity with the programs' cost over the whole run filled in:
    /// measured while sampling, projected from the probe while exact.
    pub(crate) fn fidelity_at_end(&self) -> Option<Fidelity> {
        let mut f = self.state.fidelity.clone()?;
        let released = self.state.released?;
        let end = self.state.sampled_until.unwrap_or_else(|| self.reading());
        let total = end.at.duration_since(released).as_secs_f64().max(1e-9);
        let exact_share = |until: f64| f.exact_cpus.map(|c| c * until / total);
        f.bpf_cpus = match (f.mode, self.state.sampled_from) {
            (FidelityMode::Sampled, Some(from)) => {
                let sampled = end.run_time.saturating_sub(from.run_time).as_secs_f64();
                let before = from.at.duration_since(released).as_secs_f64();
                Some(sampled / total + exact_share(before).unwrap_or(0.0))
            }
            _ => exact_share(total),
        };
        Some(f)
    }
}

/// The CPUs thread `tid` may run on, when they can be read.
fn allowed_cpus(tid: u32) -> Option<Vec<u32>> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above, for a thread of ours or of a child.
    let rc = unsafe {
        libc::sched_getaffinity(tid as libc::pid_t, size_of::<libc::cpu_set_t>(), &mut set)
    };
    (rc == 0).then(|| {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: CPU_ISSET reads within the set.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .map(|c| c as u32)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_rule_keeps_exact_within_it_and_samples_past_it() {
        let p = Policy::default();
        let (mode, why) = decide(0.004, 27_000.0, &p);
        assert_eq!(mode, FidelityMode::Exact);
        assert_eq!(
            why,
            "exact: recording cost 0.40% of a CPU at 27k events/s, within the 1.00% budget"
        );
        let (mode, why) = decide(0.098, 680_000.0, &p);
        assert_eq!(mode, FidelityMode::Sampled);
        assert_eq!(
            why,
            "sampled at 250 Hz: exact recording would have cost 9.8% of a CPU at 680k events/s \
             (budget 1.00%)"
        );
        let tight = Policy {
            budget_cpus: 0.001,
            ..p
        };
        assert_eq!(decide(0.004, 27_000.0, &tight).0, FidelityMode::Sampled);
    }
}
