//! Taobench's request mix: hits at a set ratio, object sizes from a
//! bounded Pareto distribution, keys uniform; drawn from a client's seeded
//! splitmix64 state, so a seed gives the same requests.

use super::super::request_rate::splitmix64;
use super::Params;

/// One request as a client posts it and a server serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// A set (after a miss) rather than a get.
    pub set: bool,
    /// The get hits (the object is served from the cache).
    pub hit: bool,
    /// The object's size, bytes.
    pub size: u32,
    /// Which object: places it in the server's cache.
    pub key: u32,
}

/// Bits of [`Request::encode`]: set, hit, then 30 bits of size.
const SET_BIT: u64 = 1 << 63;
const HIT_BIT: u64 = 1 << 62;
const SIZE_MASK: u64 = (1 << 30) - 1;

impl Request {
    /// The request in one word (the slot a client posts it in).
    pub fn encode(self) -> u64 {
        let flag = |b: bool, bit: u64| if b { bit } else { 0 };
        flag(self.set, SET_BIT)
            | flag(self.hit, HIT_BIT)
            | ((u64::from(self.size) & SIZE_MASK) << 32)
            | u64::from(self.key)
    }

    /// The request [`Self::encode`] wrote.
    pub fn decode(word: u64) -> Request {
        Request {
            set: word & SET_BIT != 0,
            hit: word & HIT_BIT != 0,
            size: ((word >> 32) & SIZE_MASK) as u32,
            key: word as u32,
        }
    }

    /// The set that fills the object after this get missed.
    pub fn as_set(self) -> Request {
        Request { set: true, ..self }
    }
}

/// The distribution clients draw requests from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestMix {
    /// A draw below this (of 2^53) is a hit.
    hit_below: u64,
    min: f64,
    max: f64,
    alpha: f64,
    /// `1 - (min / max)^alpha`: the bounded distribution's mass.
    mass: f64,
}

/// A uniform draw in [0, 1) from 53 bits.
fn unit(state: &mut u64) -> f64 {
    (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64
}

impl RequestMix {
    /// The mix `p` describes.
    pub fn new(p: &Params) -> RequestMix {
        let min = p.min_object_bytes.max(1) as f64;
        let max = (p.max_object_bytes as f64).max(min);
        let alpha = p.size_alpha_x100.max(1) as f64 / 100.0;
        RequestMix {
            hit_below: (p.hit_permille.min(1000) << 53) / 1000,
            min,
            max,
            alpha,
            mass: 1.0 - (min / max).powf(alpha),
        }
    }

    /// An object size: the inverse of the bounded Pareto CDF at `u`.
    fn size_at(&self, u: f64) -> u32 {
        let x = self.min * (1.0 - u * self.mass).powf(-1.0 / self.alpha);
        x.clamp(self.min, self.max).round() as u32
    }

    /// The next get.
    pub fn next(&self, state: &mut u64) -> Request {
        let hit = splitmix64(state) >> 11 < self.hit_below;
        let size = self.size_at(unit(state));
        Request {
            set: false,
            hit,
            size,
            key: splitmix64(state) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRAWS: usize = 200_000;

    fn draws(p: &Params, seed: u64) -> Vec<Request> {
        let mix = RequestMix::new(p);
        let mut state = seed;
        (0..DRAWS).map(|_| mix.next(&mut state)).collect()
    }

    #[test]
    fn the_hit_ratio_is_the_parameter() {
        for permille in [0, 500, 900, 990, 1000] {
            let p = Params {
                hit_permille: permille,
                ..Params::default()
            };
            let hits = draws(&p, 7).iter().filter(|r| r.hit).count();
            let ratio = hits as f64 / DRAWS as f64;
            let want = permille as f64 / 1000.0;
            assert!((ratio - want).abs() < 0.005, "{permille}: {ratio}");
        }
    }

    #[test]
    fn sizes_are_bounded_and_pareto_tailed() {
        let p = Params::default();
        let sizes: Vec<u32> = draws(&p, 3).iter().map(|r| r.size).collect();
        assert!(sizes.iter().all(|&s| (64..=65_536).contains(&s)));
        // P(X > x) = ((L/x)^a - (L/H)^a) / (1 - (L/H)^a) for a bounded
        // Pareto of scale L, cut-off H, shape a.
        let (l, h, a) = (64.0f64, 65_536.0f64, 1.2f64);
        let tail = |x: f64| ((l / x).powf(a) - (l / h).powf(a)) / (1.0 - (l / h).powf(a));
        for x in [128.0, 640.0, 6_400.0] {
            let seen = sizes.iter().filter(|&&s| f64::from(s) > x).count() as f64 / DRAWS as f64;
            assert!(
                (seen - tail(x)).abs() < 0.005,
                "P(X > {x}): {seen} vs {}",
                tail(x)
            );
        }
        // Heavy-tailed: the mean is well above the median.
        let mut sorted = sizes.clone();
        sorted.sort_unstable();
        let mean = sizes.iter().map(|&s| f64::from(s)).sum::<f64>() / DRAWS as f64;
        assert!(mean > 2.0 * f64::from(sorted[DRAWS / 2]), "mean {mean}");
    }

    #[test]
    fn a_seed_gives_the_same_requests_and_another_seed_others() {
        let p = Params::default();
        assert_eq!(draws(&p, 11)[..100], draws(&p, 11)[..100]);
        assert_ne!(draws(&p, 11)[..100], draws(&p, 12)[..100]);
    }

    #[test]
    fn one_size_when_the_bounds_meet() {
        let p = Params {
            min_object_bytes: 512,
            max_object_bytes: 512,
            ..Params::default()
        };
        assert!(draws(&p, 5).iter().all(|r| r.size == 512));
    }

    #[test]
    fn a_request_survives_its_word() {
        let r = Request {
            set: false,
            hit: true,
            size: 16 << 20,
            key: u32::MAX,
        };
        assert_eq!(Request::decode(r.encode()), r);
        let s = r.as_set();
        assert_eq!(Request::decode(s.encode()), s);
        assert!(s.set && s.size == r.size && s.key == r.key);
    }
}
