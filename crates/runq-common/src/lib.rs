//! runq's output layer, shared by every tool: stdout that ends quietly on
//! a closed pipe, the identity every JSON document carries (`tool`,
//! `schema_version`), ANSI colour, the table printer, units and human
//! durations, medians and percentiles, "did you mean" suggestions,
//! plain-text layout and names made safe to print, the one safe way to
//! write an output file, the one bounded way to read an input file, and
//! reading a JSON document's header before its body.

pub mod color;
pub mod duration;
mod edit;
pub mod infile;
pub mod json;
pub mod json_read;
pub mod openmetrics;
pub mod output;
pub mod safefile;
pub mod serde_ns;
pub mod stats;
pub mod table;
pub mod text;
pub mod units;

pub use edit::{closest, edit_distance};
