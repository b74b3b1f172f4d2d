//! The JSON documents runq prints or writes: each carries `tool` and
//! `schema_version` (see [`runq_common::json`]).

use runq_common::json::{Document, Listing};
use serde::Serialize;

/// The schema version of the documents that had none before: bumped when
/// a field is renamed or removed. `runq run` and `runq hud` keep their own.
pub const SCHEMA_VERSION: u32 = 1;

/// `body` in the envelope of `tool`.
pub fn document<'a, T: Serialize>(tool: &'a str, body: &'a T) -> Document<'a, T> {
    Document {
        tool,
        schema_version: SCHEMA_VERSION,
        body,
    }
}

/// The list `items` under `key`, in the envelope of `tool`.
pub fn listing<'a, T: Serialize>(
    tool: &'a str,
    key: &'static str,
    items: &'a [T],
) -> Listing<'a, T> {
    Listing {
        tool,
        schema_version: SCHEMA_VERSION,
        key,
        items,
    }
}
