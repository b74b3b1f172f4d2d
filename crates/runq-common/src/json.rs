//! The envelope of runq's JSON documents. Every document a tool prints
//! with `--json` or writes with `--output` starts with the same two
//! fields: `tool`, the command that wrote it (`"runq compare"`), and
//! `schema_version`, which changes when a field is renamed or removed
//! (added fields keep the version). The shape of each document is
//! described by a JSON Schema under `schemas/` in the repository.

use serde::Serialize;

/// A document: the envelope, then the fields of `body` (a struct or map,
/// flattened in place).
#[derive(Debug, Serialize)]
pub struct Document<'a, T: Serialize> {
    /// The command that wrote the document, e.g. `"runq ctprof show"`.
    pub tool: &'a str,
    /// The version of this document's schema.
    pub schema_version: u32,
    /// The document's own fields.
    #[serde(flatten)]
    pub body: &'a T,
}

/// A document whose content is a list: the envelope, then the list under
/// `key` (a bare JSON array could carry no envelope).
#[derive(Debug)]
pub struct Listing<'a, T: Serialize> {
    /// The command that wrote the document.
    pub tool: &'a str,
    /// The version of this document's schema.
    pub schema_version: u32,
    /// The name of the list's field, e.g. `"metrics"`.
    pub key: &'static str,
    /// The list.
    pub items: &'a [T],
}

impl<T: Serialize> Serialize for Listing<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("tool", self.tool)?;
        m.serialize_entry("schema_version", &self.schema_version)?;
        m.serialize_entry(self.key, self.items)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Body {
        rows: u32,
    }

    #[test]
    fn the_envelope_comes_first_and_the_body_is_flattened() {
        let doc = Document {
            tool: "runq compare",
            schema_version: 1,
            body: &Body { rows: 3 },
        };
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"tool":"runq compare","schema_version":1,"rows":3}"#
        );
    }

    #[test]
    fn a_listing_wraps_its_list() {
        let doc = Listing {
            tool: "runq ctprof metric-list",
            schema_version: 1,
            key: "metrics",
            items: &["a", "b"],
        };
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"tool":"runq ctprof metric-list","schema_version":1,"metrics":["a","b"]}"#
        );
    }
}
