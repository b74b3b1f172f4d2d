//! runq's output layer, shared by every tool: stdout that ends quietly on
//! a closed pipe, the identity every JSON document carries (`tool`,
//! `schema_version`), ANSI colour, the table printer, units and human
//! durations, medians and percentiles, "did you mean" suggestions,
//! plain-text layout, the one safe way to write an output file, and the
//! one bounded way to read an input file.

pub mod color;
pub mod duration;
mod edit;
pub mod infile;
pub mod json;
pub mod output;
pub mod safefile;
pub mod serde_ns;
pub mod stats;
pub mod table;
pub mod text;
pub mod units;

pub use edit::{closest, edit_distance};
