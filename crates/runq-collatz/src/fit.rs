//! Two-elbow piecewise-linear fits of a processes → ticks-per-call curve.
//!
//! The model is continuous: `y = a + b·x + c·(x − k1)₊ + d·(x − k2)₊`.
//! Every pair of breakpoints k1 < k2 taken from the measured x values is
//! tried; the pair with the least squared error wins. The slopes before,
//! between and after the elbows describe the flat part, the first elbow
//! (cores shared with other work) and saturation.
//!
//! The model has six parameters (a level, three slopes, two elbows), so a
//! curve needs at least [`MIN_PROCESS_COUNTS`] distinct process counts:
//! with four, some pair of elbows fits the means exactly whatever the data;
//! with up to six, no degree of freedom is left to judge the fit by, and
//! the elbows are forced rather than found. Such curves get no fit (they
//! are underdetermined). A fit reports R² and its RMS residual.

use serde::Serialize;

/// Parameters of the two-elbow model.
pub const PARAMETERS: usize = 6;
/// Fewest distinct x values a fit needs: one more than the parameters.
pub const MIN_PROCESS_COUNTS: usize = PARAMETERS + 1;

/// A fitted curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ElbowFit {
    /// The two elbows (x values), in order.
    pub elbows: [f64; 2],
    /// The smallest x of the data.
    pub x_start: f64,
    /// Fitted value at the smallest x: the flat level.
    pub flat_level: f64,
    /// Slope before the first elbow.
    pub slope_flat: f64,
    /// Slope between the elbows.
    pub slope_middle: f64,
    /// Slope after the second elbow (saturation).
    pub slope_saturated: f64,
    /// Sum of squared residuals.
    pub sse: f64,
    /// Coefficient of determination over every point: 1 - SSE / SST.
    pub r_squared: f64,
    /// Root mean square residual, in the data's units.
    pub rms_residual: f64,
}

impl ElbowFit {
    /// The fitted curve at `x`.
    pub fn value_at(&self, x: f64) -> f64 {
        let [k1, k2] = self.elbows;
        self.flat_level
            + self.slope_flat * (x - self.x_start)
            + (self.slope_middle - self.slope_flat) * (x - k1).max(0.0)
            + (self.slope_saturated - self.slope_middle) * (x - k2).max(0.0)
    }
}

/// The distinct x values of `points`, ascending.
pub fn distinct_xs(points: &[(f64, f64)]) -> Vec<f64> {
    let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}

/// Fits two elbows to `(x, y)` points (x need not be sorted; repeats at one
/// x are fine). `None` with fewer than [`MIN_PROCESS_COUNTS`] distinct x
/// values.
pub fn fit_two_elbows(points: &[(f64, f64)]) -> Option<ElbowFit> {
    let xs = distinct_xs(points);
    if xs.len() < MIN_PROCESS_COUNTS {
        return None;
    }
    let x0 = xs[0];
    let interior = &xs[1..xs.len() - 1];
    let mut best: Option<(f64, [f64; 4], f64, f64)> = None;
    for (i, &k1) in interior.iter().enumerate() {
        for &k2 in &interior[i + 1..] {
            let Some(coef) = least_squares(points, k1, k2) else {
                continue;
            };
            let sse = sse(points, &coef, k1, k2);
            if best.as_ref().is_none_or(|b| sse < b.0) {
                best = Some((sse, coef, k1, k2));
            }
        }
    }
    let (sse, [a, b, c, d], k1, k2) = best?;
    let n = points.len() as f64;
    let mean = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sst: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    Some(ElbowFit {
        elbows: [k1, k2],
        x_start: x0,
        flat_level: a + b * x0,
        slope_flat: b,
        slope_middle: b + c,
        slope_saturated: b + c + d,
        sse,
        r_squared: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
        rms_residual: (sse / n).sqrt(),
    })
}

fn basis(x: f64, k1: f64, k2: f64) -> [f64; 4] {
    [1.0, x, (x - k1).max(0.0), (x - k2).max(0.0)]
}

fn sse(points: &[(f64, f64)], coef: &[f64; 4], k1: f64, k2: f64) -> f64 {
    points
        .iter()
        .map(|&(x, y)| {
            let f: f64 = basis(x, k1, k2).iter().zip(coef).map(|(b, c)| b * c).sum();
            (y - f).powi(2)
        })
        .sum()
}

/// Solves the 4x4 normal equations for the hinge basis.
fn least_squares(points: &[(f64, f64)], k1: f64, k2: f64) -> Option<[f64; 4]> {
    let mut m = [[0.0f64; 5]; 4];
    for &(x, y) in points {
        let phi = basis(x, k1, k2);
        for r in 0..4 {
            for c in 0..4 {
                m[r][c] += phi[r] * phi[c];
            }
            m[r][4] += phi[r] * y;
        }
    }
    solve(m)
}

/// Gaussian elimination with partial pivoting on an augmented 4x5 matrix.
fn solve(mut m: [[f64; 5]; 4]) -> Option<[f64; 4]> {
    for col in 0..4 {
        let pivot = (col..4).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col];
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (cell, p) in row.iter_mut().zip(pivot_row).skip(col) {
                    *cell -= f * p;
                }
            }
        }
    }
    Some([0, 1, 2, 3].map(|i| m[i][4] / m[i][i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(x: f64) -> f64 {
        // Flat at 10 until 4, gentle to 8, steep after.
        10.0 + 0.5 * (x - 4.0).max(0.0) + 4.5 * (x - 8.0).max(0.0)
    }

    #[test]
    fn recovers_known_elbows() {
        let pts: Vec<_> = (1..=14).map(|x| (x as f64, curve(x as f64))).collect();
        let fit = fit_two_elbows(&pts).unwrap();
        assert_eq!(fit.elbows, [4.0, 8.0]);
        assert!((fit.flat_level - 10.0).abs() < 1e-6, "{fit:?}");
        assert!(fit.slope_flat.abs() < 1e-6);
        assert!((fit.slope_middle - 0.5).abs() < 1e-6);
        assert!((fit.slope_saturated - 5.0).abs() < 1e-6);
        assert!((fit.value_at(12.0) - curve(12.0)).abs() < 1e-6);
        assert!((fit.r_squared - 1.0).abs() < 1e-9, "{fit:?}");
        assert!(fit.rms_residual < 1e-6);
    }

    #[test]
    fn recovers_elbows_through_noise_and_repeats() {
        let mut pts = Vec::new();
        let mut rng = 0x1234_5678_u64;
        for x in 1..=18 {
            for _ in 0..3 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let noise = ((rng % 1000) as f64 / 1000.0 - 0.5) * 0.2;
                pts.push((x as f64, 3.0 * curve(x as f64 * 0.5 + 1.0) + noise));
            }
        }
        // In these x units the elbows sit at 6 and 14.
        let fit = fit_two_elbows(&pts).unwrap();
        assert_eq!(fit.elbows, [6.0, 14.0], "{fit:?}");
        assert!(fit.r_squared > 0.99 && fit.r_squared < 1.0, "{fit:?}");
        // Uniform noise of width 0.2 has an RMS of 0.2 / sqrt(12).
        assert!((fit.rms_residual - 0.058).abs() < 0.02, "{fit:?}");
    }

    #[test]
    fn underdetermined_curves_give_no_fit() {
        // Six counts leave no degree of freedom for six parameters;
        // seven leave one.
        let pts: Vec<_> = (1..=6).map(|x| (x as f64, (x * x) as f64)).collect();
        assert!(fit_two_elbows(&pts).is_none());
        let pts: Vec<_> = (1..=7).map(|x| (x as f64, curve(x as f64))).collect();
        assert!(fit_two_elbows(&pts).is_some());
        let repeats: Vec<_> = pts.iter().flat_map(|&p| [p, p]).take(12).collect();
        assert!(fit_two_elbows(&repeats).is_none(), "repeats are not counts");
    }
}
