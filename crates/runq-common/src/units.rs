//! One spelling of times, sizes and rates for every report: `ns`, `µs`,
//! `ms`, `s`, `KiB`..`TiB`, and `k`/`M`/`G` rates; the one [`Unit`] of a
//! reported figure and the two ways to print a value in it ([`fmt_scaled`]
//! for tables that keep three decimals, [`fmt_short`] for summaries).

use serde::{Serialize, Serializer};

/// The unit of a reported figure (the JSON name is the lowercase variant;
/// [`Unit::serialize_suffix`] writes the suffix instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A count (SI ladder).
    Count,
    /// Nanoseconds (ns, µs, ms, s).
    Ns,
    /// Milliseconds.
    Ms,
    /// USER_HZ clock ticks.
    Ticks,
    /// Bytes (IEC ladder).
    Bytes,
    /// Per second.
    PerSec,
    /// Percent.
    Percent,
    /// A dimensionless ratio (Jain's index).
    Ratio,
    /// A bare scalar (ordinals, settings).
    Scalar,
    /// Text (modes, affinity).
    Text,
}

impl Unit {
    /// The unit as written after a value: `ns`, `ms`, `t`, `B`, `/s`,
    /// `%`, or empty for a count, a ratio, a scalar or text.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Ms => "ms",
            Unit::Ticks => "t",
            Unit::Bytes => "B",
            Unit::PerSec => "/s",
            Unit::Percent => "%",
            Unit::Count | Unit::Ratio | Unit::Scalar | Unit::Text => "",
        }
    }

    /// Serializes a unit as its [`suffix`](Unit::suffix) (for
    /// `#[serde(serialize_with)]`).
    pub fn serialize_suffix<S: Serializer>(unit: &Unit, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(unit.suffix())
    }
}

/// The byte units above B, largest first, as `(bytes per unit, suffix)`.
pub const IEC_UNITS: [(f64, &str); 4] = [
    (1099511627776.0, "TiB"),
    (1073741824.0, "GiB"),
    (1048576.0, "MiB"),
    (1024.0, "KiB"),
];

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

/// A time in ns as whole milliseconds with grouped thousands, for
/// sentences: `1,390 ms`, or one decimal below 10 ms (`4.0 ms`).
pub fn fmt_ms_grouped(ns: u64) -> String {
    let v = ns as f64 / 1e6;
    if v < 10.0 {
        return format!("{v:.1} ms");
    }
    let digits = format!("{v:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} ms")
}

/// A value in `unit` scaled to its largest whole unit with three
/// decimals (`1.500ms`, `-2.000k`, `7.500GiB`); integers below the first
/// step print plainly (`999ns`, `12t`).
pub fn fmt_scaled(v: f64, unit: Unit) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    let plain = |base: &str| {
        if a.fract() == 0.0 {
            format!("{sign}{a:.0}{base}")
        } else {
            format!("{sign}{a:.3}{base}")
        }
    };
    let ladder = |steps: &[(f64, &str)], base: &str| {
        steps.iter().find(|&&(div, _)| a >= div).map_or_else(
            || plain(base),
            |&(div, s)| format!("{sign}{:.3}{s}", a / div),
        )
    };
    match unit {
        Unit::Ns => ladder(&NS_UNITS, "ns"),
        Unit::Ms => fmt_scaled(v * 1e6, Unit::Ns),
        Unit::Count => ladder(&SI_PREFIXES, ""),
        Unit::PerSec => ladder(&SI_PREFIXES, "") + "/s",
        Unit::Bytes => ladder(&IEC_UNITS, "B"),
        Unit::Ticks | Unit::Percent => plain(unit.suffix()),
        Unit::Ratio | Unit::Scalar | Unit::Text => plain(""),
    }
}

/// A value in `unit`, short: times with [`fmt_ns`], rates with
/// [`fmt_rate`], percentages with one decimal, small counts and ratios
/// with three, anything else whole with its suffix.
pub fn fmt_short(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Ns => fmt_ns(v),
        Unit::PerSec => format!("{}/s", fmt_rate(v)),
        Unit::Percent => format!("{v:.1}%"),
        Unit::Count | Unit::Ratio if v.abs() < 10.0 => format!("{v:.3}"),
        u => format!("{v:.0}{}", u.suffix()),
    }
}

/// A measured value as the checks tables print it: integers plainly,
/// fractions with 3 places (`12`, `0.875`).
pub fn fmt_measure(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
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
        assert_eq!(fmt_measure(12.0), "12");
        assert_eq!(fmt_short(0.5, Unit::Ratio), "0.500");
        assert_eq!(fmt_short(1_200.0, Unit::PerSec), "1.2k/s");
        assert_eq!(fmt_short(12.0, Unit::Ms), "12ms");
        assert_eq!(fmt_measure(0.875), "0.875");
    }

    #[test]
    fn scaled_values_keep_three_decimals() {
        assert_eq!(fmt_scaled(1_500_000.0, Unit::Ns), "1.500ms");
        assert_eq!(fmt_scaled(999.0, Unit::Ns), "999ns");
        assert_eq!(fmt_scaled(-2_500.0, Unit::Ns), "-2.500µs");
        assert_eq!(fmt_scaled(-2_000.0, Unit::Count), "-2.000k");
        assert_eq!(fmt_scaled(7.5 * 1073741824.0, Unit::Bytes), "7.500GiB");
        assert_eq!(fmt_scaled(12.0, Unit::Ticks), "12t");
        assert_eq!(fmt_scaled(0.25, Unit::Scalar), "0.250");
        assert_eq!(fmt_scaled(1.5, Unit::Ms), "1.500ms");
    }

    #[test]
    fn milliseconds_group_their_thousands() {
        assert_eq!(fmt_ms_grouped(2_980_400_000), "2,980 ms");
        assert_eq!(fmt_ms_grouped(24_423_754_261), "24,424 ms");
        assert_eq!(fmt_ms_grouped(4_000_000), "4.0 ms");
        assert_eq!(fmt_ms_grouped(999_000_000), "999 ms");
    }
}
