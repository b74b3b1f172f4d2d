//! What a crates.io sched_ext scheduler's build needs from the host, and
//! what its failure said. scx's build scripts run `clang` by that name
//! (or `$BPF_CLANG`), link libelf and zlib, and some (scx_rustland) need
//! libseccomp: a host with only a versioned clang (clang-19, as the
//! kernel build installs it) gets `BPF_CLANG` and that LLVM's bin first on
//! `PATH`; missing headers are installed from Debian's packages as root,
//! or named. A failed build is quoted by its build script's own error, not
//! cargo's closing "failed to compile" lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The headers a scheduler's build links against, with the Debian package
/// that ships each.
pub const HEADERS: [(&str, &str); 3] = [
    ("/usr/include/libelf.h", "libelf-dev"),
    ("/usr/include/zlib.h", "zlib1g-dev"),
    ("/usr/include/seccomp.h", "libseccomp-dev"),
];

/// The oldest LLVM whose clang builds scx's BPF programs.
const MIN_LLVM: u32 = 16;
/// The package that brings one (as the kernel build installs it).
const CLANG_PACKAGE: &str = "clang-19";

/// The packages missing under `root` (`/` on a host): those of missing
/// headers, and a clang when no `/usr/lib/llvm-N` (N at least 16) has one.
pub fn missing_packages(root: &Path) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = HEADERS
        .iter()
        .filter(|(h, _)| !root.join(h.trim_start_matches('/')).exists())
        .map(|&(_, pkg)| pkg)
        .collect();
    let recent = newest_llvm_version(root, "bin/clang").is_some_and(|n| n >= MIN_LLVM);
    if !recent {
        out.push(CLANG_PACKAGE);
    }
    out
}

/// Installs `packages` with apt-get as root; otherwise (or when it fails)
/// says which to install.
pub fn install(packages: &[&str], progress: &mut dyn FnMut(&str)) -> Result<(), String> {
    if packages.is_empty() {
        return Ok(());
    }
    let wanted = packages.join(" ");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || crate::launch::which("apt-get").is_none() {
        return Err(format!(
            "the build needs {wanted}: install them (apt-get install {wanted})"
        ));
    }
    progress(&format!(
        "apt-get install {wanted} (the scheduler's build needs them)"
    ));
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| {
                o.status.success().then_some(()).ok_or_else(|| {
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                        .to_string()
                })
            })
    };
    apt(&["update", "-qq"])
        .and_then(|()| apt(&[&["install", "-y", "-qq"][..], packages].concat()))
        .map_err(|e| format!("apt-get install {wanted} failed ({e}); install them by hand"))
}

/// The clang a build script should run, as `BPF_CLANG`, and the LLVM bin
/// directory to put first on `PATH`: the newest
/// `/usr/lib/llvm-N/bin/clang` under `root`.
pub fn versioned_clang(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let bin = newest_llvm(root, "bin/clang")?.join("bin");
    Some((bin.join("clang"), bin))
}

/// The newest `usr/lib/llvm-N` under `root` that holds `file` (a path
/// inside it, such as `bin/clang` or `lib/libclang.so`).
pub fn newest_llvm(root: &Path, file: &str) -> Option<PathBuf> {
    installed_llvms(root, file).pop().map(|(_, dir)| dir)
}

/// The version of [`newest_llvm`].
fn newest_llvm_version(root: &Path, file: &str) -> Option<u32> {
    installed_llvms(root, file).pop().map(|(n, _)| n)
}

/// Every `usr/lib/llvm-N` under `root` holding `file`, oldest first.
fn installed_llvms(root: &Path, file: &str) -> Vec<(u32, PathBuf)> {
    let Ok(dir) = std::fs::read_dir(root.join("usr/lib")) else {
        return Vec::new();
    };
    let mut found: Vec<(u32, PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let n = e
                .file_name()
                .to_str()?
                .strip_prefix("llvm-")?
                .parse()
                .ok()?;
            e.path().join(file).is_file().then(|| (n, e.path()))
        })
        .collect();
    found.sort();
    found
}

/// The error a failed `cargo install` met, in one line: the first line
/// of a build script's own output that says error (what it ran and why
/// it failed), else cargo's first `error:` line that is not its closing
/// "failed to compile", else its last line.
pub fn build_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    let script = lines
        .iter()
        .skip_while(|l| !l.starts_with("--- stderr") && !l.starts_with("--- stdout"))
        .find(|l| {
            let low = l.to_ascii_lowercase();
            (low.contains("error") || low.contains("not found") || low.contains("no such file"))
                && !l.starts_with("---")
                && !is_backtrace_line(l)
        });
    let cargo = lines.iter().find(|l| {
        l.starts_with("error")
            && !l.contains("failed to compile")
            && !l.contains("could not compile")
    });
    script
        .or(cargo)
        .or(lines.iter().rev().find(|l| !l.is_empty()))
        .map_or_else(|| "no error line".to_string(), |l| l.to_string())
}

/// A line of a backtrace (`0: anyhow::error::...`, `at /path/x.rs:3:5`,
/// `Stack backtrace:`): the frames name functions, never the cause.
fn is_backtrace_line(line: &str) -> bool {
    let frame = line
        .split_once(": ")
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    frame || line.starts_with("at ") || line.eq_ignore_ascii_case("stack backtrace:")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cargo's output when scx_utils' build script found no `clang`: the
    /// script's own line is quoted, not cargo's closing lines.
    #[test]
    fn the_build_scripts_own_error_is_quoted() {
        let stderr = "   Compiling scx_utils v1.0.17\n\
            error: failed to run custom build command for `scx_utils v1.0.17`\n\n\
            Caused by:\n  process didn't exit successfully: `/tmp/build-script-build` (exit status: 101)\n\
              --- stdout\n  cargo:rerun-if-env-changed=BPF_CLANG\n\n\
              --- stderr\n  thread 'main' panicked at build.rs:88:\n  \
            Failed to run clang: No such file or directory (os error 2)\n\
            warning: build failed, waiting for other jobs to finish...\n\
            error: failed to compile `scx_bpfland v1.0.17`, intermediate artifacts can be found at `/tmp/x`.\n";
        assert_eq!(
            build_error(stderr),
            "Failed to run clang: No such file or directory (os error 2)"
        );
        let plain = "error: could not find `scx_nope` in registry `crates-io` with version `*`\n";
        assert_eq!(
            build_error(plain),
            "error: could not find `scx_nope` in registry `crates-io` with version `*`"
        );
    }

    /// A build script's anyhow error with RUST_BACKTRACE=1: the frames
    /// that mention `anyhow::error` are skipped for the error itself.
    #[test]
    fn backtrace_frames_are_not_the_error() {
        let stderr = "  --- stderr\n  Stack backtrace:\n     \
            0: anyhow::error::<impl anyhow::Error>::msg\n             \
            at /root/.cargo/registry/src/anyhow-1.0.98/src/error.rs:83:36\n  \
            Error: Failed to generate vmlinux.h: bpftool not found\n";
        assert_eq!(
            build_error(stderr),
            "Error: Failed to generate vmlinux.h: bpftool not found"
        );
    }

    #[test]
    fn missing_headers_name_their_packages() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("usr/include")).unwrap();
        std::fs::write(root.path().join("usr/include/zlib.h"), "").unwrap();
        let clang = |n: &str| {
            let bin = root.path().join(format!("usr/lib/llvm-{n}/bin"));
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join("clang"), "").unwrap();
        };
        // Debian 12's own clang is 14: too old for scx's BPF programs.
        clang("14");
        assert_eq!(
            missing_packages(root.path()),
            ["libelf-dev", "libseccomp-dev", "clang-19"]
        );
        clang("16");
        assert_eq!(
            missing_packages(root.path()),
            ["libelf-dev", "libseccomp-dev"]
        );
    }

    #[test]
    fn the_newest_versioned_clang_is_found() {
        let root = tempfile::tempdir().unwrap();
        for n in ["14", "19"] {
            let bin = root.path().join(format!("usr/lib/llvm-{n}/bin"));
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join("clang"), "").unwrap();
        }
        let (clang, bin) = versioned_clang(root.path()).unwrap();
        assert_eq!(clang, root.path().join("usr/lib/llvm-19/bin/clang"));
        assert_eq!(bin, root.path().join("usr/lib/llvm-19/bin"));
        assert!(versioned_clang(&root.path().join("none")).is_none());
    }
}
