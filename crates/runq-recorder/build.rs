//! Declares the `runq_root` cfg of the root-only tests (see the file).
include!("../../build/root_cfg.rs");
