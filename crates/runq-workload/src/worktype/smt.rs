//! SmtSiblingSpin: spinners pinned in pairs onto the two hardware threads
//! of one core, so each pair competes for one core's execution units.
//! Needs SMT; a host without it skips the type before any fork.

use std::collections::BTreeSet;
use std::path::Path;

use super::{independent, PreparedWork, SpinParams, TypeInfo, WorkerBody};
use crate::placement::set_affinity;
use crate::telemetry::Telemetry;

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "SmtSiblingSpin",
    summary: "pairs of spinners, each pair pinned onto the SMT siblings of one core",
    units: "spin_iters units per iteration (at least 1); checkpoint every iteration at the \
            default 1024",
    wakes: None,
    workers: super::WorkerRule::MultipleOf {
        n: 2,
        roles: "pairs sharing a core",
    },
    wake_figure: super::WakeFigure::None,
    params: super::ranges::SPIN,
    needs: super::HostNeed::Smt,
};

/// The CPU of worker `idx`: pair `idx / 2` takes sibling set
/// `(idx / 2) % sets.len()` (wrapping when pairs outnumber cores), and the
/// two workers of the pair take its first and second thread.
fn sibling_cpu(sets: &[BTreeSet<usize>], idx: usize) -> Option<usize> {
    let set = sets.get((idx / 2) % sets.len().max(1))?;
    set.iter().nth((idx % 2) % set.len()).copied()
}

struct Body {
    cpu: Option<usize>,
    pinned: bool,
    spin: u64,
}

impl WorkerBody for Body {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        if !self.pinned {
            // In the worker's own thread; a refusal (the cpuset excludes
            // the sibling) leaves the worker where its setup put it.
            self.pinned = true;
            if let Some(cpu) = self.cpu {
                let _ = set_affinity(&BTreeSet::from([cpu]));
            }
        }
        tel.spin(self.spin)
    }
}

/// Builds the bodies, each with its sibling CPU chosen from sysfs.
pub fn prepare(p: &SpinParams) -> Box<dyn PreparedWork> {
    let spin = p.spin_iters;
    let online = runq_kernel::cpulist::online_cpus();
    let sets = runq_kernel::topology::smt_sibling_sets(Path::new("/sys"), &online);
    independent(move |idx| {
        Ok(Box::new(Body {
            cpu: sibling_cpu(&sets, idx),
            pinned: false,
            spin,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_share_a_core_and_wrap_over_the_cores() {
        let sets = [BTreeSet::from([0, 4]), BTreeSet::from([1, 5])];
        let cpus: Vec<_> = (0..6).map(|i| sibling_cpu(&sets, i)).collect();
        assert_eq!(cpus, [0, 4, 1, 5, 0, 4].map(Some));
        assert_eq!(sibling_cpu(&[], 3), None);
        // A core with more than two threads: pairs use its first two.
        assert_eq!(sibling_cpu(&[BTreeSet::from([2, 3, 6, 7])], 1), Some(3));
    }
}
