//! CachePipe: PipeIo pairs whose burst between round trips is a strided
//! cache walk instead of a spin, so each wakeup lands on a task whose
//! working set may have gone cold.

use std::io;

use serde::{Deserialize, Serialize};

use super::cache_pressure;
use super::pipe_io::{prepare_pairs, BurstSpec};
use super::{PreparedWork, TypeInfo};

/// CachePipe parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// RMW steps before each write.
    pub burst_iters: u64,
    /// Buffer size per worker, KiB.
    pub size_kb: u64,
    /// Bytes between consecutive steps.
    pub stride: u64,
}

impl Default for Params {
    fn default() -> Self {
        let cache = cache_pressure::Params::default();
        Params {
            burst_iters: 1024,
            size_kb: cache.size_kb,
            stride: cache.stride,
        }
    }
}

impl Params {
    fn cache(&self) -> cache_pressure::Params {
        cache_pressure::Params {
            size_kb: self.size_kb,
            stride: self.stride,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "CachePipe",
    summary:
        "pairs ping-pong a byte over pipes after a strided cache walk (wakeups onto cold caches)",
    units: "burst_iters RMW steps per round trip; checkpoint every iteration at the default 1024",
    wakes: Some(
        "pipe read that blocked: from the writer's stamp, taken just before its write, to running again",
    ),
    workers: super::WorkerRule::PAIRS,
    wake_figure: super::WakeFigure::Latency,
    params: &[
        super::ranges::ParamRange::new("burst_iters", 0, super::ranges::MAX_ITERS),
        super::ranges::ParamRange::new("size_kb", 1, super::ranges::MAX_KB),
        super::ranges::ParamRange::new("stride", 1, 1 << 30),
    ],
    needs: super::HostNeed::Nothing,
};

/// Creates the pairs' pipes.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    prepare_pairs(BurstSpec::Cache(p.cache(), p.burst_iters), workers)
}
