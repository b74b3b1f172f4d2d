//! Work types: what a worker does in each outer iteration.
//!
//! Each type is a small module with a `Params` struct (serde, with the
//! seed's defaults), a `prepare` function that builds any resource its
//! workers share (pipes, shared memory) in the parent before fork, and a
//! [`WorkerBody`] that runs one outer iteration in the child.

mod bursty;
mod cache_pipe;
mod cache_pressure;
mod cache_yield;
mod churn;
mod fan_out;
mod fan_out_types;
mod fork_exit;
mod futex_lock;
mod futex_ping_pong;
mod idle_churn;
mod io_mix;
mod io_sync_write;
mod locks;
mod mixed;
mod page_fault_churn;
mod pipe_io;
mod sequence;
mod spin_wait;
mod timer_latency;
mod wake_chain;
mod yield_heavy;

pub use sequence::{Phase, PhaseKind};

use std::io;

use runq_kernel::util::closest;
use serde::{Deserialize, Serialize};

use crate::telemetry::Telemetry;

/// One outer iteration of a worker's loop, run in the child.
pub trait WorkerBody {
    /// Runs one iteration and returns the work units it did. Records wake
    /// latencies into `tel` where the type has a blocking step.
    fn iterate(&mut self, tel: &mut Telemetry) -> u64;

    /// True for a fan-out messenger.
    fn is_messenger(&self) -> bool {
        false
    }

    /// The index (within its group) of a partner this worker lost: its
    /// end of their pipes closed while the run went on. The work loop
    /// stops this worker once it is set.
    fn partner_lost(&self) -> Option<usize> {
        None
    }
}

/// Resources of one group, made before fork and split between workers.
pub trait PreparedWork {
    /// Builds worker `idx`'s body in the child, keeping only its share of
    /// the group's resources (and closing the rest).
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>>;

    /// Called in the parent once every worker is forked, to close the
    /// parent's copies of shared resources.
    fn release_parent_copies(&mut self) {}
}

/// A [`PreparedWork`] for types whose workers share nothing.
struct Independent<F: FnMut(usize) -> io::Result<Box<dyn WorkerBody>>>(F);

impl<F: FnMut(usize) -> io::Result<Box<dyn WorkerBody>>> PreparedWork for Independent<F> {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        (self.0)(idx)
    }
}

/// Boxes a closure as independent per-worker setup.
fn independent(
    f: impl FnMut(usize) -> io::Result<Box<dyn WorkerBody>> + 'static,
) -> Box<dyn PreparedWork> {
    Box::new(Independent(f))
}

/// Parameters of the types whose one knob is a spin burst per iteration
/// (SpinWait, Mixed, FutexPingPong, FutexFanOut, AffinityChurn,
/// PolicyChurn, WakeChain).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpinParams {
    /// Spin units per iteration (per turn, cycle or hop).
    pub spin_iters: u64,
}

impl Default for SpinParams {
    fn default() -> Self {
        SpinParams { spin_iters: 1024 }
    }
}

/// The work types and their parameters. Serialized with a `type` tag, so a
/// scenario can say `{ type = "PipeIo", burst_iters = 0 }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum WorkType {
    /// Pure CPU: a spin burst per iteration.
    SpinWait(SpinParams),
    /// `sched_yield()` in a loop, one unit per yield.
    YieldHeavy(yield_heavy::Params),
    /// A spin burst followed by a yield.
    Mixed(SpinParams),
    /// Spin for `burst_ms`, sleep for `sleep_ms`.
    Bursty(bursty::Params),
    /// Pairs of workers ping-ponging a byte over pipes.
    PipeIo(pipe_io::Params),
    /// Pairs of workers alternating turns on a shared futex.
    FutexPingPong(SpinParams),
    /// Strided read-modify-writes over a buffer.
    CachePressure(cache_pressure::Params),
    /// 4 KiB writes and `fdatasync` to a private temporary file.
    IoSyncWrite(io_sync_write::Params),
    /// The CachePressure walk, then a yield.
    CacheYield(cache_pressure::Params),
    /// Pipe ping-pong pairs with a cache walk between trips.
    CachePipe(cache_pipe::Params),
    /// One messenger wakes all receivers on a futex.
    FutexFanOut(SpinParams),
    /// A messenger timestamps and wakes workers that do matrix multiplies.
    FanOutCompute(fan_out_types::FanOutComputeParams),
    /// Re-pins itself to a random allowed CPU each iteration.
    AffinityChurn(SpinParams),
    /// Cycles its scheduling policy each iteration.
    PolicyChurn(SpinParams),
    /// Steps its nice value each iteration.
    NiceSweep(churn::NiceSweepParams),
    /// Workers contend for one shared futex mutex.
    MutexContention(locks::MutexParams),
    /// MADV_DONTNEED and re-fault a private region.
    PageFaultChurn(page_fault_churn::Params),
    /// Random reads from a private file with its cache dropped.
    IoRandRead(io_mix::Params),
    /// Writes and fdatasync to one shared file.
    IoConvoy(io_mix::Params),
    /// fork() + _exit() + waitpid() in a loop.
    ForkExit(fork_exit::Params),
    /// Timed phases of spin, sleep, yield and I/O.
    Sequence(sequence::Params),
    /// Absolute-deadline periodic wakeups (cyclictest).
    TimerLatency(timer_latency::Params),
    /// A ring of workers passing a token.
    WakeChain(SpinParams),
    /// Many waiters woken at once.
    ThunderingHerd(fan_out_types::ThunderingHerdParams),
    /// Low/medium/high triples around a lock, plain or PI.
    PriorityInversion(locks::InversionParams),
    /// Microsecond bursts and sleeps.
    IdleChurn(idle_churn::Params),
}

/// Static description of a work type for `--list` and `--explain`.
#[derive(Debug, Clone, Copy)]
pub struct TypeInfo {
    /// The type's name, as used on the command line.
    pub name: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// What a work unit is and how often the checkpoint runs.
    pub units: &'static str,
    /// Where it samples wake latency, or `None`.
    pub wakes: Option<&'static str>,
    /// Worker-count rule, if any.
    pub workers: Option<&'static str>,
    /// What the wake samples measure, so reports can name the figure.
    pub wake_figure: WakeFigure,
}

/// What a type's wake samples (`resume_latencies_ns`) measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeFigure {
    /// Time across a blocking call or from a waker's timestamp: a wake-up
    /// latency.
    Latency,
    /// Time past a requested sleep (elapsed minus requested): how late the
    /// sleeper ran, not the whole blocking call.
    SleepOvershoot,
    /// Steps of both kinds (Sequence: overshoot for sleeps, the whole call
    /// for yields and fdatasync).
    Mixed,
}

impl WakeFigure {
    /// The short label reports print for the figure.
    pub fn label(self) -> &'static str {
        match self {
            WakeFigure::Latency => "wake latency",
            WakeFigure::SleepOvershoot => "sleep overshoot",
            WakeFigure::Mixed => "overshoot and call time",
        }
    }
}

/// Errors in choosing or configuring a work type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkTypeError {
    /// The name matches no work type.
    #[error("unknown work type {name:?}{}; `runq run --list` shows them all", suggestion_text(.suggestion))]
    Unknown {
        /// What the user typed.
        name: String,
        /// The closest known name.
        suggestion: Option<String>,
    },
    /// A parameter name or value was rejected.
    #[error("invalid parameter for {work_type}: {reason}")]
    BadParam {
        /// The work type.
        work_type: String,
        /// What was wrong.
        reason: String,
    },
    /// The worker count does not suit the type.
    #[error("{work_type} needs {rule}, got {workers} workers")]
    BadWorkerCount {
        /// The work type.
        work_type: String,
        /// The rule.
        rule: &'static str,
        /// The count given.
        workers: usize,
    },
}

fn suggestion_text(s: &Option<String>) -> String {
    s.as_ref()
        .map(|s| format!(" (did you mean {s}?)"))
        .unwrap_or_default()
}

impl WorkType {
    /// Every work type with its default parameters.
    pub fn all_defaults() -> Vec<WorkType> {
        vec![
            WorkType::SpinWait(Default::default()),
            WorkType::YieldHeavy(Default::default()),
            WorkType::Mixed(Default::default()),
            WorkType::Bursty(Default::default()),
            WorkType::PipeIo(Default::default()),
            WorkType::FutexPingPong(Default::default()),
            WorkType::CachePressure(Default::default()),
            WorkType::IoSyncWrite(Default::default()),
            WorkType::CacheYield(Default::default()),
            WorkType::CachePipe(Default::default()),
            WorkType::FutexFanOut(Default::default()),
            WorkType::FanOutCompute(Default::default()),
            WorkType::AffinityChurn(Default::default()),
            WorkType::PolicyChurn(Default::default()),
            WorkType::NiceSweep(Default::default()),
            WorkType::MutexContention(Default::default()),
            WorkType::PageFaultChurn(Default::default()),
            WorkType::IoRandRead(Default::default()),
            WorkType::IoConvoy(Default::default()),
            WorkType::ForkExit(Default::default()),
            WorkType::Sequence(Default::default()),
            WorkType::TimerLatency(Default::default()),
            WorkType::WakeChain(Default::default()),
            WorkType::ThunderingHerd(Default::default()),
            WorkType::PriorityInversion(Default::default()),
            WorkType::IdleChurn(Default::default()),
        ]
    }

    /// Static description of this type.
    pub fn info(&self) -> TypeInfo {
        match self {
            WorkType::SpinWait(_) => spin_wait::INFO,
            WorkType::YieldHeavy(_) => yield_heavy::INFO,
            WorkType::Mixed(_) => mixed::INFO,
            WorkType::Bursty(_) => bursty::INFO,
            WorkType::PipeIo(_) => pipe_io::INFO,
            WorkType::FutexPingPong(_) => futex_ping_pong::INFO,
            WorkType::CachePressure(_) => cache_pressure::INFO,
            WorkType::IoSyncWrite(_) => io_sync_write::INFO,
            WorkType::CacheYield(_) => cache_yield::INFO,
            WorkType::CachePipe(_) => cache_pipe::INFO,
            WorkType::FutexFanOut(_) => fan_out_types::FUTEX_FAN_OUT,
            WorkType::FanOutCompute(_) => fan_out_types::FAN_OUT_COMPUTE,
            WorkType::AffinityChurn(_) => churn::AFFINITY_CHURN,
            WorkType::PolicyChurn(_) => churn::POLICY_CHURN,
            WorkType::NiceSweep(_) => churn::NICE_SWEEP,
            WorkType::MutexContention(_) => locks::MUTEX_CONTENTION,
            WorkType::PageFaultChurn(_) => page_fault_churn::INFO,
            WorkType::IoRandRead(_) => io_mix::IO_RAND_READ,
            WorkType::IoConvoy(_) => io_mix::IO_CONVOY,
            WorkType::ForkExit(_) => fork_exit::INFO,
            WorkType::Sequence(_) => sequence::INFO,
            WorkType::TimerLatency(_) => timer_latency::INFO,
            WorkType::WakeChain(_) => wake_chain::INFO,
            WorkType::ThunderingHerd(_) => fan_out_types::THUNDERING_HERD,
            WorkType::PriorityInversion(_) => locks::PRIORITY_INVERSION,
            WorkType::IdleChurn(_) => idle_churn::INFO,
        }
    }

    /// The type's name.
    pub fn name(&self) -> &'static str {
        self.info().name
    }

    /// Looks a type up by name (case-insensitive), with its defaults.
    pub fn from_name(name: &str) -> Result<WorkType, WorkTypeError> {
        let all = Self::all_defaults();
        if let Some(t) = all.iter().find(|t| t.name().eq_ignore_ascii_case(name)) {
            return Ok(t.clone());
        }
        let max_edits = name.len().max(3) / 2 + 1;
        let suggestion = closest(name, all.iter().map(|t| t.name()), max_edits).map(str::to_string);
        Err(WorkTypeError::Unknown {
            name: name.to_string(),
            suggestion,
        })
    }

    /// Returns a copy with `key=value` parameters overridden. Values are
    /// parsed as JSON numbers/booleans when they look like one.
    pub fn with_params(&self, params: &[(String, String)]) -> Result<WorkType, WorkTypeError> {
        let bad = |reason: String| WorkTypeError::BadParam {
            work_type: self.name().to_string(),
            reason,
        };
        let mut value = serde_json::to_value(self).map_err(|e| bad(e.to_string()))?;
        let obj = value
            .as_object_mut()
            .ok_or_else(|| bad("not an object".into()))?;
        for (key, raw) in params {
            if key == "type" || !obj.contains_key(key) {
                let known: Vec<_> = obj.keys().filter(|k| *k != "type").cloned().collect();
                let known = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                return Err(bad(format!(
                    "unknown parameter {key:?} (parameters: {known})"
                )));
            }
            let parsed = serde_json::from_str(raw)
                .unwrap_or_else(|_| serde_json::Value::String(raw.clone()));
            obj.insert(key.clone(), parsed);
        }
        let out: WorkType = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        out.validate_params().map_err(bad)?;
        Ok(out)
    }

    /// Checks parameter values that serde cannot (ranges).
    pub fn validate_params(&self) -> Result<(), String> {
        match self {
            WorkType::CachePressure(p) | WorkType::CacheYield(p) => p.validate(),
            WorkType::Bursty(p) => p.validate(),
            WorkType::CachePipe(p) => p.validate(),
            WorkType::FanOutCompute(p) => p.validate(),
            WorkType::NiceSweep(p) => p.validate(),
            WorkType::PageFaultChurn(p) => p.validate(),
            WorkType::IoRandRead(p) | WorkType::IoConvoy(p) => p.validate(),
            WorkType::Sequence(p) => p.validate(),
            WorkType::TimerLatency(p) => p.validate(),
            WorkType::IdleChurn(p) => p.validate(),
            _ => Ok(()),
        }
    }

    /// Checks that `workers` suits this type.
    pub fn validate_workers(&self, workers: usize) -> Result<(), WorkTypeError> {
        let info = self.info();
        let fits = match self {
            WorkType::PipeIo(_) | WorkType::FutexPingPong(_) | WorkType::CachePipe(_) => {
                workers % 2 == 0
            }
            WorkType::FutexFanOut(_)
            | WorkType::FanOutCompute(_)
            | WorkType::ThunderingHerd(_)
            | WorkType::WakeChain(_) => workers >= 2,
            WorkType::PriorityInversion(_) => workers % 3 == 0,
            _ => true,
        };
        if workers == 0 || !fits {
            return Err(WorkTypeError::BadWorkerCount {
                work_type: info.name.to_string(),
                rule: info.workers.unwrap_or("at least 1 worker"),
                workers,
            });
        }
        Ok(())
    }

    /// Builds the group's shared resources for `workers` workers (parent
    /// side, before fork).
    pub fn prepare(&self, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
        match self {
            WorkType::SpinWait(p) => Ok(spin_wait::prepare(p)),
            WorkType::YieldHeavy(p) => Ok(yield_heavy::prepare(p)),
            WorkType::Mixed(p) => Ok(mixed::prepare(p)),
            WorkType::Bursty(p) => Ok(bursty::prepare(p)),
            WorkType::PipeIo(p) => pipe_io::prepare(p, workers),
            WorkType::FutexPingPong(p) => futex_ping_pong::prepare(p, workers),
            WorkType::CachePressure(p) => Ok(cache_pressure::prepare(p)),
            WorkType::IoSyncWrite(p) => Ok(io_sync_write::prepare(p)),
            WorkType::CacheYield(p) => Ok(cache_yield::prepare(p)),
            WorkType::CachePipe(p) => cache_pipe::prepare(p, workers),
            WorkType::FutexFanOut(p) => fan_out_types::prepare_futex_fan_out(p, workers),
            WorkType::FanOutCompute(p) => fan_out_types::prepare_fan_out_compute(p, workers),
            WorkType::AffinityChurn(p) => Ok(churn::prepare_affinity(p)),
            WorkType::PolicyChurn(p) => Ok(churn::prepare_policy(p)),
            WorkType::NiceSweep(p) => Ok(churn::prepare_nice(p)),
            WorkType::MutexContention(p) => locks::prepare_mutex(p),
            WorkType::PageFaultChurn(p) => Ok(page_fault_churn::prepare(p)),
            WorkType::IoRandRead(p) => io_mix::prepare_rand_read(p, workers),
            WorkType::IoConvoy(p) => io_mix::prepare_convoy(p),
            WorkType::ForkExit(p) => Ok(fork_exit::prepare(p)),
            WorkType::Sequence(p) => Ok(sequence::prepare(p)),
            WorkType::TimerLatency(p) => Ok(timer_latency::prepare(p)),
            WorkType::WakeChain(p) => wake_chain::prepare(p, workers),
            WorkType::ThunderingHerd(p) => fan_out_types::prepare_thundering_herd(p, workers),
            WorkType::PriorityInversion(p) => locks::prepare_inversion(p, workers),
            WorkType::IdleChurn(p) => Ok(idle_churn::prepare(p)),
        }
    }
}

/// `sched_yield()`, recorded as a wake sample.
#[inline]
fn timed_yield(tel: &mut Telemetry) {
    let t0 = runq_kernel::clock::monotonic_ns();
    // SAFETY: no preconditions.
    unsafe { libc::sched_yield() };
    tel.record_wake(since(t0));
}

/// Nanoseconds elapsed since `start_ns` (CLOCK_MONOTONIC).
#[inline]
fn since(start_ns: u64) -> u64 {
    runq_kernel::clock::monotonic_ns().saturating_sub(start_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let all = WorkType::all_defaults();
        for t in &all {
            // Any case finds the very same type, with its defaults.
            assert_eq!(&WorkType::from_name(&t.name().to_lowercase()).unwrap(), t);
            assert_eq!(&WorkType::from_name(&t.name().to_uppercase()).unwrap(), t);
            // The scenario-file tag is the listed name.
            let tagged = serde_json::to_value(t).unwrap();
            assert_eq!(tagged["type"], t.name(), "{tagged}");
        }
        let mut names: Vec<_> = all.iter().map(|t| t.name().to_lowercase()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "a name is listed twice");
    }

    #[test]
    fn unknown_name_suggests_nearest() {
        let err = WorkType::from_name("PipeIO2").unwrap_err();
        assert!(err.to_string().contains("did you mean PipeIo?"), "{err}");
        let err = WorkType::from_name("zzzzzzzzzzzzzz").unwrap_err();
        assert!(!err.to_string().contains("did you mean"), "{err}");
    }

    #[test]
    fn params_override_and_reject() {
        let t = WorkType::from_name("PipeIo").unwrap();
        let t2 = t
            .with_params(&[("burst_iters".into(), "0".into())])
            .unwrap();
        assert_eq!(t2, WorkType::PipeIo(pipe_io::Params { burst_iters: 0 }));
        let err = t.with_params(&[("burst".into(), "0".into())]).unwrap_err();
        assert!(err.to_string().contains("burst_iters"), "{err}");
        assert!(t
            .with_params(&[("burst_iters".into(), "-1".into())])
            .is_err());
    }

    #[test]
    fn serde_uses_type_tag_and_defaults() {
        let t: WorkType = serde_json::from_str(r#"{"type":"Bursty","burst_ms":7}"#).unwrap();
        assert_eq!(
            t,
            WorkType::Bursty(bursty::Params {
                burst_ms: 7,
                ..Default::default()
            })
        );
        assert!(serde_json::from_str::<WorkType>(r#"{"type":"Bursty","bogus":7}"#).is_err());
    }

    #[test]
    fn pairs_need_even_counts() {
        let t = WorkType::from_name("FutexPingPong").unwrap();
        assert!(t.validate_workers(3).is_err());
        assert!(t.validate_workers(4).is_ok());
        assert!(WorkType::from_name("SpinWait")
            .unwrap()
            .validate_workers(0)
            .is_err());
    }
}
