//! Distribution kernels named on `--kernel`: `debian:6.1`, `debian:6.1-rt`,
//! `debian:6.12`, `debian:6.12-rt`. The newest package of the series is
//! found with apt in a private state directory (the host's apt sources and
//! lists are not touched), downloaded once, unpacked with `dpkg-deb -x`
//! under the kernel cache (`boot/vmlinuz-*` beside `lib/modules/*`, where
//! virtme-ng finds the modules) and reused on every later run.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Debian archive the packages come from.
const MIRROR: &str = "http://deb.debian.org/debian";

/// The kernel series runq knows how to fetch.
const SERIES: [(&str, &str); 2] = [("6.1", "bookworm"), ("6.12", "bookworm-backports")];

/// A Debian kernel series and flavour, as named on `--kernel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistroKernel {
    /// The upstream series, `6.1` or `6.12`.
    pub series: String,
    /// The PREEMPT_RT build (`-rt`) rather than the generic one.
    pub rt: bool,
}

/// Why a distribution kernel could not be had.
#[derive(Debug, thiserror::Error)]
pub enum DistroError {
    /// The name is `debian:` with a series or flavour runq does not know.
    #[error(
        "--kernel {name}: {why}; known: debian:6.1, debian:6.1-rt, debian:6.12, debian:6.12-rt"
    )]
    Unknown {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A step of the download failed.
    #[error(
        "--kernel {name}: {step} failed: {detail}; check the network, or give a kernel image path"
    )]
    Fetch {
        /// The name given.
        name: String,
        /// The step (`apt-get update`, `apt-get download`, `dpkg-deb -x`).
        step: &'static str,
        /// What the step said.
        detail: String,
    },
}

impl DistroKernel {
    /// Parses `debian:SERIES[-rt]`; `None` when `text` is not a `debian:`
    /// name (a path, then).
    pub fn parse(text: &str) -> Option<Result<Self, DistroError>> {
        let rest = text.trim().strip_prefix("debian:")?;
        let (series, rt) = match rest.strip_suffix("-rt") {
            Some(s) => (s, true),
            None => (rest, false),
        };
        if !SERIES.iter().any(|(s, _)| *s == series) {
            return Some(Err(DistroError::Unknown {
                name: text.to_string(),
                why: format!("no Debian series {series:?}"),
            }));
        }
        Some(Ok(DistroKernel {
            series: series.to_string(),
            rt,
        }))
    }

    /// The suite whose packages carry this series.
    fn suite(&self) -> &'static str {
        SERIES
            .iter()
            .find(|(s, _)| *s == self.series)
            .map(|(_, suite)| *suite)
            .unwrap_or("bookworm")
    }

    /// The meta-package that depends on the newest image of the flavour.
    fn meta_package(&self) -> &'static str {
        if self.rt {
            "linux-image-rt-amd64"
        } else {
            "linux-image-amd64"
        }
    }

    /// The kernel image of this series, fetched and unpacked under
    /// `cache` the first time.
    pub fn resolve(&self, cache: &Path) -> Result<PathBuf, DistroError> {
        let apt = AptState::prepare(cache, self.suite()).map_err(|e| self.fetch("mkdir", e))?;
        apt.update().map_err(|e| self.fetch("apt-get update", e))?;
        let package = apt
            .newest_image(self.meta_package(), &self.series)
            .map_err(|e| self.fetch("apt-cache depends", e))?;
        let dir = cache.join(&package);
        if let Some(image) = image_in(&dir) {
            return Ok(image);
        }
        let deb = apt
            .download(&package)
            .map_err(|e| self.fetch("apt-get download", e))?;
        unpack(&deb, &dir).map_err(|e| self.fetch("dpkg-deb -x", e))?;
        let _ = fs::remove_file(&deb);
        image_in(&dir)
            .ok_or_else(|| self.fetch("dpkg-deb -x", format!("no boot/vmlinuz-* in {package}")))
    }

    fn fetch(&self, step: &'static str, detail: String) -> DistroError {
        DistroError::Fetch {
            name: self.to_string(),
            step,
            detail,
        }
    }
}

impl fmt::Display for DistroKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "debian:{}{}",
            self.series,
            if self.rt { "-rt" } else { "" }
        )
    }
}

/// The kernel image unpacked in `dir`, if any.
fn image_in(dir: &Path) -> Option<PathBuf> {
    let boot = fs::read_dir(dir.join("boot")).ok()?;
    boot.filter_map(Result::ok).map(|e| e.path()).find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("vmlinuz-"))
    })
}

/// Unpacks `deb` into `dir` through a temporary sibling, so that a cut-off
/// unpack never looks like a cached kernel.
fn unpack(deb: &Path, dir: &Path) -> Result<(), String> {
    let tmp = dir.with_extension("partial");
    let _ = fs::remove_dir_all(&tmp);
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&tmp))?;
    fs::rename(&tmp, dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// apt with its own sources list, lists and download directory.
struct AptState {
    root: PathBuf,
}

impl AptState {
    fn prepare(cache: &Path, suite: &str) -> Result<Self, String> {
        let root = cache.join("apt").join(suite);
        for sub in ["lists/partial", "archives/partial"] {
            fs::create_dir_all(root.join(sub)).map_err(|e| format!("{}: {e}", root.display()))?;
        }
        let mut sources = format!("deb {MIRROR} {suite} main\n");
        if suite == "bookworm" {
            sources.push_str("deb http://deb.debian.org/debian-security bookworm-security main\n");
        }
        fs::write(root.join("sources.list"), sources).map_err(|e| e.to_string())?;
        Ok(AptState { root })
    }

    fn options(&self, cmd: &mut Command) {
        let opt = |k: &str, v: &Path| format!("{k}={}", v.display());
        cmd.arg("-q")
            .arg("-o")
            .arg(opt("Dir::Etc::SourceList", &self.root.join("sources.list")))
            .arg("-o")
            .arg("Dir::Etc::SourceParts=/dev/null")
            .arg("-o")
            .arg(opt("Dir::State::Lists", &self.root.join("lists")))
            .arg("-o")
            .arg(opt("Dir::Cache::Archives", &self.root.join("archives")))
            .arg("-o")
            .arg("APT::Sandbox::User=root");
    }

    fn update(&self) -> Result<(), String> {
        let mut cmd = Command::new("apt-get");
        self.options(&mut cmd);
        run(cmd.arg("update")).map(drop)
    }

    fn newest_image(&self, meta: &str, series: &str) -> Result<String, String> {
        let mut cmd = Command::new("apt-cache");
        self.options(&mut cmd);
        let out = run(cmd.arg("depends").arg(meta))?;
        image_dependency(&out, series)
            .ok_or_else(|| format!("{meta} depends on no linux-image-{series}* package"))
    }

    fn download(&self, package: &str) -> Result<PathBuf, String> {
        let dir = self.root.join("archives");
        let mut cmd = Command::new("apt-get");
        self.options(&mut cmd);
        run(cmd.current_dir(&dir).arg("download").arg(package))?;
        fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{package}_")) && n.ends_with(".deb"))
            })
            .ok_or_else(|| format!("no {package}_*.deb after the download"))
    }
}

/// The image package `apt-cache depends` names for the series, e.g.
/// `linux-image-6.12.95+deb12-rt-amd64` for `6.12`.
fn image_dependency(depends: &str, series: &str) -> Option<String> {
    let prefix = format!("linux-image-{series}.");
    depends.lines().find_map(|line| {
        let name = line.trim().strip_prefix("Depends:")?.trim();
        name.starts_with(&prefix).then(|| name.to_string())
    })
}

/// Runs `cmd`, its stdout on success, its last stderr line on failure.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err
        .lines()
        .last()
        .unwrap_or("no message")
        .trim()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_series_and_flavour() {
        let k = DistroKernel::parse("debian:6.12-rt").unwrap().unwrap();
        assert_eq!((k.series.as_str(), k.rt), ("6.12", true));
        assert_eq!(k.suite(), "bookworm-backports");
        assert_eq!(k.meta_package(), "linux-image-rt-amd64");
        assert_eq!(k.to_string(), "debian:6.12-rt");
        let k = DistroKernel::parse("debian:6.1").unwrap().unwrap();
        assert_eq!(
            (k.series.as_str(), k.rt, k.suite()),
            ("6.1", false, "bookworm")
        );
        assert!(DistroKernel::parse("/boot/vmlinuz-6.1.0-56-amd64").is_none());
        let err = DistroKernel::parse("debian:5.10").unwrap().unwrap_err();
        assert!(
            err.to_string().contains("no Debian series \"5.10\""),
            "{err}"
        );
    }

    #[test]
    fn the_image_dependency_is_read_from_apt_cache_depends() {
        let out = "linux-image-rt-amd64\n  Depends: linux-image-6.12.95+deb12-rt-amd64\n";
        assert_eq!(
            image_dependency(out, "6.12").as_deref(),
            Some("linux-image-6.12.95+deb12-rt-amd64")
        );
        let old = "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n";
        assert_eq!(image_dependency(old, "6.12"), None);
        assert_eq!(
            image_dependency(old, "6.1").as_deref(),
            Some("linux-image-6.1.0-56-amd64")
        );
    }

    #[test]
    fn an_unpacked_kernel_is_found_in_its_boot_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(image_in(dir.path()), None);
        fs::create_dir_all(dir.path().join("boot")).unwrap();
        fs::write(dir.path().join("boot/config-6.1.0-56-amd64"), "").unwrap();
        fs::write(dir.path().join("boot/vmlinuz-6.1.0-56-amd64"), "").unwrap();
        assert_eq!(
            image_in(dir.path()),
            Some(dir.path().join("boot/vmlinuz-6.1.0-56-amd64"))
        );
    }
}
