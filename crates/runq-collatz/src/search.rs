//! Finding start values with deep chains.
//!
//! [`chain_stats`] follows a chain forwards in exact arithmetic and says
//! whether it stays within a u64 (the graph's argument type: a chain that
//! overflows would wrap and stop being the Collatz chain).
//!
//! [`extend_backward`] searches the inverse Collatz tree: the values one
//! step before `n` are `2n` and, when `n ≡ 4 (mod 6)`, the odd `(n - 1) / 3`.
//! Walking back from a value whose chain is `d` calls deep, every value
//! reached `k` levels up has a chain exactly `d + k` calls deep, and every
//! value on that chain was visited by the walk, so keeping the walk below
//! `u64::MAX` keeps the whole chain in range. The tree grows exponentially;
//! a beam keeps the smallest values of each level. Multiples of 3 have no
//! odd predecessor (only doublings, which soon overflow), so they are kept
//! only at the last level, where they are candidates, not parents.

/// What following a chain found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainStats {
    /// Calls the graph makes for this start value (the chain's depth).
    pub calls: u64,
    /// Largest value on the chain.
    pub peak: u128,
    /// Whether a value on the chain is past `u64::MAX`.
    pub overflows: bool,
}

/// Follows the chain of `start` as the graph does (one call per step,
/// stopping when a halving reaches 1 or less), in u128 arithmetic.
pub fn chain_stats(start: u64) -> ChainStats {
    let (mut x, mut calls, mut peak) = (u128::from(start), 0u64, u128::from(start));
    loop {
        calls += 1;
        if x & 1 == 1 {
            x = 3 * x + 1;
        } else {
            x /= 2;
            if x <= 1 {
                break;
            }
        }
        peak = peak.max(x);
        if x > u128::from(u64::MAX) {
            // Past the graph's range: report it without following further
            // (a u128 could overflow too on a long enough climb).
            return ChainStats {
                calls,
                peak,
                overflows: true,
            };
        }
    }
    ChainStats {
        calls,
        peak,
        overflows: false,
    }
}

/// The values one step before `n` (whose step leads to `n`), both within
/// a u64; 1 is left out (its chain runs through 4 and 2).
fn predecessors(n: u64) -> impl Iterator<Item = u64> {
    let double = n.checked_mul(2);
    let odd = (n % 6 == 4).then(|| (n - 1) / 3).filter(|&m| m > 1);
    double.into_iter().chain(odd)
}

/// The smallest start value found whose chain is exactly `depth` calls
/// deep, searching back from `from` (whose chain must be shallower and in
/// range) with `beam` values kept per level; `None` when the beam dies out
/// (every path left the u64 range) or `from` does not fit.
pub fn extend_backward(from: u64, depth: u64, beam: usize) -> Option<u64> {
    let start = chain_stats(from);
    if start.overflows || start.calls >= depth || beam == 0 {
        return None;
    }
    let mut level = vec![from];
    for _ in start.calls + 1..depth {
        let mut next: Vec<u64> = level
            .iter()
            .flat_map(|&n| predecessors(n))
            .filter(|m| m % 3 != 0)
            .collect();
        next.sort_unstable();
        next.dedup();
        next.truncate(beam);
        if next.is_empty() {
            return None;
        }
        level = next;
    }
    level.iter().flat_map(|&n| predecessors(n)).min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgraph::run_chain;
    use crate::config::NAMED_TARGETS;

    #[test]
    fn named_targets_stay_in_range_and_match_the_graph() {
        for (letter, value, depth) in NAMED_TARGETS {
            let s = chain_stats(value);
            assert!(!s.overflows, "target {letter} overflows");
            assert_eq!(s.calls, depth, "target {letter}");
            assert_eq!(run_chain(value), depth, "target {letter}");
        }
    }

    #[test]
    fn deeper_records_overflow() {
        // The first delay records past 2000 steps leave the u64 range, which
        // is why J comes from the backward search.
        assert!(chain_stats(93_571_393_692_802_302).overflows);
        assert!(chain_stats(931_386_509_544_713_451).overflows);
        let r = chain_stats(942_488_749_153_153);
        assert_eq!((r.calls, r.overflows), (1862, false));
    }

    #[test]
    fn the_backward_search_finds_target_j() {
        let j = extend_backward(942_488_749_153_153, 2001, 1000);
        assert_eq!(j, Some(135_435_277_615_595_687));
    }

    #[test]
    fn every_result_has_exactly_the_asked_depth() {
        for depth in [20, 100, 300] {
            let v = extend_backward(7, depth, 200).expect("a value");
            let s = chain_stats(v);
            assert_eq!((s.calls, s.overflows), (depth, false), "{v}");
        }
        assert_eq!(extend_backward(7, 16, 10), None, "7 is already 16 deep");
        assert_eq!(extend_backward(2, 2001, 10), None, "a narrow beam dies");
    }
}
