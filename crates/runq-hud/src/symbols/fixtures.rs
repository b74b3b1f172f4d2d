//! Fixture frames for the classification and detection tests.

use super::Frame;

/// A frame whose source file sits where its crate's sources would:
/// std under /rustc, tokio under the cargo registry, the rest in the
/// program.
pub(crate) fn frame(name: &str) -> Frame {
    let file = if name.starts_with("std::") {
        "/rustc/0123abcd/library/std/src/thread/mod.rs"
    } else if name.starts_with("tokio::") {
        "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/runtime/x.rs"
    } else {
        "/home/me/app/src/lib.rs"
    };
    Frame {
        function: name.into(),
        file: Some(file.into()),
        line: Some(3),
        module: None,
        inlined: false,
    }
}
