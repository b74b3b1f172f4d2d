//! CrossAffinityChurn: like AffinityChurn, but each iteration asks for a
//! random subset of every online CPU, not of the worker's allowed set, so
//! the kernel must intersect the request with the cgroup's cpuset. An
//! empty intersection (`EINVAL`) is an expected outcome: the worker keeps
//! its mask and goes on.

use std::collections::BTreeSet;

use super::{independent, timed_yield, PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::placement::set_affinity;
use crate::telemetry::Telemetry;

/// CrossAffinityChurn description.
pub const INFO: TypeInfo = TypeInfo {
    name: "CrossAffinityChurn",
    summary: "spins, sets its affinity to a random subset of all online CPUs (crossing the \
              cgroup cpuset; an empty intersection is refused and ignored), then yields",
    units: "spin_iters units per iteration (at least 1); checkpoint every iteration at the \
            default 1024",
    wakes: Some("sched_yield() after the affinity change, timed across the call"),
    workers: super::WorkerRule::Any,
    wake_figure: super::WakeFigure::YieldWait,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Nothing,
};

/// The CPUs of `online` whose bit is set in `mask` (bit i is the i-th CPU
/// of `online` in order, modulo 64); never empty when `online` is not.
fn subset_of(online: &[usize], mask: u64) -> BTreeSet<usize> {
    let picked: BTreeSet<usize> = online
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << (i % 64)) != 0)
        .map(|(_, &cpu)| cpu)
        .collect();
    if picked.is_empty() {
        online.iter().take(1).copied().collect()
    } else {
        picked
    }
}

struct Body {
    spin: u64,
    online: Vec<usize>,
    rng: u64,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let units = tel.spin(self.spin);
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        // EINVAL (nothing left after the cpuset) is one of the outcomes
        // under test: the mask stays as it was.
        let _ = set_affinity(&subset_of(&self.online, self.rng));
        timed_yield(tel);
        units
    }
}

/// Builds CrossAffinityChurn bodies.
pub fn prepare(p: &SpinParams) -> Box<dyn PreparedWork> {
    let spin = p.spin_iters;
    independent(move |idx| {
        Ok(Box::new(Body {
            spin,
            online: runq_kernel::cpulist::online_cpus().into_iter().collect(),
            rng: runq_kernel::clock::monotonic_ns() ^ ((idx as u64 + 1) << 40) | 1,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_follow_the_mask_and_are_never_empty() {
        let online = [0, 2, 5, 7];
        assert_eq!(subset_of(&online, 0b1010), BTreeSet::from([2, 7]));
        assert_eq!(subset_of(&online, 0), BTreeSet::from([0]));
        assert_eq!(subset_of(&online, u64::MAX), BTreeSet::from(online));
        assert!(subset_of(&[], 7).is_empty());
    }
}
