//! The benchmark's inputs, with the original program's positional
//! interface: `CPUS OUTER INNER TARGET`.

use serde::Serialize;

/// Most processes a run may use (the original's cap).
pub const MAX_PROCS: usize = 1000;
/// Default outer loop count.
pub const DEFAULT_OUTER: u64 = 10;
/// Default inner loop count.
pub const DEFAULT_INNER: u64 = 1_000_000;

/// The named targets: letter, starting value, chain depth (calls made).
///
/// H keeps the original program's value, 780657630, whose chain is 464
/// calls long. The original's help text gives H 1132 calls: that is the
/// chain of 9780657630 (the same digits behind a 9, which its 32-bit
/// argument could not hold), kept here as I.
///
/// I and J go past 1000 and 2000 frames; every value on their chains fits
/// in a u64, so the graph computes the true Collatz chain. I (1132 calls)
/// is the first Collatz delay record deeper than 1000 calls (the records
/// come from exhaustive forward searches of all start values). The deeper
/// records overflow a u64 on the way, so J (2001 calls) was found with
/// [`crate::search::extend_backward`]: from the record 942488749153153
/// (1862 calls, all in range), 139 levels back up the inverse Collatz tree,
/// keeping the 1000 smallest values per level (`runq collatz search 2001
/// --from 942488749153153`).
pub const NAMED_TARGETS: [(char, u64, u64); 10] = [
    ('A', 7, 16),
    ('B', 27, 111),
    ('C', 703, 170),
    ('D', 2463, 208),
    ('E', 6171, 261),
    ('F', 77_031, 350),
    ('G', 837_799, 524),
    ('H', 780_657_630, 464),
    ('I', 9_780_657_630, 1132),
    ('J', 135_435_277_615_595_687, 2001),
];

/// What each inner iteration calls the graph with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Each inner index is its own argument.
    EachIndex,
    /// Always this value (a JSON string: start values pass 2^53, which
    /// JSON readers such as jq and JavaScript cannot hold as numbers).
    Value(#[serde(serialize_with = "u64_as_string")] u64),
}

/// Serializes a `u64` as a JSON string, for values that can pass 2^53.
pub(crate) fn u64_as_string<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

impl Target {
    /// The value printed in the CSV line (0 for [`Target::EachIndex`]).
    pub fn as_number(self) -> u64 {
        match self {
            Target::EachIndex => 0,
            Target::Value(v) => v,
        }
    }
}

/// One benchmark run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Processes (the parent is one of them).
    pub procs: usize,
    /// Outer iterations.
    pub outer: u64,
    /// Inner iterations per outer one.
    pub inner: u64,
    /// The argument rule.
    pub target: Target,
}

/// A rejected argument, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not a number where one was needed.
    #[error("{what} {value:?} is not a number")]
    NotANumber {
        /// Which argument.
        what: &'static str,
        /// What was given.
        value: String,
    },
    /// A negative loop count.
    #[error("{what} must be at least 1 (or 0 for the default), got {value}")]
    NotPositive {
        /// Which argument.
        what: &'static str,
        /// What was given.
        value: i64,
    },
    /// A target that is neither a number nor A..J.
    #[error("TARGET {0:?} is not valid: use 0 (each index), a number, or a letter A to J")]
    BadTarget(String),
    /// A target whose sequence leaves 64 bits (its 3x + 1 would wrap).
    #[error(
        "TARGET {target}: its Collatz sequence passes 2^64 - 1 after {steps} steps, and runq \
         computes in 64 bits; give a smaller target"
    )]
    TargetOverflows {
        /// The target.
        target: String,
        /// The steps before the overflow.
        steps: u64,
    },
    /// A target past 2^64 - 1.
    #[error("TARGET {0}: larger than 2^64 - 1 (18446744073709551615); give a smaller target")]
    TargetTooLarge(String),
}

/// Resolves CPUS as the original collatz does: 0 is 1 + ncpu/2, any
/// negative count every CPU, others as given; capped at [`MAX_PROCS`].
/// Returns the count and whether it was capped.
pub fn resolve_cpus(cpus: i64, ncpu: usize) -> (usize, bool) {
    let n = match cpus {
        0 => 1 + ncpu / 2,
        c if c < 0 => ncpu,
        c => usize::try_from(c).unwrap_or(usize::MAX),
    };
    (n.clamp(1, MAX_PROCS), n > MAX_PROCS)
}

/// Parses an integer argument.
pub fn parse_int(what: &'static str, s: &str) -> Result<i64, ConfigError> {
    s.trim().parse().map_err(|_| ConfigError::NotANumber {
        what,
        value: s.to_string(),
    })
}

/// Parses a loop count (OUTER or INNER): an integer of at least 1, or 0
/// for `default` (as the original collatz takes it).
pub fn parse_loops(what: &'static str, s: &str, default: u64) -> Result<u64, ConfigError> {
    let v = parse_int(what, s)?;
    match u64::try_from(v) {
        Ok(0) => Ok(default),
        Ok(v) => Ok(v),
        Err(_) => Err(ConfigError::NotPositive { what, value: v }),
    }
}

/// Parses TARGET: 0, a positive number, or a letter A..J (any case).
pub fn parse_target(s: &str) -> Result<Target, ConfigError> {
    let t = s.trim();
    let mut chars = t.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        if let Some((_, v, _)) = NAMED_TARGETS
            .iter()
            .find(|(l, _, _)| l.eq_ignore_ascii_case(&c))
        {
            return Ok(Target::Value(*v));
        }
    }
    match t.parse::<u64>() {
        Ok(0) => Ok(Target::EachIndex),
        Ok(v) => match overflow_step(v) {
            Some(steps) => Err(ConfigError::TargetOverflows {
                target: t.to_string(),
                steps,
            }),
            None => Ok(Target::Value(v)),
        },
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
            Err(ConfigError::TargetTooLarge(t.to_string()))
        }
        Err(_) => Err(ConfigError::BadTarget(s.to_string())),
    }
}

/// The step at which `x`'s Collatz sequence would pass `u64::MAX`, if it
/// does before it reaches 1 (every sequence known reaches 1 in far fewer
/// than the steps searched).
fn overflow_step(mut x: u64) -> Option<u64> {
    for step in 0..1_000_000u64 {
        if x <= 1 {
            return None;
        }
        x = if x & 1 == 1 {
            match x.checked_mul(3).and_then(|y| y.checked_add(1)) {
                Some(y) => y,
                None => return Some(step),
            }
        } else {
            x / 2
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_past_64_bits_is_refused_not_wrapped() {
        assert!(matches!(parse_target("27"), Ok(Target::Value(27))));
        let max = u64::MAX.to_string();
        let e = parse_target(&max).unwrap_err().to_string();
        assert!(e.contains("passes 2^64 - 1 after 0 steps"), "{e}");
        let e = parse_target("99999999999999999999999")
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than 2^64 - 1"), "{e}");
    }

    #[test]
    fn cpus_rules() {
        assert_eq!(resolve_cpus(0, 8), (5, false));
        assert_eq!(resolve_cpus(-1, 8), (8, false));
        assert_eq!(resolve_cpus(3, 8), (3, false));
        assert_eq!(resolve_cpus(5000, 8), (1000, true));
        assert_eq!(
            resolve_cpus(-2, 8),
            (8, false),
            "any negative count: every CPU"
        );
    }

    #[test]
    fn targets() {
        assert_eq!(parse_target("0"), Ok(Target::EachIndex));
        assert_eq!(parse_target("a"), Ok(Target::Value(7)));
        assert_eq!(parse_target("G"), Ok(Target::Value(837_799)));
        assert_eq!(
            parse_target("j"),
            Ok(Target::Value(135_435_277_615_595_687))
        );
        assert_eq!(parse_target("123"), Ok(Target::Value(123)));
        assert!(parse_target("Z").is_err());
        assert!(parse_target("-5").is_err());
        assert!(parse_target("abc").is_err());
    }

    #[test]
    fn loops() {
        assert_eq!(parse_loops("OUTER", "10", 7), Ok(10));
        assert!(matches!(
            parse_loops("OUTER", "-1", 7),
            Err(ConfigError::NotPositive { .. })
        ));
        assert_eq!(parse_loops("INNER", "0", 7), Ok(7), "0: the default");
        assert!(matches!(
            parse_loops("INNER", "ten", 7),
            Err(ConfigError::NotANumber { .. })
        ));
    }
}
