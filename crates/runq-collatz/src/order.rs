//! The order of a sweep's runs. A machine drifts (thermal state, other
//! load, page cache), so running process counts in ascending order, or the
//! baseline always before the profiler, would tilt the curves. Each round
//! (one repeat) runs every process count once, in a shuffled order; at each
//! count the baseline and the profilers run back to back, also shuffled,
//! so a paired comparison comes from the same moment and no mode is always
//! first. The shuffles come from a seeded generator (SplitMix64 and
//! Fisher-Yates): the same seed gives the same order.

/// One planned run: process count, round, profiler (None: baseline).
pub type PlannedRun = (usize, usize, Option<usize>);

/// SplitMix64: small, fast, and good enough to shuffle a schedule.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// Every run of a sweep over 1..=`max_procs` processes, `repeats` rounds
/// and `profilers` profilers, in the order they run.
pub fn schedule(max_procs: usize, repeats: usize, profilers: usize, seed: u64) -> Vec<PlannedRun> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(max_procs * repeats * (profilers + 1));
    for repeat in 0..repeats {
        let mut counts: Vec<usize> = (1..=max_procs).collect();
        rng.shuffle(&mut counts);
        for procs in counts {
            let mut modes: Vec<Option<usize>> = std::iter::once(None)
                .chain((0..profilers).map(Some))
                .collect();
            rng.shuffle(&mut modes);
            out.extend(modes.into_iter().map(|m| (procs, repeat, m)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_once_and_the_same_for_a_seed() {
        let plan = schedule(6, 3, 2, 42);
        assert_eq!(plan.len(), 6 * 3 * 3);
        let mut sorted = plan.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), plan.len(), "a run planned twice");
        assert_eq!(plan, schedule(6, 3, 2, 42));
        assert_ne!(plan, schedule(6, 3, 2, 43));
    }

    #[test]
    fn modes_of_a_count_run_back_to_back_in_rounds() {
        let plan = schedule(5, 2, 1, 7);
        for pair in plan.chunks(2) {
            assert_eq!(pair[0].0, pair[1].0, "{pair:?}");
            assert_eq!(pair[0].1, pair[1].1, "{pair:?}");
            assert_ne!(pair[0].2, pair[1].2, "{pair:?}");
        }
        let rounds: Vec<usize> = plan.iter().map(|r| r.1).collect();
        assert!(rounds.windows(2).all(|w| w[0] <= w[1]), "rounds in order");
    }

    #[test]
    fn neither_counts_nor_modes_stay_in_one_order() {
        let plan = schedule(8, 20, 1, 1);
        let firsts = plan.chunks(2).filter(|p| p[0].2.is_none()).count();
        // 160 points: the baseline runs first about half the time.
        assert!(
            (50..=110).contains(&firsts),
            "baseline first {firsts} times"
        );
        let ascending = plan
            .chunks(16)
            .filter(|round| round.windows(2).all(|w| w[0].0 <= w[1].0))
            .count();
        assert!(ascending < 3, "{ascending} rounds ran in ascending order");
    }
}
