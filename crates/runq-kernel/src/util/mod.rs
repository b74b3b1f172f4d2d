//! Small helpers every tool crate shares that are not kernel interfaces:
//! human durations and "did you mean" suggestions.

pub mod duration;
mod edit;

pub use edit::{closest, edit_distance};
