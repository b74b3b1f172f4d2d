//! The identity of runq's JSON documents. Every document a tool prints
//! with `--json` or writes with `--output` starts with the same two
//! fields: `tool`, the command that wrote it (`"runq compare"`), and
//! `schema_version`, which changes when a field is renamed or removed
//! (added fields keep the version). Each document type states both once,
//! in its [`JsonDocument`] impl; [`Stamped`] writes them before the
//! document's own fields. The shape of each document is described by a
//! JSON Schema under `schemas/` in the repository.

use serde::Serialize;

/// A JSON document a tool prints or writes: its tool and the version of
/// its schema, stated once per type.
pub trait JsonDocument: Serialize {
    /// The command that writes the document, e.g. `"runq ctprof show"`.
    const TOOL: &'static str;
    /// The version of the document's schema: bumped when a field is
    /// renamed or removed.
    const SCHEMA_VERSION: u32;
}

/// A document in its envelope: `tool`, `schema_version`, then the
/// document's own fields (a struct or map, flattened in place).
#[derive(Debug)]
pub struct Stamped<'a, T: JsonDocument>(pub &'a T);

/// What [`Stamped`] serializes as.
#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    tool: &'static str,
    schema_version: u32,
    #[serde(flatten)]
    body: &'a T,
}

impl<T: JsonDocument> Serialize for Stamped<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Envelope {
            tool: T::TOOL,
            schema_version: T::SCHEMA_VERSION,
            body: self.0,
        }
        .serialize(s)
    }
}

/// `doc` in its envelope as pretty JSON, without a final newline.
pub fn to_pretty<T: JsonDocument>(doc: &T) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&Stamped(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Body {
        rows: u32,
    }

    impl JsonDocument for Body {
        const TOOL: &'static str = "runq compare";
        const SCHEMA_VERSION: u32 = 4;
    }

    #[test]
    fn the_envelope_comes_first_and_the_body_is_flattened() {
        assert_eq!(
            serde_json::to_string(&Stamped(&Body { rows: 3 })).unwrap(),
            r#"{"tool":"runq compare","schema_version":4,"rows":3}"#
        );
        assert!(to_pretty(&Body { rows: 3 })
            .unwrap()
            .starts_with("{\n  \"tool\": \"runq compare\",\n  \"schema_version\": 4,"));
    }
}
