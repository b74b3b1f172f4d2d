//! Tests of the recorder-based explanation (see recorded.rs).
use super::*;
