//! The unit of CPU work shared by the spinning work types.

use std::hint::black_box;

/// Spins `units` work units: a dependent integer mix per unit that the
/// compiler cannot fold away. Returns `units` for accounting.
///
/// Never inlined: every caller (each work type, the floor benchmarks'
/// bare loops) then runs this one copy of the loop at one address. An
/// inlined copy's speed depends on where it lands (the same loop measured
/// 184 and 209 Munits/s in two builds), which would show as framework cost.
#[inline(never)]
pub fn spin_burst(units: u64) -> u64 {
    let mut x: u64 = black_box(0x9E37_79B9_7F4A_7C15);
    for _ in 0..units {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    black_box(x);
    units
}

/// One turn's spin of `units` work units, counted as at least one unit: a
/// legal zero (`spin_iters = 0`, `burst_iters = 0`: a ping-pong of pure
/// hand-overs) still does a turn of work, and the report counts it instead
/// of showing a worker that ran and did nothing.
#[inline(always)]
pub fn spin_turn(units: u64) -> u64 {
    spin_burst(units).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_without_spin_still_counts_one_unit() {
        assert_eq!(spin_turn(0), 1);
        assert_eq!(spin_turn(5), 5);
        assert_eq!(spin_burst(0), 0);
    }
}
