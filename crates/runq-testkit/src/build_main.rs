// The build script of each crate with root-only tests, included by path:
// it sets the `runq_root` cfg when the build runs as root, so those tests
// are counted as ignored, not passed, without it.

#[path = "root_cfg.rs"]
mod root_cfg;

fn main() {
    root_cfg::emit_root_cfg();
}
