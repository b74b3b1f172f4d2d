//! Whether the build runs as root, read without dependencies so that a
//! build script can include this file by path (`#[path]`) as well as the
//! test kit re-exporting it.

/// True when the effective uid of this process is 0 (from
/// `/proc/self/status`, so no libc is needed in a build script).
pub fn effective_uid_is_root() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .is_some_and(|euid| euid == "0")
}

/// For a build script: declares the `runq_root` cfg and sets it when the
/// build (and so, in practice, the test run) is done as root. Tests that
/// need root carry `#[cfg_attr(not(runq_root), ignore = "needs root")]`,
/// so without root they are counted as ignored, never as passed.
///
/// Re-run when the user changes (sudo sets `USER` and `SUDO_UID`).
pub fn emit_root_cfg() {
    println!("cargo::rustc-check-cfg=cfg(runq_root)");
    println!("cargo::rerun-if-env-changed=USER");
    println!("cargo::rerun-if-env-changed=SUDO_UID");
    println!("cargo::rerun-if-changed=build.rs");
    if effective_uid_is_root() {
        println!("cargo::rustc-cfg=runq_root");
    }
}
