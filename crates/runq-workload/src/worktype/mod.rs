//! Work types: what a worker does in each outer iteration.
//!
//! Each type is a small module with a `Params` struct (serde, with the
//! seed's defaults), a `prepare` function that builds any resource its
//! workers share (pipes, shared memory) in the parent before fork, and a
//! [`WorkerBody`] that runs one outer iteration in the child. The public
//! part is [`WorkType`], its parameter structs (one per variant) and its
//! static description ([`TypeInfo`]).

mod alu;
mod bursty;
mod cache_pipe;
mod cache_pressure;
mod cache_yield;
mod cgroup_attach_storm;
mod cgroup_churn;
mod churn;
mod cross_affinity;
mod epoll_storm;
mod fan_out;
mod fan_out_types;
mod figure;
mod fork_exit;
mod futex_lock;
mod futex_ping_pong;
mod idle_churn;
mod io_mix;
mod io_sync_write;
mod irq_wake;
pub(crate) mod locks;
mod mixed;
mod net_traffic;
mod numa;
mod page_fault_churn;
mod pipe_io;
mod preempt;
mod producer_consumer;
mod ranges;
mod registry;
mod request_rate;
mod schbench;
mod sequence;
mod signal_storm;
mod smt;
mod spin_wait;
mod taobench;
mod timer_latency;
mod wake_chain;
mod yield_heavy;

pub(crate) use figure::fine_timer_slack;
pub use figure::WakeFigure;
pub use ranges::ParamRange;
pub use registry::WorkType;

// Each variant's parameters, under the variant's name where the module
// calls them `Params`.
pub use alu::{AluParams, IpcParams};
pub use bursty::Params as BurstyParams;
pub use cache_pipe::Params as CachePipeParams;
pub use cache_pressure::Params as CachePressureParams;
pub use cgroup_attach_storm::Params as CgroupAttachStormParams;
pub use cgroup_churn::Params as CgroupChurnParams;
pub use churn::NiceSweepParams;
pub use epoll_storm::Params as EpollStormParams;
pub use fan_out_types::{FanOutComputeParams, ThunderingHerdParams};
pub use fork_exit::Params as ForkExitParams;
pub use idle_churn::Params as IdleChurnParams;
pub use io_mix::Params as IoMixParams;
pub use io_sync_write::Params as IoSyncWriteParams;
pub use irq_wake::{Params as IrqWakeParams, Source as IrqSource};
pub use locks::{InversionParams, MutexParams};
pub use net_traffic::{
    net_figures, Mode as NetMode, NetFigures, NetPath, Params as NetTrafficParams,
    Proto as NetProto,
};
pub use numa::{ChurnParams as NumaChurnParams, SweepParams as NumaSweepParams};
pub use page_fault_churn::Params as PageFaultChurnParams;
pub use pipe_io::Params as PipeIoParams;
pub use preempt::{PreemptParams, RtParams};
pub use producer_consumer::Params as ProducerConsumerParams;
pub use request_rate::Params as RequestRateParams;
pub use schbench::Params as SchbenchParams;
pub use sequence::{Params as SequenceParams, Phase, PhaseKind};
pub use taobench::{ops_figures as taobench_ops, OpsFigures, Params as TaobenchParams};
pub use timer_latency::Params as TimerLatencyParams;
pub use wake_chain::{Params as WakeChainParams, WakeMode};
pub use yield_heavy::Params as YieldHeavyParams;

use std::path::Path;
use std::{fmt, io};

use runq_common::closest;
use serde::{Deserialize, Serialize};

use crate::telemetry::Telemetry;

/// One outer iteration of a worker's loop, run in the child.
pub(crate) trait WorkerBody {
    /// Runs one iteration and returns the work units it did. Records wake
    /// latencies into `tel` where the type has a blocking step.
    ///
    /// Implementations are marked `#[inline(always)]` so that the loop in
    /// [`Self::run_until_stop`] has no frame of its own per iteration: a
    /// worker that blocks inside `iterate` resumes after a context switch,
    /// when the kernel has refilled the return stack buffer (the RSB
    /// filling mitigation), so every return through a frame that was live
    /// across the switch is mispredicted, and the callee's code is cold.
    /// Left to the compiler, `iterate` was a separate call: FutexPingPong
    /// measured 0.93-0.97 of its bare floor that way and 0.97-1.02 inlined.
    fn iterate(&mut self, tel: &mut Telemetry) -> u64;

    /// True for a fan-out messenger.
    fn is_messenger(&self) -> bool {
        false
    }

    /// The worker's role in its group (see `WorkerReport::role`).
    fn role(&self) -> u8 {
        u8::from(self.is_messenger())
    }

    /// The index (within its group) of a partner this worker lost: its
    /// end of their pipes closed while the run went on. The work loop
    /// stops this worker once it is set.
    fn partner_lost(&self) -> Option<usize> {
        None
    }

    /// Open-loop types: the requests due and not yet taken when the run
    /// stopped (see `WorkerReport::backlog`).
    fn backlog(&self) -> Option<u64> {
        None
    }

    /// Why the worker could not do what its type promises (e.g. a
    /// CgroupChurn worker in no cgroup); reported like a setup failure,
    /// which the `setup_applied` check counts.
    fn setup_error(&self) -> Option<String> {
        None
    }

    /// The framework loop for this type: [`Self::iterate`] until STOP or
    /// a lost partner. Not to be overridden; being a
    /// provided method, it is compiled once per work type, with that
    /// type's `iterate` (and [`Telemetry::end_iteration`]) inlined.
    fn run_until_stop(&mut self, tel: &mut Telemetry) {
        iterate_until_stop(self, tel);
    }
}

/// The iterations themselves, until STOP or a lost partner (the watchdog
/// runs inside [`Telemetry`]). Generic, so each work type gets its own
/// copy with `iterate` inlined (see [`WorkerBody::run_until_stop`]): no
/// indirect call and no return to mispredict per iteration.
#[inline(always)]
fn iterate_until_stop<B: WorkerBody + ?Sized>(body: &mut B, tel: &mut Telemetry) {
    while !crate::stop::stop_requested() {
        let units = body.iterate(tel);
        tel.end_iteration(units);
        if body.partner_lost().is_some() {
            break;
        }
    }
}

/// Resources of one group, made before fork and split between workers.
pub(crate) trait PreparedWork {
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
/// PolicyChurn).
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
    /// Which worker counts the type accepts.
    pub workers: WorkerRule,
    /// What the wake samples measure, so reports can name the figure.
    pub wake_figure: WakeFigure,
    /// The valid range of each numeric parameter.
    pub params: &'static [ParamRange],
    /// What the host must have for the type to run as designed.
    pub needs: HostNeed,
}

/// A host feature a work type cannot run without. On a host that lacks it
/// the run is skipped with a reason, never run as something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostNeed {
    /// Runs anywhere.
    Nothing,
    /// Two or more online hardware threads sharing a core.
    Smt,
    /// Two or more online NUMA nodes.
    Numa,
}

impl HostNeed {
    /// Why a host whose sysfs is at `sys_root` cannot run a type named
    /// `name`, or `None` when it can.
    pub fn lacking(self, name: &str, sys_root: &Path) -> Option<String> {
        use runq_kernel::topology::{numa_nodes, smt_sibling_sets};
        match self {
            HostNeed::Nothing => None,
            HostNeed::Smt => {
                let online = runq_kernel::cpulist::online_cpus();
                smt_sibling_sets(sys_root, &online).is_empty().then(|| {
                    format!(
                        "{name} needs SMT siblings (two hardware threads of one core online); \
                         this host has none"
                    )
                })
            }
            HostNeed::Numa => {
                let nodes = numa_nodes(sys_root).len();
                (nodes < 2)
                    .then(|| format!("{name} needs at least 2 NUMA nodes; this host has {nodes}"))
            }
        }
    }
}

/// How many workers a type's group may have. [`WorkType::validate_workers`]
/// applies it, and its text is what `--explain`, `--list --json` and the
/// worker-count error print, so the check and its description agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerRule {
    /// Any count of at least 1.
    Any,
    /// A positive multiple of `n` workers.
    MultipleOf {
        /// The size of one set.
        n: usize,
        /// What the workers of a set are, e.g. "pairs".
        roles: &'static str,
    },
    /// At least `n` workers.
    AtLeast {
        /// The least count.
        n: usize,
        /// Why, e.g. "the ring".
        roles: &'static str,
    },
}

impl WorkerRule {
    /// Workers that come in pairs.
    pub const PAIRS: WorkerRule = WorkerRule::MultipleOf {
        n: 2,
        roles: "pairs",
    };

    /// Whether a group of `workers` satisfies the rule (0 never does).
    pub fn allows(self, workers: usize) -> bool {
        workers > 0
            && match self {
                WorkerRule::Any => true,
                WorkerRule::MultipleOf { n, .. } => workers % n == 0,
                WorkerRule::AtLeast { n, .. } => workers >= n,
            }
    }

    /// The rule as listings print it; `None` for [`WorkerRule::Any`].
    pub fn describe(self) -> Option<String> {
        (self != WorkerRule::Any).then(|| self.to_string())
    }
}

impl fmt::Display for WorkerRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WorkerRule::Any => f.write_str("at least 1 worker"),
            WorkerRule::MultipleOf { n: 2, roles } => {
                write!(f, "an even number of workers ({roles})")
            }
            WorkerRule::MultipleOf { n, roles } => write!(f, "a multiple of {n} workers ({roles})"),
            WorkerRule::AtLeast { n, roles } => write!(f, "at least {n} workers ({roles})"),
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
        rule: WorkerRule,
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
            if let Some(why) = self.value_mismatch(key, &obj[key], &parsed) {
                return Err(bad(format!("{key}={raw}: {why}")));
            }
            obj.insert(key.clone(), parsed);
        }
        let out: WorkType = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        out.validate_params().map_err(bad)?;
        Ok(out)
    }

    /// Why `given` cannot replace the parameter `key` whose default is
    /// `default`: a number where a number is expected, in its range.
    fn value_mismatch(
        &self,
        key: &str,
        default: &serde_json::Value,
        given: &serde_json::Value,
    ) -> Option<String> {
        let range = self.info().params.iter().find(|r| r.name == key);
        let span = range.map_or(String::new(), |r| format!(" from {} to {}", r.min, r.max));
        match default {
            serde_json::Value::Number(_) if default.is_u64() && !given.is_u64() => {
                Some(format!("expected a whole number{span}"))
            }
            serde_json::Value::Number(_) if !given.is_number() => {
                Some(format!("expected a number{span}"))
            }
            serde_json::Value::Bool(_) if !given.is_boolean() => {
                Some("expected true or false".into())
            }
            _ => None,
        }
    }

    /// True for the types that make child cgroups under their group's
    /// cgroup (CgroupChurn, CgroupAttachStorm): a group of them needs a
    /// cgroup of its own.
    pub fn needs_own_cgroup(&self) -> bool {
        matches!(
            self,
            WorkType::CgroupChurn(_) | WorkType::CgroupAttachStorm(_)
        )
    }

    /// The memory a group of `workers` of this type maps for its buffers,
    /// with the parameter that sets it: per-worker cache buffers, and
    /// IpcVariance's one shared chase buffer (0 for the other types).
    pub fn buffer_bytes(&self, workers: usize) -> (u64, &'static str) {
        let per_worker = |kb: u64| kb.saturating_mul(1024).saturating_mul(workers as u64);
        match self {
            WorkType::CachePressure(p) | WorkType::CacheYield(p) => {
                (per_worker(p.size_kb), "size_kb")
            }
            WorkType::CachePipe(p) => (per_worker(p.size_kb), "size_kb"),
            WorkType::IpcVariance(p) => (p.buffer_kb.saturating_mul(1024), "buffer_kb"),
            _ => (0, ""),
        }
    }

    /// The disk space a group of `workers` of this type fills in the
    /// temporary directory: IoRandRead's file per worker, filled before
    /// the start, IoSyncWrite's per worker and IoConvoy's shared one.
    pub fn file_bytes(&self, workers: usize) -> u64 {
        match self {
            WorkType::IoRandRead(p) => p
                .file_kb
                .saturating_mul(1024)
                .saturating_mul(workers as u64),
            WorkType::IoConvoy(p) => p.file_kb.saturating_mul(1024),
            WorkType::IoSyncWrite(p) => p
                .file_kb
                .saturating_mul(1024)
                .saturating_mul(workers as u64),
            _ => 0,
        }
    }

    /// Why this host cannot run the type with these parameters, beyond
    /// its type's topology ([`HostNeed`]): the NIC pair of `--vm-net` for
    /// NetTraffic's `path = nic` and IrqWake's `source = nic`.
    pub fn params_lacking(&self) -> Option<String> {
        match self {
            WorkType::NetTraffic(p) if p.path == net_traffic::NetPath::Nic => {
                runq_kernel::netns::nic_pair_lacking("NetTraffic path=nic")
            }
            WorkType::IrqWake(p) if p.source == irq_wake::Source::Nic => {
                runq_kernel::netns::nic_pair_lacking("IrqWake source=nic")
            }
            _ => None,
        }
    }

    /// The rules between the worker count and the parameters are checked
    /// too (ProducerConsumerImbalance needs a consumer), before the run.
    pub fn validate_workers(&self, workers: usize) -> Result<(), WorkTypeError> {
        let info = self.info();
        if !info.workers.allows(workers) {
            return Err(WorkTypeError::BadWorkerCount {
                work_type: info.name.to_string(),
                rule: info.workers,
                workers,
            });
        }
        match self {
            WorkType::ProducerConsumerImbalance(p) => producer_consumer::check_workers(p, workers)
                .map_err(|reason| WorkTypeError::BadParam {
                    work_type: info.name.to_string(),
                    reason,
                }),
            WorkType::IrqWake(p) => {
                irq_wake::check_workers(p, workers).map_err(|reason| WorkTypeError::BadParam {
                    work_type: info.name.to_string(),
                    reason,
                })
            }
            _ => Ok(()),
        }
    }
}

/// `sched_yield()`, recorded as a wake sample.
#[inline]
fn timed_yield(tel: &mut Telemetry) {
    let t0 = runq_kernel::clock::fast::now_ns();
    // SAFETY: no preconditions.
    unsafe { libc::sched_yield() };
    tel.record_wake(since(t0));
}

/// Nanoseconds elapsed since `start_ns` (a reading of the work loops'
/// clock, [`runq_kernel::clock::fast`]).
#[inline]
fn since(start_ns: u64) -> u64 {
    runq_kernel::clock::fast::now_ns().saturating_sub(start_ns)
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
        let err = t
            .with_params(&[("burst_iters".into(), "-1".into())])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("burst_iters=-1: expected a whole number from 0 to"),
            "{err}"
        );
        let err = t
            .with_params(&[("burst_iters".into(), "abc".into())])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("burst_iters=abc: expected a whole number"),
            "{err}"
        );
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

    #[test]
    fn worker_rules_check_what_they_say() {
        let rule = |name: &str| WorkType::from_name(name).unwrap().info().workers;
        assert_eq!(rule("SpinWait"), WorkerRule::Any);
        assert_eq!(rule("SpinWait").describe(), None);
        assert_eq!(
            rule("PipeIo").describe().as_deref(),
            Some("an even number of workers (pairs)")
        );
        assert_eq!(
            rule("PriorityInversion").to_string(),
            "a multiple of 3 workers (low, medium, high)"
        );
        assert_eq!(
            rule("FutexFanOut").to_string(),
            "at least 2 workers (worker 0 is the messenger)"
        );
        let allowed = |r: WorkerRule| (0..8).filter(|&n| r.allows(n)).collect::<Vec<_>>();
        assert_eq!(allowed(rule("SpinWait")), [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(allowed(rule("CachePipe")), [2, 4, 6]);
        assert_eq!(allowed(rule("PriorityInversion")), [3, 6]);
        assert_eq!(allowed(rule("WakeChain")), [2, 3, 4, 5, 6, 7]);
        let err = WorkType::from_name("WakeChain")
            .unwrap()
            .validate_workers(1)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "WakeChain needs at least 2 workers (the ring), got 1 workers"
        );
        let err = WorkType::from_name("Mixed")
            .unwrap()
            .validate_workers(0)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Mixed needs at least 1 worker, got 0 workers"
        );
    }
}
