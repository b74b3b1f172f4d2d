//! Human durations: `500ms`, `5s`, `1m`, `2h`, `250us`, or plain seconds
//! such as `0.5`.

use std::time::Duration;

/// A duration that could not be parsed or is not positive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason} (examples: 500ms, 5s, 1m, 0.5)")]
pub struct DurationError {
    /// The rejected text.
    pub text: String,
    /// Why.
    pub reason: &'static str,
}

/// Parses a positive duration.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError {
        text: text.to_string(),
        reason,
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if t.starts_with('-') {
        return Err(err("negative; a duration is greater than zero"));
    }
    if number.is_empty() {
        return Err(err("missing number"));
    }
    let value: f64 = number.parse().map_err(|_| err("not a number"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err("unknown unit")),
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 366.0 * 86400.0 {
        return Err(err("too large"));
    }
    if secs <= 0.0 {
        return Err(err("must be greater than zero"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_units_and_plain_seconds() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
    }

    #[test]
    fn rejects_zero_negative_and_garbage() {
        for bad in ["0", "0s", "-1", "abc", "", "5 parsecs", "1.2.3", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        let e = parse_duration("-1s").unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
    }
}
