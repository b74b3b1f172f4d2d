//! Kernels for scheduler testing, built once and cached (`runq vm kernel
//! build`): virtme-ng's minimal config with a fragment merged onto it
//! (`base.config`, or `sched_ext.config` for sched_ext: BTF, the BPF
//! JIT, `SCHED_CLASS_EXT`, `IKCONFIG_PROC`, `CFS_BANDWIDTH`, `PSI`),
//! `make bzImage`, and with sched_ext the tree's `tools/sched_ext`
//! schedulers, kept under [`cache::root`] in a directory keyed by the
//! source and the fragment.

pub mod cache;
pub mod config;
mod render;
mod sha256;
mod steps;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Serialize;

use crate::VmError;
use cache::Identity;
pub use render::render;

/// What to build from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Debian's `linux-source-<series>` package (its tarball in /usr/src).
    Debian(String),
    /// A kernel tree, built where it is.
    Tree(PathBuf),
}

/// A build asked for.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// The source.
    pub source: Source,
    /// sched_ext on, and tools/sched_ext's schedulers built.
    pub sched_ext: bool,
    /// `make -j`.
    pub jobs: u32,
    /// Where builds are kept.
    pub cache_root: PathBuf,
}

/// One step of a build and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// `unpack`, `config`, `bzImage`, `schedulers`.
    pub name: String,
    /// Wall seconds.
    pub wall_s: f64,
    /// CPU seconds of the step's commands.
    pub cpu_s: f64,
}

/// A scheduler built with the kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scheduler {
    /// Its name (`scx_simple`).
    pub name: String,
    /// Its path in the cache.
    pub path: String,
}

/// `runq vm kernel build --json` (`schemas/vm-kernel-build.schema.json`).
#[derive(Debug, Clone, Serialize)]
pub struct KernelBuild {
    /// `debian linux-source-6.12 6.12.117-1~deb12u1` or `tree /path`.
    pub source: String,
    /// The kernel's version.
    pub version: String,
    /// Whether sched_ext is on.
    pub sched_ext: bool,
    /// The build's cache directory.
    pub cache_dir: String,
    /// Its key: source and fragment hashed.
    pub key: String,
    /// The image to give `--kernel`.
    pub image: String,
    /// The schedulers built with it, by name.
    pub schedulers: Vec<Scheduler>,
    /// Whether it was found built.
    pub cached: bool,
    /// Wall seconds this command took.
    pub wall_s: f64,
    /// What building cost, step by step (empty when cached).
    pub steps: Vec<Step>,
}

impl runq_common::json::JsonDocument for KernelBuild {
    const TOOL: &'static str = "runq vm kernel build";
    const SCHEMA_VERSION: u32 = 1;
}

/// The config fragment of a build.
pub fn fragment(sched_ext: bool) -> &'static str {
    if sched_ext {
        include_str!("sched_ext.config")
    } else {
        include_str!("base.config")
    }
}

/// The symbols that must be on after `make olddefconfig`.
fn must(sched_ext: bool) -> &'static [&'static str] {
    if sched_ext {
        &[
            "SCHED_CLASS_EXT",
            "DEBUG_INFO_BTF",
            "BPF_JIT",
            "IKCONFIG_PROC",
            "CFS_BANDWIDTH",
        ]
    } else {
        &["IKCONFIG_PROC"]
    }
}

/// Where a resolved source's tree comes from.
enum Origin {
    /// A tree, built where it is.
    Tree(PathBuf),
    /// A tarball, unpacked into the build's directory.
    Tarball(PathBuf),
}

/// A source resolved: its identity, description, version and origin.
struct Resolved {
    identity: Identity,
    describe: String,
    version: String,
    origin: Origin,
}

/// Finds the source's version and identity.
fn resolve(source: &Source) -> Result<Resolved, VmError> {
    match source {
        Source::Debian(series) => {
            let ok = series.split('.').count() == 2
                && series
                    .split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                return Err(VmError::Usage(format!(
                    "--debian {series}: give a kernel series as MAJOR.MINOR, e.g. 6.12"
                )));
            }
            let pkg = format!("linux-source-{series}");
            let version = steps::output_of("dpkg-query", &["-W", "-f", "${Version}", &pkg])
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    VmError::Skipped(format!(
                        "--debian {series} needs the package {pkg} (apt-get install {pkg})"
                    ))
                })?;
            Ok(Resolved {
                identity: Identity::debian(&version),
                describe: format!("debian {pkg} {version}"),
                version: version.split('-').next().unwrap_or(&version).to_string(),
                origin: Origin::Tarball(PathBuf::from(format!("/usr/src/{pkg}.tar.xz"))),
            })
        }
        Source::Tree(dir) => resolve_tree(dir),
    }
}

/// A kernel tree's version (top Makefile) and git commit.
fn resolve_tree(dir: &Path) -> Result<Resolved, VmError> {
    let not_tree = || {
        VmError::Usage(format!(
            "--source {}: not a kernel tree (no top Makefile with VERSION and PATCHLEVEL); \
             give the directory of a Linux source checkout",
            dir.display()
        ))
    };
    let canon = dir.canonicalize().map_err(|_| not_tree())?;
    let makefile = std::fs::read_to_string(canon.join("Makefile")).map_err(|_| not_tree())?;
    let version = config::makefile_version(&makefile).ok_or_else(not_tree)?;
    let commit = canon.join(".git").exists().then(|| {
        steps::output_of(
            "git",
            &["-C", &canon.display().to_string(), "rev-parse", "HEAD"],
        )
    });
    Ok(Resolved {
        identity: Identity::tree(&canon, &version, commit.flatten().as_deref()),
        describe: format!("tree {}", canon.display()),
        version,
        origin: Origin::Tree(canon),
    })
}

/// Builds the kernel of `req`, or finds it built: its image and
/// schedulers; `progress` hears of each step as it starts.
pub fn build(req: &BuildRequest, progress: &mut dyn FnMut(&str)) -> Result<KernelBuild, VmError> {
    let t0 = Instant::now();
    let src = resolve(&req.source)?;
    let frag = fragment(req.sched_ext);
    let dir = src.identity.dir(&req.cache_root, frag);
    let mut doc = KernelBuild {
        source: src.describe.clone(),
        version: src.version.clone(),
        sched_ext: req.sched_ext,
        cache_dir: dir.display().to_string(),
        key: src.identity.key(frag),
        image: String::new(),
        schedulers: Vec::new(),
        cached: true,
        wall_s: 0.0,
        steps: Vec::new(),
    };
    if cache::finished(&dir, req.sched_ext).is_none() {
        doc.cached = false;
        doc.steps = build_into(req, &src, &dir, progress)?;
    }
    let (image, scx) = cache::finished(&dir, req.sched_ext)
        .ok_or_else(|| VmError::Run(format!("the build left no image in {}", dir.display())))?;
    doc.image = image.display().to_string();
    doc.schedulers = scx
        .iter()
        .map(|p| Scheduler {
            name: p
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into()),
            path: p.display().to_string(),
        })
        .collect();
    doc.wall_s = steps::round1(t0.elapsed().as_secs_f64());
    Ok(doc)
}

/// Runs the build's steps into `dir`.
fn build_into(
    req: &BuildRequest,
    src: &Resolved,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Step>, VmError> {
    let missing = steps::missing_tools(req.sched_ext);
    if !missing.is_empty() {
        return Err(VmError::Skipped(format!(
            "building a kernel needs {} on PATH (apt-get install build-essential flex bison bc \
             libelf-dev libssl-dev dwarves clang-19 llvm-19 lld-19 cpio zstd; pip install \
             virtme-ng)",
            missing.join(", ")
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| VmError::io(format!("creating {}", dir.display()), e))?;
    let mut done = Vec::new();
    let tree = match &src.origin {
        Origin::Tree(t) => t.clone(),
        Origin::Tarball(tarball) => {
            progress(&format!("unpacking {}", tarball.display()));
            unpack(tarball, dir, &mut done)?
        }
    };
    configure(&tree, req.sched_ext, dir, &mut done, progress)?;
    progress(&format!(
        "make -j{} bzImage (minutes; log {}/make.log)",
        req.jobs,
        dir.display()
    ));
    let mut make = Command::new("make");
    make.current_dir(&tree)
        .arg(format!("-j{}", req.jobs))
        .arg("bzImage");
    done.push(steps::run_logged("bzImage", make, &dir.join("make.log"))?);
    copy(&tree.join("arch/x86/boot/bzImage"), &dir.join("bzImage"))?;
    if req.sched_ext {
        progress("make -C tools/sched_ext (the schedulers)");
        done.push(schedulers(&tree, req.jobs, dir)?);
    }
    Ok(done)
}

/// Unpacks the Debian tarball into `dir/src` (once).
fn unpack(tarball: &Path, dir: &Path, done: &mut Vec<Step>) -> Result<PathBuf, VmError> {
    let src = dir.join("src");
    if src.is_dir() {
        return Ok(src);
    }
    if !tarball.is_file() {
        return Err(VmError::Skipped(format!("no {}", tarball.display())));
    }
    let tmp = dir.join("src.tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)
        .map_err(|e| VmError::io(format!("creating {}", tmp.display()), e))?;
    let mut tar = Command::new("tar");
    tar.arg("-C").arg(&tmp).arg("-xf").arg(tarball);
    done.push(steps::run_logged("unpack", tar, &dir.join("unpack.log"))?);
    let top = std::fs::read_dir(&tmp)
        .ok()
        .and_then(|mut d| d.next())
        .and_then(Result::ok)
        .map(|e| e.path())
        .ok_or_else(|| VmError::Run(format!("{} held no directory", tarball.display())))?;
    std::fs::rename(&top, &src).map_err(|e| VmError::io(format!("moving {}", top.display()), e))?;
    let _ = std::fs::remove_dir(&tmp);
    Ok(src)
}

/// `vng --kconfig`, the fragment merged, `make olddefconfig`, and the
/// symbols that must be on checked; skipped when `.config` has them.
fn configure(
    tree: &Path,
    sched_ext: bool,
    dir: &Path,
    done: &mut Vec<Step>,
    progress: &mut dyn FnMut(&str),
) -> Result<(), VmError> {
    let dot = tree.join(".config");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    if dot.is_file() && config::missing(&read(&dot), must(sched_ext)).is_empty() {
        return Ok(());
    }
    progress("configuring (virtme-ng's minimal config and the fragment)");
    let log = dir.join("kconfig.log");
    let mut vng = Command::new("vng");
    vng.current_dir(tree).arg("--kconfig");
    let first = steps::run_logged("config", vng, &log)?;
    let merged = config::merge(&read(&dot), fragment(sched_ext));
    std::fs::write(&dot, &merged.text)
        .map_err(|e| VmError::io(format!("writing {}", dot.display()), e))?;
    let note = format!("fragment changed: {}\n", merged.changed.join(", "));
    let _ = std::fs::write(dir.join("fragment.log"), note);
    let mut old = Command::new("make");
    old.current_dir(tree).arg("olddefconfig");
    let second = steps::run_logged("config", old, &log)?;
    let lost = config::missing(&read(&dot), must(sched_ext));
    if !lost.is_empty() {
        return Err(VmError::Run(format!(
            "CONFIG_{} did not stay on after make olddefconfig (its dependencies are off); see {}",
            lost.join(", CONFIG_"),
            log.display()
        )));
    }
    done.push(Step {
        name: "config".into(),
        wall_s: steps::round1(first.wall_s + second.wall_s),
        cpu_s: steps::round1(first.cpu_s + second.cpu_s),
    });
    Ok(())
}

/// Builds tools/sched_ext and copies its `scx_*` into `dir/scx`.
fn schedulers(tree: &Path, jobs: u32, dir: &Path) -> Result<Step, VmError> {
    let mut make = Command::new("make");
    make.current_dir(tree)
        .env("PATH", steps::path_with_llvm())
        .args(["-C", "tools/sched_ext"])
        .arg(format!("-j{jobs}"));
    let step = steps::run_logged("schedulers", make, &dir.join("scx.log"))?;
    let out = dir.join("scx");
    std::fs::create_dir_all(&out)
        .map_err(|e| VmError::io(format!("creating {}", out.display()), e))?;
    let bin = tree.join("tools/sched_ext/build/bin");
    let built = std::fs::read_dir(&bin)
        .map_err(|e| VmError::io(format!("reading {}", bin.display()), e))?;
    for entry in built.flatten() {
        if entry.file_name().to_string_lossy().starts_with("scx_") {
            copy(&entry.path(), &out.join(entry.file_name()))?;
        }
    }
    Ok(step)
}

fn copy(from: &Path, to: &Path) -> Result<(), VmError> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| VmError::io(format!("copying {} to {}", from.display(), to.display()), e))
}
