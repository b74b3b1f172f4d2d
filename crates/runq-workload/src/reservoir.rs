//! Reservoir sampling with a total counter, so a long run keeps a uniform
//! sample of bounded size and still knows how many observations there were.
//!
//! Once full, the reservoir uses Vitter's "algorithm R": the n-th
//! observation replaces a random slot with probability cap/n. One xorshift
//! and one multiply per observation, no logarithms: on a ping-pong's hot
//! path (a few hundred thousand observations a second, where n stays within
//! a small multiple of the cap) that is cheaper than drawing skip lengths,
//! and the slot store happens equally often either way. Each draw is taken
//! one observation early so that the slot it picks is prefetched: the store
//! into a random line of an 800 KB sample was the reservoir's main cost on a
//! ping-pong (about 2% of its round-trip rate).

/// A fixed-capacity uniform sample of a stream of `u64` values.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Reservoir {
    total: u64,
    rng: u64,
    /// The random draw the next observation will use, taken one step
    /// early so its slot can be prefetched.
    next_draw: u64,
    samples: Vec<u64>,
    cap: usize,
}

impl Reservoir {
    /// An empty reservoir that keeps at most `cap` samples. `seed` picks the
    /// pseudo-random sequence (any value; 0 is remapped).
    pub fn new(cap: usize, seed: u64) -> Self {
        Reservoir {
            samples: Vec::with_capacity(cap.min(1 << 20)),
            cap,
            total: 0,
            rng: seed | 1,
            next_draw: 0,
        }
    }

    /// xorshift64*: cheap and good enough for index selection.
    #[inline]
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Offers one observation.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.total += 1;
        if self.samples.len() < self.cap {
            self.samples.push(value);
            if self.samples.len() == self.cap {
                self.draw_ahead();
            }
            return;
        }
        // A uniform index in [0, total): keep the value when it lands in
        // the sample (probability cap/total), in that slot.
        if let Some(kept) = self
            .samples
            .get_mut(index_below(self.next_draw, self.total))
        {
            *kept = value;
        }
        self.draw_ahead();
    }

    /// Draws the next observation's random number now and prefetches the
    /// slot it would replace. The slot is a random line of a large array,
    /// a cache miss that would otherwise stall the next iteration; a loop
    /// that sleeps in between (a ping-pong) has the line by then.
    #[inline]
    fn draw_ahead(&mut self) {
        self.next_draw = self.next_random();
        if let Some(slot) = self
            .samples
            .get(index_below(self.next_draw, self.total + 1))
        {
            prefetch(slot);
        }
    }

    /// Observations offered so far, kept or not (tests read it).
    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Consumes the reservoir, returning the kept samples and the total.
    pub fn into_parts(self) -> (Vec<u64>, u64) {
        (self.samples, self.total)
    }
}

/// `draw` scaled to a uniform index in `[0, n)`.
#[inline]
fn index_below(draw: u64, n: u64) -> usize {
    usize::try_from((u128::from(draw) * u128::from(n)) >> 64).unwrap_or(usize::MAX)
}

/// A hint to bring `value`'s cache line in (no effect where unsupported).
#[inline]
fn prefetch(value: &u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; any address is allowed, and this one is valid.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const u64).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_all_below_cap() {
        let mut r = Reservoir::new(10, 1);
        for v in 0..7 {
            r.record(v);
        }
        let (s, total) = r.into_parts();
        assert_eq!(s, (0..7).collect::<Vec<_>>());
        assert_eq!(total, 7);
    }

    #[test]
    fn caps_and_counts() {
        let mut r = Reservoir::new(100, 7);
        for v in 0..100_000 {
            r.record(v);
        }
        assert_eq!(r.total(), 100_000);
        let (s, _) = r.into_parts();
        assert_eq!(s.len(), 100);
    }

    #[test]
    fn sample_is_uniform() {
        // 1000 samples of 0..100_000: each decile should hold about 100.
        let mut r = Reservoir::new(1000, 12345);
        for v in 0..100_000u64 {
            r.record(v);
        }
        let (s, _) = r.into_parts();
        let mut deciles = [0u32; 10];
        for v in s {
            deciles[(v / 10_000) as usize] += 1;
        }
        for (i, count) in deciles.iter().enumerate() {
            assert!(
                (60..=140).contains(count),
                "decile {i} has {count}: {deciles:?}"
            );
        }
    }

    #[test]
    fn long_stream_stays_uniform() {
        // Far past the cap, replacements are rare and must stay uniform.
        let mut r = Reservoir::new(2000, 99);
        for v in 0..2_000_000u64 {
            r.record(v);
        }
        let (s, total) = r.into_parts();
        assert_eq!((s.len(), total), (2000, 2_000_000));
        let mut deciles = [0u32; 10];
        for v in s {
            deciles[(v / 200_000) as usize] += 1;
        }
        for (i, count) in deciles.iter().enumerate() {
            assert!(
                (140..=260).contains(count),
                "decile {i} has {count}: {deciles:?}"
            );
        }
    }

    #[test]
    fn zero_cap_only_counts() {
        let mut r = Reservoir::new(0, 3);
        r.record(1);
        r.record(2);
        assert_eq!(r.into_parts(), (vec![], 2));
    }
}
