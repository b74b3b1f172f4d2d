//! One spelling of times and rates for every report: `ns`, `µs`, `ms`,
//! `s`, and `k`/`M`/`G` rates.

/// The time units above ns, largest first, as `(ns per unit, suffix)`:
/// for reports that scale with their own precision (ctprof prints three
/// decimals) but must spell units like every other report.
pub const NS_UNITS: [(f64, &str); 3] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")];

/// The SI count prefixes, largest first, as `(factor, suffix)`.
pub const SI_PREFIXES: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];

/// A time in ns with an SI unit: `850ns`, `1.5µs`, `2.50ms`, `3.00s`
/// (negative values keep their sign).
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0}ns")
    } else if a < 1e6 {
        format!("{:.1}µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// A time in ns as milliseconds with one decimal, for columns that keep
/// one unit: `12.3ms`.
pub fn fmt_ms(ns: u64) -> String {
    format!("{:.1}ms", ns as f64 / 1e6)
}

/// A rate (or any count) with an SI suffix: `950`, `1.2k`, `3.45M`.
pub fn fmt_rate(v: f64) -> String {
    // -0.0 (a rate over no time) prints as 0, not "-0".
    let v = if v == 0.0 { 0.0 } else { v };
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_scale() {
        assert_eq!(fmt_ns(999.0), "999ns");
        assert_eq!(fmt_ns(1_500.0), "1.5µs");
        assert_eq!(fmt_ns(-1_500.0), "-1.5µs");
        assert_eq!(fmt_ns(2_500_000.0), "2.50ms");
        assert_eq!(fmt_ns(3_000_000_000.0), "3.00s");
        assert_eq!(fmt_ms(12_340_000), "12.3ms");
        assert_eq!(fmt_rate(1_234_567.0), "1.23M");
        assert_eq!(fmt_rate(1_500.0), "1.5k");
        assert_eq!(fmt_rate(950.0), "950");
    }
}
