//! runq's output layer, shared by every tool. Today: the envelope every
//! JSON document carries (`tool`, `schema_version`).

pub mod json;
