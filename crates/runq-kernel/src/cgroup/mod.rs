//! cgroup filesystems: where they are mounted (v2, v1, or both on hybrid
//! hosts), and the directories runq creates, fills and removes in them.

mod layout;
mod limits;
mod mountinfo;
pub mod pids;
pub mod rt;
mod run_tree;

pub use layout::{CgroupLayout, Hierarchy, HierarchyKind};
pub use limits::{CgroupLimits, UNLIMITED};
pub use mountinfo::{parse_mountinfo, CgroupMount};
pub use run_tree::{
    cleanup_stale_runs, create_child_cgroup, remove_tree, stale_runs, validate_group_path,
    GroupCgroup, RunCgroups, RUNQ_PARENT,
};

use std::io;
use std::path::PathBuf;

/// Errors from cgroup operations; each names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// The caller may not create or write cgroups (not root, no delegation).
    #[error(
        "permission denied on {path}: creating cgroups needs root or a delegated cgroup subtree"
    )]
    Permission {
        /// The directory or file that was refused.
        path: PathBuf,
    },
    /// No cgroup filesystem is mounted where runq can use it.
    #[error("no usable cgroup filesystem is mounted (looked in /proc/self/mountinfo)")]
    NotMounted,
    /// A value written to a cgroup file was rejected by the kernel.
    #[error("kernel rejected {value:?} for {path}: {source}")]
    Rejected {
        /// The file written.
        path: PathBuf,
        /// The value written.
        value: String,
        /// The kernel's error.
        source: io::Error,
    },
    /// A limit file is absent: its controller is not enabled for this
    /// cgroup (the parent's `cgroup.subtree_control` lacks it).
    #[error(
        "{path} does not exist: the {controller} controller is not enabled for this cgroup \
         (its parent's cgroup.subtree_control lacks +{controller}; on cgroup v2 a cgroup that \
         holds workers cannot also hand controllers to child cgroups)"
    )]
    ControllerMissing {
        /// The limit file that was wanted.
        path: PathBuf,
        /// The controller that provides it (the file name's prefix).
        controller: String,
    },
    /// A limit file is absent although its controller is enabled: the
    /// kernel was built without the option behind it.
    #[error(
        "{path} does not exist although the {controller} controller is enabled: this kernel \
         was built without it (cpu.max needs CONFIG_CFS_BANDWIDTH, cpu.weight \
         CONFIG_FAIR_GROUP_SCHED); run on a kernel that has it or drop that limit"
    )]
    KernelLacks {
        /// The limit file that was wanted.
        path: PathBuf,
        /// The controller that would provide it.
        controller: String,
    },
    /// A group name that would leave runq's own subtree.
    #[error("invalid cgroup path {0:?}: use a relative name such as `bench/a` (no `..`, no leading `/`)")]
    InvalidPath(String),
    /// Any other I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl CgroupError {
    /// Classifies an I/O error on `path`.
    pub(crate) fn from_io(path: PathBuf, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::PermissionDenied => CgroupError::Permission { path },
            _ if source.raw_os_error() == Some(libc::EROFS) => CgroupError::Permission { path },
            _ => CgroupError::Io { path, source },
        }
    }

    /// True when the error means "not allowed" rather than "broken".
    pub fn is_permission(&self) -> bool {
        matches!(self, CgroupError::Permission { .. })
    }
}
