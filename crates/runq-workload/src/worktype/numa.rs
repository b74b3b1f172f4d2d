//! NUMA movement: NumaMigrationChurn (thread and pages move together to
//! the next node every iteration) and NumaWorkingSetSweep (the thread
//! stays; its working set is re-bound node by node while it walks it).
//! Pages move with `mbind(MPOL_BIND, MPOL_MF_MOVE)`. Both need two or
//! more nodes; a host with one skips them before any fork.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_KB, MAX_MS};
use super::{independent, since, PreparedWork, TypeInfo, WorkerBody};
use crate::placement::set_affinity;
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;
use runq_kernel::mapping::AnonMapping;

const PAGE: usize = 4096;
/// `MPOL_BIND` and `MPOL_MF_MOVE` from `<linux/mempolicy.h>`.
const MPOL_BIND: libc::c_long = 2;
const MPOL_MF_MOVE: libc::c_ulong = 1 << 1;
const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// The `mbind` node mask holding only `node`.
fn node_mask(node: usize) -> Vec<libc::c_ulong> {
    let mut mask = vec![0; node / WORD_BITS + 1];
    mask[node / WORD_BITS] = 1 << (node % WORD_BITS);
    mask
}

/// Which of `count` nodes step `step` uses: each in turn.
fn node_slot(count: usize, step: u64) -> Option<usize> {
    (count > 0).then(|| (step % count as u64) as usize)
}

/// Binds `region` to `node` and moves its pages there.
fn bind_to(region: &AnonMapping, node: usize) -> io::Result<()> {
    let mask = node_mask(node);
    // The kernel reads one bit fewer than `maxnode` says.
    let maxnode = (mask.len() * WORD_BITS + 1) as libc::c_ulong;
    // SAFETY: the range is exactly this mapping; mask outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            region.as_ptr(),
            region.len(),
            MPOL_BIND,
            mask.as_ptr(),
            maxnode,
            MPOL_MF_MOVE,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes one byte per page of `region`; returns the pages touched.
fn touch_pages(region: &AnonMapping, value: u8) -> u64 {
    let pages = region.len() / PAGE;
    for page in 0..pages {
        // SAFETY: page * PAGE < len, inside the mapping.
        unsafe { std::ptr::write_volatile(region.as_ptr().add(page * PAGE), value) };
    }
    pages as u64
}

/// A private region of `kb` KiB (at least one page).
fn region_of(kb: u64) -> io::Result<AnonMapping> {
    let len = usize::try_from(kb * 1024).map_err(io::Error::other)?;
    AnonMapping::private(len.max(PAGE))
}

/// The online nodes, in order.
fn online_nodes() -> Vec<usize> {
    runq_kernel::topology::numa_nodes(Path::new("/sys"))
        .into_iter()
        .collect()
}

/// NumaMigrationChurn parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChurnParams {
    /// Each worker's region, KiB.
    pub buffer_kb: u64,
}

impl Default for ChurnParams {
    fn default() -> Self {
        ChurnParams { buffer_kb: 4096 }
    }
}

/// NumaMigrationChurn description.
pub const MIGRATION_CHURN: TypeInfo = TypeInfo {
    name: "NumaMigrationChurn",
    summary: "each iteration moves itself (affinity) and its buffer_kb region (mbind with \
              MPOL_MF_MOVE) to the next NUMA node, then writes every page",
    units: "one unit per page written (1024 per iteration at the default 4096 KiB)",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[ParamRange::new("buffer_kb", 4, MAX_KB)],
    needs: super::HostNeed::Numa,
};

struct ChurnBody {
    region: AnonMapping,
    nodes: Vec<usize>,
    cpus: Vec<BTreeSet<usize>>,
    step: u64,
}

impl WorkerBody for ChurnBody {
    #[inline(always)]
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        if let Some(slot) = node_slot(self.nodes.len(), self.step) {
            // Refusals (a cpuset or mempolicy excluding the node) are part
            // of what is tested: the worker keeps going where it is.
            let _ = set_affinity(&self.cpus[slot]);
            let _ = bind_to(&self.region, self.nodes[slot]);
        }
        self.step += 1;
        touch_pages(&self.region, self.step as u8)
    }
}

/// Builds NumaMigrationChurn bodies (each maps its own region).
pub fn prepare_churn(p: &ChurnParams) -> Box<dyn PreparedWork> {
    let kb = p.buffer_kb;
    independent(move |idx| {
        let nodes = online_nodes();
        let cpus = nodes
            .iter()
            .map(|&n| runq_kernel::topology::node_cpus(Path::new("/sys"), n))
            .collect();
        Ok(Box::new(ChurnBody {
            region: region_of(kb)?,
            nodes,
            cpus,
            step: idx as u64,
        }))
    })
}

/// NumaWorkingSetSweep parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SweepParams {
    /// Each worker's working set, KiB.
    pub working_set_kb: u64,
    /// Time on one node before the working set moves to the next, ms.
    pub rebind_ms: u64,
}

impl Default for SweepParams {
    fn default() -> Self {
        SweepParams {
            working_set_kb: 16 * 1024,
            rebind_ms: 100,
        }
    }
}

/// NumaWorkingSetSweep description.
pub const WORKING_SET_SWEEP: TypeInfo = TypeInfo {
    name: "NumaWorkingSetSweep",
    summary: "walks a working_set_kb region page by page while it is re-bound (mbind with \
              MPOL_MF_MOVE) to the next NUMA node every rebind_ms; the thread stays put",
    units: "one unit per page written (4096 per walk at the default 16 MiB)",
    wakes: None,
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::None,
    params: &[
        ParamRange::new("working_set_kb", 4, MAX_KB),
        ParamRange::new("rebind_ms", 1, MAX_MS),
    ],
    needs: super::HostNeed::Numa,
};

struct SweepBody {
    region: AnonMapping,
    nodes: Vec<usize>,
    rebind_ns: u64,
    bound_at: u64,
    step: u64,
}

impl WorkerBody for SweepBody {
    #[inline(always)]
    fn iterate(&mut self, _: &mut Telemetry) -> u64 {
        if self.step == 0 || since(self.bound_at) >= self.rebind_ns {
            if let Some(slot) = node_slot(self.nodes.len(), self.step) {
                let _ = bind_to(&self.region, self.nodes[slot]); // refusals are tested too
            }
            self.step += 1;
            self.bound_at = now_ns();
        }
        touch_pages(&self.region, self.step as u8)
    }
}

/// Builds NumaWorkingSetSweep bodies (each maps its own working set).
pub fn prepare_sweep(p: &SweepParams) -> Box<dyn PreparedWork> {
    let p = p.clone();
    independent(move |_| {
        Ok(Box::new(SweepBody {
            region: region_of(p.working_set_kb)?,
            nodes: online_nodes(),
            rebind_ns: p.rebind_ms * 1_000_000,
            bound_at: 0,
            step: 0,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_hold_one_node_bit() {
        assert_eq!(node_mask(0), [1]);
        assert_eq!(node_mask(3), [8]);
        assert_eq!(node_mask(WORD_BITS + 1), [0, 2]);
    }

    #[test]
    fn steps_visit_the_nodes_in_turn() {
        let seen: Vec<_> = (0..5).map(|s| node_slot(3, s)).collect();
        assert_eq!(seen, [0, 1, 2, 0, 1].map(Some));
        assert_eq!(node_slot(0, 1), None);
    }

    #[test]
    fn binding_to_a_present_node_moves_a_touched_region() {
        let region = region_of(8).unwrap();
        assert_eq!(touch_pages(&region, 1), 2);
        let node = online_nodes()[0];
        // Refused only under a container's mempolicy or seccomp rules.
        if let Err(e) = bind_to(&region, node) {
            eprintln!("mbind to node {node} refused here: {e}");
        }
        assert_eq!(touch_pages(&region, 2), 2);
    }
}
