//! Test support shared by runq's crates (a dev-dependency, never
//! published): the root gate, the workspace's built binaries, the one
//! shared build of the demo programs without frame pointers, the
//! jemalloc-linked demo of the slow tier, and the check of a JSON document
//! against its schema in `schemas/` (by [`schema`]).
//!
//! Tests that need root are marked
//! `#[cfg_attr(not(runq_root), ignore = "needs root")]`; the crate's
//! build script (the workspace's `build/root_cfg.rs`) sets `runq_root` in
//! a debug-profile build run as root, so the runner counts them as
//! ignored when they cannot run.

#[cfg(test)]
mod architecture;
pub mod schema;
pub mod starve;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// True when the test runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The profile directory the running test binary was built into
/// (`target/debug` or `target/release`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    deps.parent()
        .expect("the profile directory above deps/")
        .to_path_buf()
}

/// The demo program `name` of runq-demo in the test's profile directory.
/// The first call builds every demo with one cargo call (a no-op when
/// `cargo test --workspace` has built them for runq-demo's own tests).
pub fn demo_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| build_in_profile(&["-p", "runq-demo", "--bins"]));
    built(name)
}

/// The jemalloc-linked demo (`runq-demo-jemalloc`, a statically linked
/// jemalloc with its DWARF), built on first use: jemalloc's C build takes
/// about 150 CPU-seconds, so only the slow tier asks for it.
pub fn jemalloc_demo() -> PathBuf {
    let name = "runq-demo-jemalloc";
    build_in_profile(&["-p", "runq-demo", "--bin", name, "--features", "jemalloc"]);
    built(name)
}

/// The binary `name` in the test's profile directory, which must exist.
fn built(name: &str) -> PathBuf {
    let bin = profile_dir().join(name);
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}

/// Runs `cargo build` with `selection` in the running test's profile.
fn build_in_profile(selection: &[&str]) {
    let release = profile_dir().file_name().is_some_and(|n| n == "release");
    let mut args = vec!["build", "--quiet"];
    args.extend_from_slice(selection);
    if release {
        args.push("--release");
    }
    cargo(&args, |_| ());
}

/// Example `name` of `package`, built on first use in the test's profile
/// (a test of another package, run alone with `cargo test -p`, would not
/// find it otherwise).
pub fn example_bin(package: &str, name: &str) -> PathBuf {
    build_in_profile(&["-p", package, "--example", name]);
    let bin = profile_dir().join("examples").join(name);
    assert!(
        bin.exists(),
        "example {name} not built at {}",
        bin.display()
    );
    bin
}

/// The demo programs built the way `cargo build --release` builds them by
/// default, but with line tables: the workspace's
/// `-C force-frame-pointers=yes` (.cargo/config.toml) is dropped and
/// cargo's default 16 codegen units are used, in its own target directory
/// (`target/nofp`) so that it is built once and kept across test runs.
/// Returns the release directory holding the binaries.
pub fn demos_without_frame_pointers() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile = [("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")];
        // The demos the tests run this way (each other bin would cost a
        // release build and link of its own). `.ci/run` builds the same
        // ones with the same settings before the suite.
        let bins = [
            "--bin",
            "runq-demo-tokio",
            "--bin",
            "runq-demo-service",
            "--bin",
            "runq-demo-gateway",
            "--bin",
            "runq-demo-tonic",
        ];
        release_demos("nofp", &bins, &profile)
    })
}

/// The demo binary `bin` as `cargo build --release` builds a project by
/// default: no frame pointers, 16 codegen units, no debug info (cargo's
/// default `strip = "debuginfo"`, which keeps the symbol table). It is
/// the [`demos_without_frame_pointers`] binary with its debug info
/// stripped (`objcopy --strip-debug`, binutils), in
/// `target/cargo-defaults`: debug info does not change the code, and one
/// release build of the demos serves both. Returns its path.
pub fn demo_with_cargo_defaults(bin: &str) -> PathBuf {
    // Stripped once per test binary: tests that run side by side must not
    // execute a copy that another one is still writing.
    static STRIPPED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut done = STRIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let built = demos_without_frame_pointers().join(bin);
    let dir = profile_dir()
        .parent()
        .expect("the target directory")
        .join("cargo-defaults");
    let stripped = dir.join(bin);
    if done.contains(&stripped) {
        return stripped;
    }
    std::fs::create_dir_all(&dir).expect("target/cargo-defaults");
    let partial = dir.join(format!("{bin}.partial"));
    let status = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&built)
        .arg(&partial)
        .status()
        .expect("objcopy (binutils)");
    assert!(
        status.success(),
        "objcopy --strip-debug {}: {status}",
        built.display()
    );
    std::fs::rename(&partial, &stripped).expect("rename the stripped demo into place");
    done.push(stripped.clone());
    stripped
}

/// Builds `runq-demo`'s `selection` in release, without the workspace's
/// rustflags and with `env` set, into `target/<subdir>`; returns the
/// release directory.
fn release_demos(subdir: &str, selection: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let target = profile_dir()
        .parent()
        .expect("the target directory")
        .join(subdir);
    let dir = target.to_string_lossy().into_owned();
    let mut args = vec!["build", "--release", "--quiet", "-p", "runq-demo"];
    args.extend_from_slice(selection);
    args.extend(["--target-dir", dir.as_str()]);
    cargo(&args, |c| {
        c.env("CARGO_ENCODED_RUSTFLAGS", "").env_remove("RUSTFLAGS");
        c.envs(env.iter().copied());
    });
    target.join("release")
}

/// Runs cargo with `args` in the workspace, panicking with its status on
/// failure. `tune` adjusts the command (environment) before it runs.
fn cargo(args: &[&str], tune: impl FnOnce(&mut Command)) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(args).current_dir(workspace_root());
    tune(&mut cmd);
    let status = cmd.status().expect("run cargo");
    assert!(status.success(), "cargo {}: {status}", args.join(" "));
}

/// The workspace's root directory (two levels above this crate).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace root")
        .to_path_buf()
}

/// Asserts that `doc` matches `schemas/<name>.schema.json` and carries
/// the envelope every runq document has (`tool`, `schema_version`).
pub fn assert_matches_schema(name: &str, doc: &serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema JSON");
    let errors: Vec<String> = schema::violations(&schema, &schema, doc)
        .into_iter()
        .take(5)
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{doc:#}");
    assert!(
        doc["tool"].is_string() && doc["schema_version"].is_u64(),
        "{name}: no envelope"
    );
}
