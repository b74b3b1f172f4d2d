//! Reservoir sampling with a total counter, so a long run keeps a uniform
//! sample of bounded size and still knows how many observations there were.
//!
//! Once full, the reservoir uses Vitter's "algorithm R": the n-th
//! observation replaces a random slot with probability cap/n. One xorshift
//! and one multiply per observation, no logarithms: on a ping-pong's hot
//! path (a few hundred thousand observations a second, where n stays within
//! a small multiple of the cap) that is cheaper than drawing skip lengths,
//! and the slot store happens equally often either way.

/// A fixed-capacity uniform sample of a stream of `u64` values.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Reservoir {
    total: u64,
    rng: u64,
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
            return;
        }
        // A uniform index in [0, total): keep the value when it lands in
        // the sample (probability cap/total), in that slot.
        let r = (u128::from(self.next_random()) * u128::from(self.total)) >> 64;
        if let Ok(slot) = usize::try_from(r) {
            if let Some(kept) = self.samples.get_mut(slot) {
                *kept = value;
            }
        }
    }

    /// Observations offered so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Consumes the reservoir, returning the kept samples and the total.
    pub fn into_parts(self) -> (Vec<u64>, u64) {
        (self.samples, self.total)
    }
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
