//! The registry of work types: one entry per type declares its variant
//! and parameters, its description (name, units, wake point, worker rule),
//! its parameter check and how it prepares a group. [`WorkType`] and every
//! per-type dispatch are generated from these entries, so adding a type
//! means adding its module and one entry here.

use std::io;

use serde::{Deserialize, Serialize};

use super::{
    alu, bursty, cache_pipe, cache_pressure, cache_yield, cgroup_attach_storm, cgroup_churn, churn,
    cross_affinity, epoll_storm, fan_out_types, fork_exit, futex_ping_pong, idle_churn, io_mix,
    io_sync_write, irq_wake, locks, mixed, net_traffic, numa, page_fault_churn, pipe_io, preempt,
    producer_consumer, request_rate, schbench, sequence, signal_storm, smt, spin_wait, taobench,
    timer_latency, wake_chain, yield_heavy, PreparedWork, SpinParams, TypeInfo,
};

/// Builds a group's shared resources from the parameters and the worker
/// count (parent side, before fork).
type Prepare<P> = fn(&P, usize) -> io::Result<Box<dyn PreparedWork>>;

/// Checks rules across parameters that a range alone cannot state.
type Check<P> = fn(&P) -> Result<(), String>;

/// The check of a type whose ranges say all there is to check.
fn no_check<P>(_: &P) -> Result<(), String> {
    Ok(())
}

/// Declares [`WorkType`] and its per-type dispatch from the entries.
macro_rules! work_types {
    ($(
        $(#[$doc:meta])*
        $variant:ident($params:ty) {
            info: $info:expr,
            check: $check:expr,
            prepare: $prepare:expr $(,)?
        }
    )*) => {
        /// The work types and their parameters. Serialized with a `type`
        /// tag, so a scenario can say `{ type = "PipeIo", burst_iters = 0 }`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        pub enum WorkType {
            $($(#[$doc])* $variant($params),)*
        }

        impl WorkType {
            /// Every work type with its default parameters.
            pub fn all_defaults() -> Vec<WorkType> {
                vec![$(WorkType::$variant(<$params>::default())),*]
            }

            /// Static description of this type.
            pub fn info(&self) -> TypeInfo {
                match self {
                    $(WorkType::$variant(_) => $info,)*
                }
            }

            /// Checks parameter values that serde cannot: each numeric
            /// parameter against its stated range, then the type's own
            /// rules across parameters.
            pub fn validate_params(&self) -> Result<(), String> {
                let doc = serde_json::to_value(self).map_err(|e| e.to_string())?;
                super::ranges::check_ranges(self.info().params, &doc)?;
                match self {
                    $(WorkType::$variant(p) => {
                        let check: Check<$params> = $check;
                        check(p)
                    })*
                }
            }

            /// Builds the group's shared resources for `workers` workers
            /// (parent side, before fork).
            pub(crate) fn prepare(&self, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
                match self {
                    $(WorkType::$variant(p) => {
                        let prepare: Prepare<$params> = $prepare;
                        prepare(p, workers)
                    })*
                }
            }
        }
    };
}

work_types! {
    /// Pure CPU: a spin burst per iteration.
    SpinWait(SpinParams) {
        info: spin_wait::INFO,
        check: no_check,
        prepare: |p, _| Ok(spin_wait::prepare(p)),
    }
    /// `sched_yield()` in a loop, one unit per yield.
    YieldHeavy(yield_heavy::Params) {
        info: yield_heavy::INFO,
        check: no_check,
        prepare: |p, _| Ok(yield_heavy::prepare(p)),
    }
    /// A spin burst followed by a yield.
    Mixed(SpinParams) {
        info: mixed::INFO,
        check: no_check,
        prepare: |p, _| Ok(mixed::prepare(p)),
    }
    /// Spin for `burst_ms`, sleep for `sleep_ms`.
    Bursty(bursty::Params) {
        info: bursty::INFO,
        check: no_check,
        prepare: |p, _| Ok(bursty::prepare(p)),
    }
    /// Pairs of workers ping-ponging a byte over pipes.
    PipeIo(pipe_io::Params) {
        info: pipe_io::INFO,
        check: no_check,
        prepare: pipe_io::prepare,
    }
    /// Pairs of workers alternating turns on a shared futex.
    FutexPingPong(SpinParams) {
        info: futex_ping_pong::INFO,
        check: no_check,
        prepare: futex_ping_pong::prepare,
    }
    /// Strided read-modify-writes over a buffer.
    CachePressure(cache_pressure::Params) {
        info: cache_pressure::INFO,
        check: no_check,
        prepare: |p, _| Ok(cache_pressure::prepare(p)),
    }
    /// 4 KiB writes and `fdatasync` to a private temporary file.
    IoSyncWrite(io_sync_write::Params) {
        info: io_sync_write::INFO,
        check: no_check,
        prepare: |p, _| io_sync_write::prepare(p),
    }
    /// The CachePressure walk, then a yield.
    CacheYield(cache_pressure::Params) {
        info: cache_yield::INFO,
        check: no_check,
        prepare: |p, _| Ok(cache_yield::prepare(p)),
    }
    /// Pipe ping-pong pairs with a cache walk between trips.
    CachePipe(cache_pipe::Params) {
        info: cache_pipe::INFO,
        check: no_check,
        prepare: cache_pipe::prepare,
    }
    /// One messenger wakes all receivers on a futex.
    FutexFanOut(SpinParams) {
        info: fan_out_types::FUTEX_FAN_OUT,
        check: no_check,
        prepare: fan_out_types::prepare_futex_fan_out,
    }
    /// A messenger timestamps and wakes workers that do matrix multiplies.
    FanOutCompute(fan_out_types::FanOutComputeParams) {
        info: fan_out_types::FAN_OUT_COMPUTE,
        check: no_check,
        prepare: fan_out_types::prepare_fan_out_compute,
    }
    /// Re-pins itself to a random allowed CPU each iteration.
    AffinityChurn(SpinParams) {
        info: churn::AFFINITY_CHURN,
        check: no_check,
        prepare: |p, _| Ok(churn::prepare_affinity(p)),
    }
    /// Cycles its scheduling policy each iteration.
    PolicyChurn(SpinParams) {
        info: churn::POLICY_CHURN,
        check: no_check,
        prepare: |p, _| Ok(churn::prepare_policy(p)),
    }
    /// Steps its nice value each iteration.
    NiceSweep(churn::NiceSweepParams) {
        info: churn::NICE_SWEEP,
        check: churn::NiceSweepParams::validate,
        prepare: |p, _| Ok(churn::prepare_nice(p)),
    }
    /// Workers contend for one shared futex mutex.
    MutexContention(locks::MutexParams) {
        info: locks::MUTEX_CONTENTION,
        check: no_check,
        prepare: |p, _| locks::prepare_mutex(p),
    }
    /// MADV_DONTNEED and re-fault a private region.
    PageFaultChurn(page_fault_churn::Params) {
        info: page_fault_churn::INFO,
        check: no_check,
        prepare: |p, _| Ok(page_fault_churn::prepare(p)),
    }
    /// Random reads from a private file with its cache dropped.
    IoRandRead(io_mix::Params) {
        info: io_mix::IO_RAND_READ,
        check: no_check,
        prepare: io_mix::prepare_rand_read,
    }
    /// Writes and fdatasync to one shared file.
    IoConvoy(io_mix::Params) {
        info: io_mix::IO_CONVOY,
        check: no_check,
        prepare: |p, _| io_mix::prepare_convoy(p),
    }
    /// fork() + _exit() + waitpid() in a loop.
    ForkExit(fork_exit::Params) {
        info: fork_exit::INFO,
        check: no_check,
        prepare: |p, _| Ok(fork_exit::prepare(p)),
    }
    /// Timed phases of spin, sleep, yield and I/O.
    Sequence(sequence::Params) {
        info: sequence::INFO,
        check: sequence::Params::validate,
        prepare: |p, _| Ok(sequence::prepare(p)),
    }
    /// Absolute-deadline periodic wakeups (cyclictest).
    TimerLatency(timer_latency::Params) {
        info: timer_latency::INFO,
        check: no_check,
        prepare: |p, _| Ok(timer_latency::prepare(p)),
    }
    /// A ring of workers passing a token (futex or pipe wakeups).
    WakeChain(wake_chain::Params) {
        info: wake_chain::INFO,
        check: no_check,
        prepare: wake_chain::prepare,
    }
    /// Many waiters woken at once.
    ThunderingHerd(fan_out_types::ThunderingHerdParams) {
        info: fan_out_types::THUNDERING_HERD,
        check: no_check,
        prepare: fan_out_types::prepare_thundering_herd,
    }
    /// Low/medium/high triples around a lock, plain or PI.
    PriorityInversion(locks::InversionParams) {
        info: locks::PRIORITY_INVERSION,
        check: no_check,
        prepare: locks::prepare_inversion,
    }
    /// Microsecond bursts and sleeps.
    IdleChurn(idle_churn::Params) {
        info: idle_churn::INFO,
        check: no_check,
        prepare: |p, _| Ok(idle_churn::prepare(p)),
    }
    /// Register-only integer and FP arithmetic (high IPC).
    AluHot(alu::AluParams) {
        info: alu::ALU_HOT,
        check: no_check,
        prepare: |p, _| Ok(alu::prepare_alu(p)),
    }
    /// Phases of high-IPC arithmetic and low-IPC pointer chasing.
    IpcVariance(alu::IpcParams) {
        info: alu::IPC_VARIANCE,
        check: no_check,
        prepare: alu::prepare_ipc,
    }
    /// Re-pins itself to a random subset of all online CPUs.
    CrossAffinityChurn(SpinParams) {
        info: cross_affinity::INFO,
        check: no_check,
        prepare: |p, _| Ok(cross_affinity::prepare(p)),
    }
    /// A waker whose wakees do unequal work.
    AsymmetricWaker(SpinParams) {
        info: fan_out_types::ASYMMETRIC_WAKER,
        check: no_check,
        prepare: fan_out_types::prepare_asymmetric_waker,
    }
    /// A producer makes many eventfds ready; consumers drain them from epoll.
    EpollStorm(epoll_storm::Params) {
        info: epoll_storm::INFO,
        check: no_check,
        prepare: epoll_storm::prepare,
    }
    /// Fast producers and slow consumers over one bounded queue.
    ProducerConsumerImbalance(producer_consumer::Params) {
        info: producer_consumer::INFO,
        check: no_check,
        prepare: producer_consumer::prepare,
    }
    /// Pairs bouncing a real-time signal through sigtimedwait.
    SignalStorm(SpinParams) {
        info: signal_storm::INFO,
        check: no_check,
        prepare: signal_storm::prepare,
    }
    /// CPU hogs preempted by boosted short sleepers.
    PreemptStorm(preempt::PreemptParams) {
        info: preempt::PREEMPT_STORM,
        check: no_check,
        prepare: |p, _| Ok(preempt::prepare_preempt(p)),
    }
    /// SCHED_FIFO spinners starving SCHED_OTHER workers on one CPU.
    RtStarvation(preempt::RtParams) {
        info: preempt::RT_STARVATION,
        check: no_check,
        prepare: |p, _| preempt::prepare_rt(p),
    }
    /// Spinner pairs pinned onto the SMT siblings of one core.
    SmtSiblingSpin(SpinParams) {
        info: smt::INFO,
        check: no_check,
        prepare: |p, _| Ok(smt::prepare(p)),
    }
    /// Thread and pages moved to the next NUMA node every iteration.
    NumaMigrationChurn(numa::ChurnParams) {
        info: numa::MIGRATION_CHURN,
        check: no_check,
        prepare: |p, _| Ok(numa::prepare_churn(p)),
    }
    /// A working set walked while re-bound node by node.
    NumaWorkingSetSweep(numa::SweepParams) {
        info: numa::WORKING_SET_SWEEP,
        check: no_check,
        prepare: |p, _| Ok(numa::prepare_sweep(p)),
    }
    /// Open-loop requests at a fixed arrival rate.
    RequestRate(request_rate::Params) {
        info: request_rate::INFO,
        check: no_check,
        prepare: request_rate::prepare,
    }
    /// Moves itself round child cgroups of its group's cgroup.
    CgroupChurn(cgroup_churn::Params) {
        info: cgroup_churn::INFO,
        check: no_check,
        prepare: |p, _| Ok(cgroup_churn::prepare(p)),
    }
    /// schbench's model: a message thread waking worker threads that
    /// think, then compute under a per-CPU lock.
    Schbench(schbench::Params) {
        info: schbench::INFO,
        check: no_check,
        prepare: schbench::prepare,
    }
    /// taobench's model: clients posting small gets to cache servers,
    /// a miss waiting off CPU for the store, then setting the object.
    Taobench(taobench::Params) {
        info: taobench::INFO,
        check: taobench::check,
        prepare: taobench::prepare,
    }
    /// Pairs exchanging messages over TCP or UDP on loopback.
    NetTraffic(net_traffic::Params) {
        info: net_traffic::INFO,
        check: net_traffic::Params::validate,
        prepare: net_traffic::prepare,
    }
    /// A timerfd or an eventfd standing in for a device interrupt.
    IrqWake(irq_wake::Params) {
        info: irq_wake::INFO,
        check: no_check,
        prepare: irq_wake::prepare,
    }
    /// Moves child tasks round cgroups it made, at a rate.
    CgroupAttachStorm(cgroup_attach_storm::Params) {
        info: cgroup_attach_storm::INFO,
        check: no_check,
        prepare: |p, _| Ok(cgroup_attach_storm::prepare(p)),
    }
}
