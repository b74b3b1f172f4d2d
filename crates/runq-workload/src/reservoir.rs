//! Reservoir sampling with a total counter, so a long run keeps a uniform
//! sample of bounded size and still knows how many observations there were.
//!
//! Once full, the reservoir uses Li's "algorithm L": it draws how many
//! observations to skip before the next replacement, so the common case on
//! a hot path is one counter compare instead of a random draw and a store
//! to a random slot of a large array.

/// A fixed-capacity uniform sample of a stream of `u64` values.
#[derive(Debug, Clone)]
pub struct Reservoir {
    samples: Vec<u64>,
    cap: usize,
    total: u64,
    rng: u64,
    /// Algorithm L's running weight `W`.
    weight: f64,
    /// `total` value at which the next replacement happens.
    next_replace: u64,
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
            weight: 1.0,
            next_replace: u64::MAX,
        }
    }

    /// A uniform draw in (0, 1).
    fn next_unit(&mut self) -> f64 {
        ((self.next_random() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Advances `W` and draws the position of the next replacement.
    ///
    /// Two logarithms per replacement: `u^(1/k)` and `ln(1 - W)` take
    /// their Taylor series when the argument is tiny (a large cap, or `W`
    /// far past the fill), where the series is exact to f64 precision.
    fn schedule_next_replacement(&mut self) {
        let k = self.cap as f64;
        self.weight *= exp_near_zero(self.next_unit().ln() / k);
        let skip = (self.next_unit().ln() / ln_one_minus(self.weight)).floor();
        // Saturate on absurd skips (W close to 0 after ~2^64 observations).
        let skip = if skip.is_finite() && skip < 1e18 {
            skip as u64
        } else {
            u64::MAX / 2
        };
        self.next_replace = self.total.saturating_add(skip).saturating_add(1);
    }

    /// xorshift64*: cheap and good enough for index selection.
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
                self.schedule_next_replacement();
            }
            return;
        }
        if self.total == self.next_replace {
            self.replace_random_slot(value);
        }
    }

    #[cold]
    fn replace_random_slot(&mut self, value: u64) {
        let slot = ((u128::from(self.next_random()) * self.cap as u128) >> 64) as usize;
        self.samples[slot] = value;
        self.schedule_next_replacement();
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

/// `e^x`, by its Taylor series when `|x| < 1e-4` (the remainder, below
/// `x^4/24 < 5e-18`, is under f64 rounding), else by `exp`.
#[inline]
fn exp_near_zero(x: f64) -> f64 {
    if x.abs() < 1e-4 {
        1.0 + x * (1.0 + x * (0.5 + x / 6.0))
    } else {
        x.exp()
    }
}

/// `ln(1 - w)` for `w` in (0, 1), by its series when `w < 1e-4` (the
/// remainder `w^5/5` is under 1e-20 of the result), else by `ln_1p`.
#[inline]
fn ln_one_minus(w: f64) -> f64 {
    if w < 1e-4 {
        -w * (1.0 + w * (0.5 + w * (1.0 / 3.0 + w * 0.25)))
    } else {
        (-w).ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_match_libm_where_they_are_used() {
        for &x in &[-9.9e-5f64, -3.7e-5, -1e-6, 0.0, 5e-5] {
            let rel = (exp_near_zero(x) - x.exp()).abs() / x.exp();
            assert!(rel < 1e-15, "exp({x}): {rel}");
        }
        for &w in &[9.9e-5f64, 1e-5, 1e-9] {
            let exact = (-w).ln_1p();
            let rel = ((ln_one_minus(w) - exact) / exact).abs();
            assert!(rel < 1e-15, "ln(1-{w}): {rel}");
        }
        assert_eq!(exp_near_zero(-2.0), (-2.0f64).exp());
        assert_eq!(ln_one_minus(0.5), (-0.5f64).ln_1p());
    }

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
        // Far past the cap the skip-based path does all the work.
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
