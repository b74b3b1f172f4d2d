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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_counts_its_units() {
        assert_eq!(spin_burst(0), 0);
        assert_eq!(spin_burst(5), 5);
    }
}
