//! The cgroups of one runq run: `runq/<run-id>/<group>` in every hierarchy
//! of the layout, created on demand and removed on every exit path.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::layout::{CgroupLayout, Hierarchy};
use super::limits::CgroupLimits;
use super::CgroupError;

/// The directory, below each hierarchy's root, that holds every runq cgroup.
pub const RUNQ_PARENT: &str = "runq";

/// One group's cgroup: the same relative path in each hierarchy.
#[derive(Debug, Clone)]
pub struct GroupCgroup {
    /// The path relative to the run's directory, e.g. `spin` or `bench/a`.
    pub name: String,
    /// The directory in each hierarchy.
    pub dirs: Vec<(Hierarchy, PathBuf)>,
}

impl GroupCgroup {
    /// The group's directory in the unified hierarchy, if there is one.
    pub fn v2_dir(&self) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(h, _)| h.is_v2())
            .map(|(_, d)| d.as_path())
    }
}

/// All cgroups of one run. Dropping it removes them (deepest first).
#[derive(Debug)]
pub struct RunCgroups {
    layout: CgroupLayout,
    run_id: String,
    groups: Vec<GroupCgroup>,
    /// Every directory created, in creation order.
    created: Vec<PathBuf>,
    /// The relative paths that will hold worker processes: never given
    /// controllers for children (see [`RunCgroups::make_dir`]).
    worker_cgroups: Vec<String>,
}

/// Checks that a user-given group path stays inside runq's own subtree.
pub fn validate_group_path(rel: &str) -> Result<(), CgroupError> {
    let bad = rel.is_empty()
        || rel.starts_with('/')
        || rel
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        || rel.chars().any(|c| c.is_control() || c == '\n');
    if bad {
        Err(CgroupError::InvalidPath(rel.to_string()))
    } else {
        Ok(())
    }
}

fn write_file(path: &Path, value: &str) -> Result<(), CgroupError> {
    fs::write(path, value).map_err(|source| match source.kind() {
        io::ErrorKind::PermissionDenied => CgroupError::Permission {
            path: path.to_path_buf(),
        },
        _ => CgroupError::Rejected {
            path: path.to_path_buf(),
            value: value.to_string(),
            source,
        },
    })
}

impl RunCgroups {
    /// Creates `runq/<run_id>` in every hierarchy of `layout`.
    pub fn create(layout: CgroupLayout, run_id: &str) -> Result<Self, CgroupError> {
        validate_group_path(run_id)?;
        let mut run = RunCgroups {
            layout,
            run_id: run_id.to_string(),
            groups: Vec::new(),
            created: Vec::new(),
            worker_cgroups: Vec::new(),
        };
        let hierarchies = run.layout.hierarchies.clone();
        for h in &hierarchies {
            let parent = h.root.join(RUNQ_PARENT);
            run.make_dir(h, &parent, false, true)?;
            run.make_dir(h, &parent.join(run_id), true, true)?;
        }
        Ok(run)
    }

    /// The run's identifier (`<pid>-<millis>`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The layout the run lives in.
    pub fn layout(&self) -> &CgroupLayout {
        &self.layout
    }

    /// Creates a directory (on v1 cpuset, copying the parent's CPUs and
    /// memory nodes). `track` records it for removal. `interior` marks a
    /// directory that only holds other cgroups: on v2 it enables the limit
    /// controllers for its children. A group's own directory, which holds
    /// workers, never does: a v2 cgroup with processes and threaded
    /// controllers (cpu, cpuset) in its `cgroup.subtree_control` becomes
    /// a thread root, and a child made in it (CgroupChurn's `churn-a`) is
    /// then an invalid domain that refuses processes with EOPNOTSUPP. A
    /// declared cgroup that holds no workers (a parent of weighted
    /// children) is interior as soon as a child is made in it.
    fn make_dir(
        &mut self,
        h: &Hierarchy,
        dir: &Path,
        track: bool,
        interior: bool,
    ) -> Result<(), CgroupError> {
        let new = !dir.exists();
        create_child_cgroup(h, dir)?;
        if track && new {
            self.created.push(dir.to_path_buf());
        }
        if h.is_v2() && interior {
            enable_subtree_controllers(dir);
        }
        Ok(())
    }

    /// Declares that the cgroup `rel` will hold worker processes, so it is
    /// never made interior. Call it for every worker cgroup before
    /// [`RunCgroups::add_group`].
    pub fn expect_workers_in(&mut self, rel: &str) {
        if !self.worker_cgroups.iter().any(|w| w == rel) {
            self.worker_cgroups.push(rel.to_string());
        }
    }

    /// Creates the cgroup `rel` (nested paths allowed) in every hierarchy,
    /// applies `limits`, and returns its index.
    pub fn add_group(&mut self, rel: &str, limits: &CgroupLimits) -> Result<usize, CgroupError> {
        validate_group_path(rel)?;
        if let Some(idx) = self.groups.iter().position(|g| g.name == rel) {
            self.set_limits(idx, limits)?;
            return Ok(idx);
        }
        let mut dirs = Vec::new();
        for h in self.layout.hierarchies.clone() {
            let mut dir = h.root.join(RUNQ_PARENT).join(&self.run_id);
            let parts: Vec<&str> = rel.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                dir.push(part);
                let interior = i + 1 < parts.len() && !self.holds_workers(&parts[..=i]);
                self.make_dir(&h, &dir, true, interior)?;
            }
            dirs.push((h, dir));
        }
        self.groups.push(GroupCgroup {
            name: rel.to_string(),
            dirs,
        });
        let idx = self.groups.len() - 1;
        self.set_limits(idx, limits)?;
        Ok(idx)
    }

    /// True when the cgroup `parts` will hold workers (declared with
    /// [`RunCgroups::expect_workers_in`]).
    fn holds_workers(&self, parts: &[&str]) -> bool {
        let rel = parts.join("/");
        self.worker_cgroups.contains(&rel)
    }

    /// The group at `idx`.
    pub fn group(&self, idx: usize) -> &GroupCgroup {
        &self.groups[idx]
    }

    /// Applies `limits` to group `idx` in every hierarchy that carries them.
    pub fn set_limits(&self, idx: usize, limits: &CgroupLimits) -> Result<(), CgroupError> {
        for (h, dir) in &self.groups[idx].dirs {
            for (file, value) in limits.writes_for(h) {
                let path = dir.join(file);
                if !path.exists() {
                    return Err(missing_limit_file(dir, path, file));
                }
                write_file(&path, &value)?;
            }
        }
        Ok(())
    }

    /// Moves process `pid` into group `idx` in every hierarchy.
    pub fn place(&self, idx: usize, pid: u32) -> Result<(), CgroupError> {
        self.place_except_v1_cpu(idx, pid, false)
    }

    /// Moves process `pid` into group `idx` in every hierarchy but, when
    /// `skip_v1_cpu`, a v1 one carrying cpu (the process stays in the cpu
    /// cgroup it has: see [`super::rt`] for RT workers).
    pub fn place_except_v1_cpu(
        &self,
        idx: usize,
        pid: u32,
        skip_v1_cpu: bool,
    ) -> Result<(), CgroupError> {
        for (h, dir) in &self.groups[idx].dirs {
            if skip_v1_cpu && !h.is_v2() && h.has_controller("cpu") {
                continue;
            }
            write_file(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Moves thread `tid` into group `idx` (v2 threaded mode is not used, so
    /// this only works on v1 hierarchies and is best-effort elsewhere).
    pub fn place_thread(&self, idx: usize, tid: u32) -> Result<(), CgroupError> {
        for (h, dir) in &self.groups[idx].dirs {
            if !h.is_v2() {
                write_file(&dir.join("tasks"), &tid.to_string())?;
            }
        }
        Ok(())
    }

    /// Removes every directory the run created with all it holds (children
    /// made by others, e.g. a worker's own sub-cgroups), killing any
    /// process left in them first. Errors are ignored: this runs on error
    /// paths.
    pub fn remove_all(&mut self) {
        for dir in self.created.iter().rev() {
            remove_tree(dir);
        }
        self.created.clear();
        self.groups.clear();
    }
}

impl Drop for RunCgroups {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// Why the limit file `file` of cgroup `dir` is missing: its controller
/// is not enabled there, or the kernel lacks the file.
fn missing_limit_file(dir: &Path, path: PathBuf, file: &str) -> CgroupError {
    let controller = file.split('.').next().unwrap_or(file).to_string();
    let enabled = fs::read_to_string(dir.join("cgroup.controllers"))
        .unwrap_or_default()
        .split_ascii_whitespace()
        .any(|c| c == controller);
    if enabled {
        CgroupError::KernelLacks { path, controller }
    } else {
        CgroupError::ControllerMissing { path, controller }
    }
}

/// Creates the child cgroup `dir` in `h` if it does not exist yet (an
/// existing one is fine: several tasks may race to create it) and, on a
/// v1 cpuset hierarchy, gives it its parent's CPUs and memory nodes so a
/// task can be moved in.
pub fn create_child_cgroup(h: &Hierarchy, dir: &Path) -> Result<(), CgroupError> {
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(CgroupError::from_io(dir.to_path_buf(), e)),
    }
    if h.has_controller("cpuset") && !h.is_v2() {
        copy_cpuset_from_parent(dir)?;
    }
    Ok(())
}

fn copy_cpuset_from_parent(dir: &Path) -> Result<(), CgroupError> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    for file in ["cpuset.cpus", "cpuset.mems"] {
        let current = fs::read_to_string(dir.join(file)).unwrap_or_default();
        if !current.trim().is_empty() {
            continue;
        }
        let value = fs::read_to_string(parent.join(file))
            .map_err(|e| CgroupError::from_io(parent.join(file), e))?;
        write_file(&dir.join(file), value.trim())?;
    }
    Ok(())
}

/// On v2, lets children use the cpu and cpuset controllers when this
/// directory has them (its parent enables them in its
/// `cgroup.subtree_control`). Best-effort: a host may not delegate them.
fn enable_subtree_controllers(dir: &Path) {
    let Some(parent) = dir.parent() else { return };
    let given = fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
    let wanted: Vec<String> = super::layout::LIMIT_CONTROLLERS
        .iter()
        .filter(|c| {
            given
                .split_ascii_whitespace()
                .any(|g| g.trim_start_matches('+') == **c)
        })
        .map(|c| format!("+{c}"))
        .collect();
    if wanted.is_empty() {
        return;
    }
    let file = dir.join("cgroup.subtree_control");
    if fs::write(&file, wanted.join(" ")).is_err() {
        for one in &wanted {
            let _ = fs::write(&file, one);
        }
    }
}

/// Kills what is left in a cgroup directory and removes it, retrying while
/// the kernel finishes tearing the tasks down.
fn remove_cgroup_dir(dir: &Path) {
    if !dir.exists() {
        return;
    }
    let kill = dir.join("cgroup.kill");
    if !kill.exists() || fs::write(&kill, "1").is_err() {
        for pid in read_pids(dir) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            // EBUSY: tasks are still exiting; anything else will not heal.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(_) => return,
        }
    }
}

fn read_pids(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes run directories left behind by runq processes that no longer
/// exist (e.g. a run killed with SIGKILL). Returns how many were removed.
pub fn cleanup_stale_runs(layout: &CgroupLayout) -> usize {
    let mut removed = 0;
    for (dir, _) in stale_runs(layout) {
        remove_tree(&dir);
        removed += usize::from(!dir.exists());
    }
    removed
}

/// The run directories (`runq/<pid>-<n>`) of every hierarchy whose owner
/// process no longer exists, with the owner's pid.
pub fn stale_runs(layout: &CgroupLayout) -> Vec<(PathBuf, i32)> {
    let mut stale = Vec::new();
    for h in &layout.hierarchies {
        let Ok(entries) = fs::read_dir(h.root.join(RUNQ_PARENT)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let owner = name.split('-').next().and_then(|p| p.parse::<i32>().ok());
            let Some(owner) = owner else { continue };
            if owner <= 0 || pid_alive(owner) || !entry.path().is_dir() {
                continue;
            }
            stale.push((entry.path(), owner));
        }
    }
    stale
}

/// Removes a cgroup subtree, children first, killing what it holds.
pub fn remove_tree(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    remove_cgroup_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_paths_stay_inside() {
        assert!(validate_group_path("spin").is_ok());
        assert!(validate_group_path("bench/a").is_ok());
        for bad in ["", "/abs", "../up", "a/../b", "a//b", "a/", ".", "a\nb"] {
            assert!(validate_group_path(bad).is_err(), "{bad:?} accepted");
        }
    }

    use crate::cgroup::{Hierarchy, HierarchyKind};

    /// A fake v1 cpuset hierarchy in a temp dir (regular files stand in
    /// for the kernel's cgroup files).
    fn fake_cpuset_root() -> (tempfile::TempDir, CgroupLayout) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cpuset.cpus"), "0-3\n").unwrap();
        fs::write(dir.path().join("cpuset.mems"), "0\n").unwrap();
        let layout = CgroupLayout {
            hierarchies: vec![Hierarchy {
                root: dir.path().to_path_buf(),
                kind: HierarchyKind::V1 {
                    controller: "cpuset".into(),
                },
            }],
        };
        (dir, layout)
    }

    #[test]
    fn creates_nested_groups_copies_cpuset_and_places() {
        let (dir, layout) = fake_cpuset_root();
        let mut run = RunCgroups::create(layout, "123-9").unwrap();
        let limits = CgroupLimits {
            cpuset: Some([1, 2].into()),
            ..Default::default()
        };
        let idx = run.add_group("bench/a", &limits).unwrap();
        let group = dir.path().join("runq/123-9/bench/a");
        assert_eq!(run.group(idx).dirs[0].1, group);
        assert_eq!(
            fs::read_to_string(dir.path().join("runq/123-9/bench/cpuset.cpus")).unwrap(),
            "0-3"
        );
        assert_eq!(
            fs::read_to_string(group.join("cpuset.cpus")).unwrap(),
            "1-2"
        );
        assert_eq!(fs::read_to_string(group.join("cpuset.mems")).unwrap(), "0");
        run.place(idx, 4242).unwrap();
        assert_eq!(
            fs::read_to_string(group.join("cgroup.procs")).unwrap(),
            "4242"
        );
        assert_eq!(
            run.add_group("bench/a", &CgroupLimits::default()).unwrap(),
            idx
        );
        assert!(matches!(
            run.add_group("../x", &CgroupLimits::default()),
            Err(CgroupError::InvalidPath(_))
        ));
    }

    /// A fake v2 hierarchy without controllers: directories only, which
    /// `remove_dir` can remove as the kernel removes a cgroup.
    fn fake_v2_root() -> (tempfile::TempDir, CgroupLayout) {
        let dir = tempfile::tempdir().unwrap();
        let layout = CgroupLayout {
            hierarchies: vec![Hierarchy {
                root: dir.path().to_path_buf(),
                kind: HierarchyKind::V2 {
                    controllers: Default::default(),
                },
            }],
        };
        (dir, layout)
    }

    #[test]
    fn v2_controllers_go_to_interior_directories_only() {
        let (dir, layout) = fake_v2_root();
        fs::write(
            dir.path().join("cgroup.subtree_control"),
            "cpuset cpu io memory\n",
        )
        .unwrap();
        let mut run = RunCgroups::create(layout, "78-1").unwrap();
        for workers in ["outer/churn", "flat", "parent/light"] {
            run.expect_workers_in(workers);
        }
        run.add_group("parent", &CgroupLimits::default()).unwrap();
        run.add_group("parent/light", &CgroupLimits::default())
            .unwrap();
        run.add_group("outer/churn", &CgroupLimits::default())
            .unwrap();
        run.add_group("flat", &CgroupLimits::default()).unwrap();
        let subtree = |rel: &str| {
            fs::read_to_string(dir.path().join(rel).join("cgroup.subtree_control")).ok()
        };
        for interior in ["runq", "runq/78-1", "runq/78-1/outer", "runq/78-1/parent"] {
            assert_eq!(
                subtree(interior).as_deref(),
                Some("+cpu +cpuset"),
                "{interior}"
            );
        }
        for group in ["runq/78-1/outer/churn", "runq/78-1/flat"] {
            assert_eq!(
                subtree(group),
                None,
                "{group} holds workers: no controllers below it"
            );
        }
        run.add_group("flat/inner", &CgroupLimits::default())
            .unwrap();
        assert_eq!(
            subtree("runq/78-1/flat"),
            None,
            "a group's directory stays a leaf domain"
        );
    }

    #[test]
    fn a_limit_whose_controller_is_not_enabled_names_the_controller() {
        let (_dir, mut layout) = fake_v2_root();
        layout.hierarchies[0].kind = HierarchyKind::V2 {
            controllers: ["cpu".to_string()].into_iter().collect(),
        };
        let mut run = RunCgroups::create(layout, "79-1").unwrap();
        let weight = CgroupLimits {
            weight: Some(400),
            ..Default::default()
        };
        let err = run.add_group("heavy", &weight).unwrap_err();
        assert!(
            matches!(&err, CgroupError::ControllerMissing { controller, .. } if controller == "cpu"),
            "{err}"
        );
        assert!(err.to_string().contains("+cpu"), "{err}");
    }

    #[test]
    fn a_limit_file_the_kernel_lacks_is_told_from_a_disabled_controller() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cgroup.controllers"), "cpuset cpu io\n").unwrap();
        let path = dir.path().join("cpu.max");
        let err = missing_limit_file(dir.path(), path, "cpu.max");
        assert!(
            matches!(&err, CgroupError::KernelLacks { controller, .. } if controller == "cpu"),
            "{err}"
        );
        assert!(err.to_string().contains("CONFIG_CFS_BANDWIDTH"), "{err}");
    }

    #[test]
    fn removal_takes_children_the_run_did_not_create() {
        let (dir, layout) = fake_v2_root();
        let mut run = RunCgroups::create(layout, "77-1").unwrap();
        run.add_group("nest/churn", &CgroupLimits::default())
            .unwrap();
        run.add_group("steady", &CgroupLimits::default()).unwrap();
        let group = dir.path().join("runq/77-1/nest/churn");
        for child in ["churn-a", "churn-b/deeper"] {
            fs::create_dir_all(group.join(child)).unwrap();
        }
        run.remove_all();
        assert!(!dir.path().join("runq/77-1").exists());
        assert!(dir.path().join("runq").exists(), "the shared parent stays");
    }

    #[test]
    fn stale_runs_of_dead_owners_are_removed() {
        let (dir, layout) = fake_cpuset_root();
        let dead = format!("{}-1", i32::MAX - 1);
        let live = format!("{}-1", std::process::id());
        for name in [&dead, &live, &"not-a-run".to_string()] {
            fs::create_dir_all(dir.path().join("runq").join(name).join("g")).unwrap();
        }
        assert_eq!(cleanup_stale_runs(&layout), 1);
        assert!(!dir.path().join("runq").join(&dead).exists());
        assert!(dir.path().join("runq").join(&live).exists());
        assert!(dir.path().join("runq/not-a-run").exists());
    }

    #[test]
    fn pid_one_is_alive_and_huge_pid_is_not() {
        assert!(pid_alive(1));
        assert!(!pid_alive(i32::MAX - 1));
    }
}
