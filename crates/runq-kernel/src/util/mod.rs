//! Small helpers every tool crate shares that are not kernel interfaces:
//! human durations, "did you mean" suggestions, and the units and tables
//! reports print.

pub mod duration;
mod edit;
pub mod table;
pub mod units;

pub use edit::{closest, edit_distance};
