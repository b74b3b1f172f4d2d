//! The parameters and descriptions of the four fan-out work types built
//! on [`super::fan_out`].

use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fan_out::{self, FanOutSpec, MessengerStep, ReceiverStep};
use super::{PreparedWork, SpinParams, TypeInfo};

/// Rule shared by the fan-out types.
const ONE_PLUS_RECEIVERS: super::WorkerRule = super::WorkerRule::AtLeast {
    n: 2,
    roles: "worker 0 is the messenger",
};

/// FutexFanOut description.
pub const FUTEX_FAN_OUT: TypeInfo = TypeInfo {
    name: "FutexFanOut",
    summary: "one messenger wakes every receiver with a single FUTEX_WAKE per cycle",
    units: "spin_iters units per cycle for messenger and receivers; checkpoint every iteration",
    wakes: Some(
        "receivers only, when a wake ended their wait: from the messenger's stamp, taken just before its FUTEX_WAKE, to running again",
    ),
    workers: ONE_PLUS_RECEIVERS,
    wake_figure: super::WakeFigure::Latency,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// Builds a FutexFanOut group.
pub fn prepare_futex_fan_out(p: &SpinParams, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    fan_out::prepare(
        FanOutSpec {
            messenger: MessengerStep::Spin(p.spin_iters),
            receiver: ReceiverStep::SpinFirst(p.spin_iters),
        },
        workers,
    )
}

/// FanOutCompute parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FanOutComputeParams {
    /// Matrix multiplies each worker does per wake.
    pub operations: u64,
    /// Matrix dimension (n x n doubles).
    pub matrix_size: usize,
    /// Spin units the messenger does per cycle.
    pub messenger_spin_iters: u64,
}

impl Default for FanOutComputeParams {
    fn default() -> Self {
        FanOutComputeParams {
            operations: 5,
            matrix_size: 32,
            messenger_spin_iters: 256,
        }
    }
}

/// FanOutCompute description.
pub const FAN_OUT_COMPUTE: TypeInfo = TypeInfo {
    name: "FanOutCompute",
    summary: "a messenger timestamps and wakes all workers, which then do matrix multiplies",
    units: "workers: one unit per multiply (checkpoint every 1024 iterations at 5 per wake); \
            messenger: 256 spin units per cycle (checkpoint every 4 iterations)",
    wakes: Some("workers only, when a wake ended their wait: from the messenger's stamp, taken just before its FUTEX_WAKE, to running again"),
    workers: ONE_PLUS_RECEIVERS,
    wake_figure: super::WakeFigure::Latency,
    params: &[
        super::ranges::ParamRange::new("operations", 1, 1000000),
        super::ranges::ParamRange::new("matrix_size", 1, 1024),
        super::ranges::ParamRange::new("messenger_spin_iters", 0, super::ranges::MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

/// Builds a FanOutCompute group.
pub fn prepare_fan_out_compute(
    p: &FanOutComputeParams,
    workers: usize,
) -> io::Result<Box<dyn PreparedWork>> {
    fan_out::prepare(
        FanOutSpec {
            messenger: MessengerStep::Spin(p.messenger_spin_iters),
            receiver: ReceiverStep::Matmul {
                ops: p.operations,
                size: p.matrix_size,
            },
        },
        workers,
    )
}

/// ThunderingHerd parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThunderingHerdParams {
    /// The waker's sleep between herds, µs.
    pub interval_us: u64,
    /// Spin units each waiter does once awake.
    pub spin_iters: u64,
}

impl Default for ThunderingHerdParams {
    fn default() -> Self {
        ThunderingHerdParams {
            interval_us: 1000,
            spin_iters: 1024,
        }
    }
}

/// ThunderingHerd description.
pub const THUNDERING_HERD: TypeInfo = TypeInfo {
    name: "ThunderingHerd",
    summary:
        "every waiter sleeps on one futex; a waker releases them all at once every interval_us",
    units: "waiters: spin_iters units per wake; the waker: one unit per herd",
    wakes: Some(
        "waiters, when a wake ended their wait: from the waker's pre-wake stamp to running again (the last of the herd shows the tail)",
    ),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "worker 0 is the waker",
    },
    wake_figure: super::WakeFigure::Latency,
    params: &[
        super::ranges::ParamRange::new("interval_us", 0, super::ranges::MAX_US),
        super::ranges::ParamRange::new("spin_iters", 0, super::ranges::MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

/// Builds a ThunderingHerd group.
pub fn prepare_thundering_herd(
    p: &ThunderingHerdParams,
    workers: usize,
) -> io::Result<Box<dyn PreparedWork>> {
    fan_out::prepare(
        FanOutSpec {
            messenger: MessengerStep::Sleep(Duration::from_micros(p.interval_us)),
            receiver: ReceiverStep::SpinAfter(p.spin_iters),
        },
        workers,
    )
}

/// AsymmetricWaker description.
pub const ASYMMETRIC_WAKER: TypeInfo = TypeInfo {
    name: "AsymmetricWaker",
    summary: "worker 0 spins spin_iters, then wakes every other worker with one FUTEX_WAKE; \
              wakee i then spins i x spin_iters, so the wakees' shares differ by design",
    units: "waker: spin_iters units per cycle; wakee i: i x spin_iters units per wake",
    wakes: Some(
        "wakees only, when a wake ended their wait: from the waker's pre-wake stamp to running again",
    ),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "worker 0 is the waker",
    },
    wake_figure: super::WakeFigure::Latency,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// Builds an AsymmetricWaker group.
pub fn prepare_asymmetric_waker(
    p: &SpinParams,
    workers: usize,
) -> io::Result<Box<dyn PreparedWork>> {
    fan_out::prepare(
        FanOutSpec {
            messenger: MessengerStep::Spin(p.spin_iters),
            receiver: ReceiverStep::SpinScaled(p.spin_iters),
        },
        workers,
    )
}
