//! Sets the `runq_root` cfg when built as root (see runq-testkit).
include!("../runq-testkit/src/build_main.rs");
