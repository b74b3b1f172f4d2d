//! Durations in public JSON as integer nanoseconds (`"duration_ns":
//! 3000000000`), never serde's `{"secs": 3, "nanos": 0}`:
//! `#[serde(with = "runq_common::serde_ns")]` on a `Duration` field. The
//! old two-field form still reads, so documents written before stay
//! loadable.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// Writes `d` as whole nanoseconds (saturating at `u64::MAX`).
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Either {
    Ns(u64),
    Parts { secs: u64, nanos: u32 },
}

/// Reads nanoseconds, or the `{"secs", "nanos"}` form.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(match Either::deserialize(d)? {
        Either::Ns(ns) => Duration::from_nanos(ns),
        Either::Parts { secs, nanos } => Duration::new(secs, nanos),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(with = "super")]
        d: Duration,
    }

    #[test]
    fn writes_ns_and_reads_both_forms() {
        let t = T {
            d: Duration::from_millis(1500),
        };
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(text, r#"{"d":1500000000}"#);
        assert_eq!(serde_json::from_str::<T>(&text).unwrap(), t);
        let old: T = serde_json::from_str(r#"{"d":{"secs":1,"nanos":500000000}}"#).unwrap();
        assert_eq!(old, t);
    }
}
