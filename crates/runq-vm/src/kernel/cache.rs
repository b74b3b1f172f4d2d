//! Where a kernel build is kept: `<cache root>/<name>-<key>`, the key the
//! first 16 hex digits of the SHA-256 of the source's identity line and
//! the config fragment, so that another source, another version of it or
//! another fragment is another build, and the same ones are found again.

use std::path::{Path, PathBuf};

use super::sha256::hex_digest;

/// The cache root: `$RUNQ_KERNEL_CACHE`, else `~/.cache/runq/kernels`
/// (not under /var/cache: virtme-ng mounts a tmpfs there in the guest,
/// which would hide the schedulers from the run inside the VM).
pub fn root() -> PathBuf {
    if let Some(dir) = std::env::var_os("RUNQ_KERNEL_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/runq/kernels")
}

/// What a build is made of, as its cache key sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The first part of the directory's name: `linux-6.12.117-1_deb12u1`.
    pub name: String,
    /// The line hashed with the fragment: a package's version, or a
    /// tree's path, version and commit.
    pub line: String,
}

impl Identity {
    /// A Debian source package of `version` (`6.12.117-1~deb12u1`).
    pub fn debian(version: &str) -> Identity {
        Identity {
            name: format!("linux-{}", version.replace('~', "_")),
            line: version.to_string(),
        }
    }

    /// A kernel tree at `path` (canonical) of `version`, at git commit
    /// `commit` when it is a git checkout.
    pub fn tree(path: &Path, version: &str, commit: Option<&str>) -> Identity {
        Identity {
            name: format!("linux-{version}-tree"),
            line: format!(
                "tree {} {version} {}",
                path.display(),
                commit.unwrap_or("no-git")
            ),
        }
    }

    /// The cache key of this source built with `fragment`.
    pub fn key(&self, fragment: &str) -> String {
        let mut input = self.line.clone().into_bytes();
        input.push(b'\n');
        input.extend_from_slice(fragment.as_bytes());
        hex_digest(&input)[..16].to_string()
    }

    /// The build's directory under `root`.
    pub fn dir(&self, root: &Path, fragment: &str) -> PathBuf {
        root.join(format!("{}-{}", self.name, self.key(fragment)))
    }
}

/// The files of a finished build in `dir`: its image and the schedulers
/// built with it (sorted by name), or `None` when the build is not
/// complete (no image, or schedulers were asked for and none is there).
pub fn finished(dir: &Path, schedulers: bool) -> Option<(PathBuf, Vec<PathBuf>)> {
    let image = dir.join("bzImage");
    if !image.is_file() {
        return None;
    }
    let mut scx: Vec<PathBuf> = std::fs::read_dir(dir.join("scx"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_executable(p))
        .collect();
    scx.sort();
    if schedulers && scx.is_empty() {
        return None;
    }
    Some((image, scx))
}

/// The image a `--kernel` directory holds: a cached build's `bzImage` or
/// a built tree's `arch/x86/boot/bzImage`.
pub fn image_in(dir: &Path) -> Option<PathBuf> {
    ["bzImage", "arch/x86/boot/bzImage"]
        .iter()
        .map(|p| dir.join(p))
        .find(|p| p.is_file())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key `scripts/sched-ext/build-kernel` gave this package and
    /// fragment (`(echo "$version"; cat kernel.config) | sha256sum`), so
    /// its builds are found again.
    #[test]
    fn the_debian_key_is_the_scripts() {
        let id = Identity::debian("6.12.117-1~deb12u1");
        let frag = include_str!("sched_ext.config");
        assert_eq!(id.key(frag), "d2d856db1b69775e");
        assert_eq!(
            id.dir(Path::new("/c"), frag),
            Path::new("/c/linux-6.12.117-1_deb12u1-d2d856db1b69775e")
        );
    }

    #[test]
    fn another_fragment_version_path_or_commit_is_another_build() {
        let frag = include_str!("sched_ext.config");
        let base = include_str!("base.config");
        let a = Identity::debian("6.12.117-1~deb12u1");
        let b = Identity::debian("6.12.118-1~deb12u1");
        assert_ne!(a.key(frag), a.key(base));
        assert_ne!(a.key(frag), b.key(frag));
        let t = |p: &str, c: Option<&str>| Identity::tree(Path::new(p), "6.15.0", c).key(frag);
        assert_ne!(t("/src/a", None), t("/src/b", None));
        assert_ne!(t("/src/a", Some("1234")), t("/src/a", Some("5678")));
        assert_eq!(t("/src/a", Some("1234")), t("/src/a", Some("1234")));
        assert_eq!(
            Identity::tree(Path::new("/s"), "6.15.0", None).name,
            "linux-6.15.0-tree"
        );
    }

    #[test]
    fn a_build_is_finished_with_its_image_and_schedulers() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(finished(dir.path(), false), None);
        std::fs::write(dir.path().join("bzImage"), "k").unwrap();
        assert!(finished(dir.path(), false).is_some_and(|(_, s)| s.is_empty()));
        assert_eq!(finished(dir.path(), true), None, "schedulers asked for");
        std::fs::create_dir(dir.path().join("scx")).unwrap();
        for name in ["scx_simple", "scx_qmap", "notes.txt"] {
            let p = dir.path().join("scx").join(name);
            std::fs::write(&p, "x").unwrap();
            let mode = if name.ends_with(".txt") { 0o644 } else { 0o755 };
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let (image, scx) = finished(dir.path(), true).unwrap();
        assert_eq!(image, dir.path().join("bzImage"));
        let names: Vec<_> = scx.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["scx_qmap", "scx_simple"]);
        assert_eq!(image_in(dir.path()), Some(image));
    }
}
