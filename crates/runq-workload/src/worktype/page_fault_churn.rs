//! PageFaultChurn: one private anonymous region per worker, emptied with
//! `MADV_DONTNEED` every iteration and written again page by page, so each
//! first write is a minor fault (mm-side scheduler interactions).

use std::io;

use runq_kernel::mapping::AnonMapping;

use serde::{Deserialize, Serialize};

use super::{independent, PreparedWork, TypeInfo, WorkerBody};
use crate::telemetry::Telemetry;

/// PageFaultChurn parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Region size per worker, KiB.
    pub region_kb: u64,
    /// Page writes per iteration (xorshift-chosen pages; repeats possible).
    pub touches_per_cycle: u64,
    /// Spin units per iteration after the touches.
    pub spin_iters: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            region_kb: 4096,
            touches_per_cycle: 256,
            spin_iters: 64,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "PageFaultChurn",
    summary: "MADV_DONTNEED on a private region, then touches_per_cycle page writes (minor faults)",
    units: "touches_per_cycle + spin_iters units per iteration (320 by default: checkpoint every 16 iterations)",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[super::ranges::ParamRange::new("region_kb", 4, super::ranges::MAX_KB), super::ranges::ParamRange::new("touches_per_cycle", 1, 1000000000), super::ranges::ParamRange::new("spin_iters", 0, super::ranges::MAX_ITERS)],
    needs: super::HostNeed::Nothing,
};

const PAGE: usize = 4096;

struct Body {
    region: AnonMapping,
    pages: u64,
    touches: u64,
    spin: u64,
    rng: u64,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        self.region.discard_pages();
        let touches = self.touches;
        tel.work_in_chunks(touches, TOUCH_CHUNK, |n| self.touch(n)) + tel.spin(self.spin)
    }
}

/// Touches per progress point: each one can fault (about 1-2 µs), so
/// 4,096 take a few ms.
const TOUCH_CHUNK: u64 = 4096;

impl Body {
    /// Writes one byte to each of `n` random pages of the region.
    #[inline(always)]
    fn touch(&mut self, n: u64) -> u64 {
        for _ in 0..n {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let page = (self.rng % self.pages) as usize;
            // SAFETY: page < pages = len / PAGE, so the write is in range.
            unsafe { std::ptr::write_volatile(self.region.as_ptr().add(page * PAGE), page as u8) };
        }
        n
    }
}

/// Builds the per-worker bodies (each maps its own region).
pub fn prepare(p: &Params) -> Box<dyn PreparedWork> {
    let p = p.clone();
    independent(move |idx| {
        let len = usize::try_from(p.region_kb * 1024).map_err(io::Error::other)?;
        Ok(Box::new(Body {
            region: AnonMapping::private(len)?,
            pages: (len / PAGE).max(1) as u64,
            touches: p.touches_per_cycle,
            spin: p.spin_iters,
            rng: runq_kernel::clock::monotonic_ns() ^ ((idx as u64 + 1) << 32) | 1,
        }))
    })
}
