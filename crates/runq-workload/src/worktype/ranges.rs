//! The valid range of every numeric work-type parameter, stated once:
//! `--list` and `--explain` print it, and [`check_ranges`] enforces it
//! before any type-specific rule (such as `nice_min <= nice_max`) runs.

use serde_json::Value;

/// An inclusive range of a numeric parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamRange {
    /// The parameter's key, as in `--param KEY=VALUE`.
    pub name: &'static str,
    /// The smallest valid value.
    pub min: i64,
    /// The largest valid value.
    pub max: i64,
}

impl ParamRange {
    /// A range `min..=max` for the parameter `name`.
    pub const fn new(name: &'static str, min: i64, max: i64) -> ParamRange {
        ParamRange { name, min, max }
    }

    /// `min..=max` in the words of a listing, e.g. `1..3600000`.
    pub fn bounds_text(&self) -> String {
        format!("{}..{}", self.min, self.max)
    }
}

/// Spin units per iteration: up to 10^12 (minutes of spinning per
/// iteration; STOP still ends a burst at once).
pub const MAX_ITERS: i64 = 1_000_000_000_000;
/// One hour, in ms.
pub const MAX_MS: i64 = 3_600_000;
/// One hour, in µs.
pub const MAX_US: i64 = 3_600_000_000;
/// 16 GiB, in KiB: the largest buffer, region or file a worker allocates.
pub const MAX_KB: i64 = 16 * 1024 * 1024;

/// The one knob of the spin-burst types.
pub const SPIN: &[ParamRange] = &[ParamRange::new("spin_iters", 0, MAX_ITERS)];

/// Checks every numeric parameter of `params` (a work type serialized to
/// JSON) against its range. A value that is not an integer in `i64`
/// (e.g. above 2^63) is out of range too.
pub fn check_ranges(ranges: &[ParamRange], params: &Value) -> Result<(), String> {
    for r in ranges {
        let Some(raw) = params.get(r.name) else {
            continue;
        };
        let inside = raw.as_i64().is_some_and(|v| (r.min..=r.max).contains(&v));
        if !inside {
            return Err(format!(
                "{} must be between {} and {} (got {raw})",
                r.name, r.min, r.max
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkType;
    use serde_json::json;

    /// The numeric keys of a type's defaults.
    fn numeric_keys(work: &WorkType) -> Vec<String> {
        let v = serde_json::to_value(work).unwrap();
        v.as_object()
            .unwrap()
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k.clone())
            .collect()
    }

    #[test]
    fn every_numeric_parameter_has_exactly_one_range() {
        for work in WorkType::all_defaults() {
            let info = work.info();
            let mut keys = numeric_keys(&work);
            let mut named: Vec<String> = info.params.iter().map(|r| r.name.into()).collect();
            keys.sort();
            named.sort();
            assert_eq!(keys, named, "{}", info.name);
        }
    }

    #[test]
    fn defaults_are_inside_and_both_edges_are_enforced() {
        for work in WorkType::all_defaults() {
            assert_eq!(work.validate_params(), Ok(()), "{}", work.name());
            for r in work.info().params {
                let with = |v: Value| {
                    let mut doc = serde_json::to_value(&work).unwrap();
                    doc[r.name] = v;
                    serde_json::from_value::<WorkType>(doc)
                        .map_err(|e| e.to_string())
                        .and_then(|w| w.validate_params())
                };
                let name = format!("{}.{}", work.name(), r.name);
                assert!(with(json!(r.max + 1)).is_err(), "{name} above max");
                // Below 0 an unsigned field fails to parse: an error too.
                assert!(with(json!(r.min - 1)).is_err(), "{name} below min");
            }
        }
    }

    #[test]
    fn out_of_range_error_names_key_bounds_and_value() {
        let ranges = [ParamRange::new("burst_ms", 1, 10)];
        let err = check_ranges(&ranges, &json!({"burst_ms": 0})).unwrap_err();
        assert_eq!(err, "burst_ms must be between 1 and 10 (got 0)");
        let huge = json!({"burst_ms": u64::MAX});
        assert!(check_ranges(&ranges, &huge).is_err());
        assert_eq!(check_ranges(&ranges, &json!({})), Ok(()));
    }
}
