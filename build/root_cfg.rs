// The build script of each crate with root-only tests, included by path
// (`include!("../../build/root_cfg.rs")`). It declares the `runq_root`
// cfg, which those tests read as
// `#[cfg_attr(not(runq_root), ignore = "needs root")]`, so that without
// root they are counted as ignored, never as passed.
//
// Only a debug-profile build (what `cargo test` builds) looks at who runs
// it, and re-runs when the user changes (sudo sets `USER` and
// `SUDO_UID`). A release build only declares the cfg: it reads nothing,
// sets nothing and never re-runs for an environment variable.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runq_root)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../../build/root_cfg.rs");
    if std::env::var("PROFILE").as_deref() != Ok("debug") {
        return;
    }
    println!("cargo::rerun-if-env-changed=USER");
    println!("cargo::rerun-if-env-changed=SUDO_UID");
    if effective_uid_is_root() {
        println!("cargo::rustc-cfg=runq_root");
    }
}

/// True when the effective uid of the build is 0 (from
/// `/proc/self/status`: a build script has no libc).
fn effective_uid_is_root() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .is_some_and(|euid| euid == "0")
}
