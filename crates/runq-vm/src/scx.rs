//! sched_ext schedulers from crates.io, built on request and cached
//! (`runq vm scheduler build`): `cargo install --root <cache> NAME`, the
//! way the scx project ships its Rust schedulers (scx_bpfland, scx_lavd,
//! scx_rusty, ...), with `LIBCLANG_PATH` pointed at an installed LLVM
//! when unset. The cache is one cargo root, `$RUNQ_SCX_CACHE` or
//! `~/.cache/runq/scx`, so a scheduler built once is found at once, and
//! `--scheduler` takes the printed path inside a VM as on the host.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use crate::VmError;

/// The cache: `$RUNQ_SCX_CACHE`, else `~/.cache/runq/scx`.
pub fn root() -> PathBuf {
    if let Some(dir) = std::env::var_os("RUNQ_SCX_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/runq/scx")
}

/// A built scheduler, as `--json` prints it
/// (schemas/vm-scheduler-build.schema.json).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuiltScheduler {
    /// The crate (and binary) name.
    pub name: String,
    /// The crate version installed.
    pub version: String,
    /// The binary, for `--scheduler`.
    pub path: PathBuf,
    /// Found in the cache rather than built now.
    pub cached: bool,
    /// Seconds the build took (0 when cached).
    pub build_s: f64,
}

impl runq_common::json::JsonDocument for BuiltScheduler {
    const TOOL: &'static str = "runq vm scheduler build";
    const SCHEMA_VERSION: u32 = 1;
}

/// Checks a scheduler's name: an scx crate, `scx_` and lowercase letters,
/// digits or `_` (so it is also a safe file name).
pub fn check_name(name: &str) -> Result<(), VmError> {
    let tail = name.strip_prefix("scx_").unwrap_or_default();
    let ok = !tail.is_empty()
        && tail
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(VmError::Usage(format!(
            "{name:?} is not an scx scheduler's crate name: give one such as scx_bpfland, \
             scx_lavd or scx_rusty"
        )))
    }
}

/// The version of `name` that cargo recorded in `root`'s `.crates.toml`,
/// when it installed it there.
pub fn installed_version(crates_toml: &str, name: &str) -> Option<String> {
    crates_toml.lines().find_map(|line| {
        let key = line.strip_prefix('"')?.split('"').next()?;
        let mut words = key.split_whitespace();
        (words.next()? == name).then(|| words.next().map(str::to_string))?
    })
}

/// Finds `name` (at `version` when given) in the cache at `root`, or
/// builds it there with cargo; `progress` hears of a build.
pub fn build(
    root: &Path,
    name: &str,
    version: Option<&str>,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltScheduler, VmError> {
    check_name(name)?;
    let path = root.join("bin").join(name);
    let recorded = || {
        std::fs::read_to_string(root.join(".crates.toml"))
            .ok()
            .and_then(|t| installed_version(&t, name))
    };
    let found = |cached: bool, build_s: f64| {
        let version = recorded().unwrap_or_else(|| "unknown".into());
        BuiltScheduler {
            name: name.to_string(),
            version,
            path: path.clone(),
            cached,
            build_s,
        }
    };
    let have = recorded();
    if path.is_file() && have.is_some() && (version.is_none() || version == have.as_deref()) {
        return Ok(found(true, 0.0));
    }
    progress(&format!(
        "cargo install {name}{} into {} (minutes: a Rust and BPF build)",
        version.map_or(String::new(), |v| format!(" {v}")),
        root.display()
    ));
    let t0 = Instant::now();
    crate::scx_deps::install(&crate::scx_deps::missing_packages(Path::new("/")), progress)
        .map_err(VmError::Skipped)?;
    cargo_install(root, name, version)?;
    Ok(found(false, t0.elapsed().as_secs_f64()))
}

/// `cargo install --root ROOT NAME [--version V] --locked`, its output
/// kept for the error; libclang from an installed LLVM when unset.
fn cargo_install(root: &Path, name: &str, version: Option<&str>) -> Result<(), VmError> {
    let mut cmd = Command::new("cargo");
    cmd.arg("install").arg("--root").arg(root).arg(name);
    if let Some(v) = version {
        cmd.args(["--version", v]);
    }
    // A build script's error with a backtrace would bury its cause.
    cmd.arg("--locked")
        .stdin(Stdio::null())
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0");
    if std::env::var_os("LIBCLANG_PATH").is_none() {
        if let Some(lib) = installed_libclang() {
            cmd.env("LIBCLANG_PATH", lib);
        }
    }
    // scx's build scripts run `clang` (or $BPF_CLANG) and need a recent
    // one (16+): the newest installed LLVM is named and its bin put first
    // on PATH, whether or not an older `clang` (Debian 12's is 14) is on
    // PATH.
    if std::env::var_os("BPF_CLANG").is_none() {
        if let Some((clang, bin)) = crate::scx_deps::versioned_clang(Path::new("/")) {
            cmd.env("BPF_CLANG", clang);
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = std::iter::once(bin).chain(std::env::split_paths(&path));
            if let Ok(joined) = std::env::join_paths(dirs) {
                cmd.env("PATH", joined);
            }
        }
    }
    let out = cmd.output().map_err(|e| {
        VmError::Skipped(format!(
            "building {name} needs cargo on PATH (rustup.rs): {e}"
        ))
    })?;
    if out.status.success() {
        return Ok(());
    }
    let why = crate::scx_deps::build_error(&String::from_utf8_lossy(&out.stderr));
    Err(VmError::Run(format!(
        "cargo install {name} failed: {why}; it needs clang, libelf-dev, zlib1g-dev, \
         libseccomp-dev and network access to crates.io"
    )))
}

/// The newest `/usr/lib/llvm-N/lib` holding libclang.
fn installed_libclang() -> Option<PathBuf> {
    crate::scx_deps::newest_llvm(Path::new("/"), "lib/libclang.so").map(|d| d.join("lib"))
}

/// The text form: the path, and whether it was built now.
pub fn render(b: &BuiltScheduler) -> String {
    let how = if b.cached {
        "cached".to_string()
    } else {
        format!("built in {:.0} s", b.build_s)
    };
    format!("{} {}: {} ({how})\n", b.name, b.version, b.path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_scx_crates() {
        check_name("scx_bpfland").unwrap();
        check_name("scx_rusty2").unwrap();
        for bad in ["bpfland", "scx_", "scx_Lavd", "scx_../x", "scx-lavd", ""] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_installed_version_comes_from_cargo_s_record() {
        let toml = "[v1]\n\"scx_bpfland 1.1.4 (registry+https://github.com/rust-lang/\
                    crates.io-index)\" = [\"scx_bpfland\"]\n";
        assert_eq!(
            installed_version(toml, "scx_bpfland").as_deref(),
            Some("1.1.4")
        );
        assert_eq!(installed_version(toml, "scx_lavd"), None);
    }

    #[test]
    fn a_cached_scheduler_is_found_without_building() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/scx_lavd"), "").unwrap();
        std::fs::write(
            dir.path().join(".crates.toml"),
            "[v1]\n\"scx_lavd 1.0.9 (registry+x)\" = [\"scx_lavd\"]\n",
        )
        .unwrap();
        let mut heard = Vec::new();
        let b = build(dir.path(), "scx_lavd", None, &mut |s| {
            heard.push(s.to_string())
        })
        .unwrap();
        assert!(b.cached && b.version == "1.0.9", "{b:?}");
        assert_eq!(b.path, dir.path().join("bin/scx_lavd"));
        assert!(heard.is_empty(), "{heard:?}");
        let same = build(dir.path(), "scx_lavd", Some("1.0.9"), &mut |_| {}).unwrap();
        assert!(same.cached);
        assert_eq!(
            render(&same),
            format!("scx_lavd 1.0.9: {} (cached)\n", same.path.display())
        );
    }
}
