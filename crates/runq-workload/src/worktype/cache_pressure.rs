//! CachePressure: strided read-modify-writes over a private buffer.

use std::hint::black_box;

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::{Telemetry, CHUNK_UNITS};

/// CachePressure parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Buffer size in KiB.
    pub size_kb: u64,
    /// Bytes between consecutive touches.
    pub stride: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            size_kb: 32,
            stride: 64,
        }
    }
}

/// Read-modify-write steps per iteration.
pub const STEPS: u64 = 1024;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "CachePressure",
    summary: "strided read-modify-writes over a size_kb buffer, pressuring caches",
    units: "one unit per RMW step (1024 per iteration); checkpoint every iteration",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[
        super::ranges::ParamRange::new("size_kb", 1, super::ranges::MAX_KB),
        super::ranges::ParamRange::new("stride", 1, 1 << 30),
    ],
    needs: super::HostNeed::Nothing,
};

/// A buffer walked with a stride; shared with CacheYield/CachePipe later.
pub struct StridedBuffer {
    buf: Vec<u8>,
    stride: usize,
    pos: usize,
}

impl StridedBuffer {
    /// Allocates and touches the buffer.
    pub fn new(p: &Params) -> Self {
        let len = usize::try_from(p.size_kb.max(1) * 1024).unwrap_or(32 * 1024);
        // Reduced modulo the length so one subtraction keeps `pos` in range.
        let stride = usize::try_from(p.stride % len as u64).unwrap_or(0);
        StridedBuffer {
            buf: vec![0; len],
            stride,
            pos: 0,
        }
    }

    /// Does `steps` strided RMW steps; returns `steps`.
    #[inline]
    pub fn walk(&mut self, steps: u64) -> u64 {
        let len = self.buf.len();
        for _ in 0..steps {
            self.pos += self.stride;
            if self.pos >= len {
                self.pos -= len;
            }
            let b = &mut self.buf[self.pos];
            *b = black_box(b.wrapping_mul(3).wrapping_add(1));
        }
        steps
    }
}

impl WorkerBody for StridedBuffer {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        tel.work_in_chunks(STEPS, CHUNK_UNITS, |k| self.walk(k))
    }
}

/// Builds the per-worker bodies.
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let p = p.clone();
    independent(move |_| Ok(Box::new(StridedBuffer::new(&p))))
}
