//! What a runq that was killed before it could clean up left on the host:
//! tracefs instances (`instances/runq-<pid>-<n>`, which may still be
//! recording every CPU) and run cgroups (`runq/<pid>-<n>`) whose owner
//! process is gone. Every runq run as root sweeps them at its start
//! (named with `-v`), and `runq clean` lists and removes them.

use std::path::{Path, PathBuf};

use crate::cgroup::{remove_tree, stale_runs, CgroupLayout};
use crate::sched_trace::{remove_instance, stale_instances};

/// What kind of state was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftoverKind {
    /// A tracefs instance of the flight recorder or the sched_ext dump.
    TracefsInstance,
    /// A run's cgroup directory.
    RunCgroup,
}

impl LeftoverKind {
    /// The kind in words.
    pub fn describe(self) -> &'static str {
        match self {
            LeftoverKind::TracefsInstance => "tracefs instance",
            LeftoverKind::RunCgroup => "run cgroup",
        }
    }
}

/// One piece of state whose owner is gone.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Leftover {
    /// What it is.
    pub kind: LeftoverKind,
    /// Where it is.
    pub path: PathBuf,
    /// The pid of the runq that made it (no longer running).
    pub owner: u32,
    /// For a tracefs instance: whether it is still recording.
    pub tracing: bool,
}

/// Finds what dead runq processes left: instances under the tracefs
/// mounted at `tracefs` (none is mounted for this) and run directories in
/// every hierarchy of `layout`.
pub fn find(tracefs: Option<&Path>, layout: Option<&CgroupLayout>) -> Vec<Leftover> {
    let mut found: Vec<Leftover> = tracefs
        .map(|root| stale_instances(&root.join("instances")))
        .unwrap_or_default()
        .into_iter()
        .map(|(path, owner)| Leftover {
            kind: LeftoverKind::TracefsInstance,
            tracing: std::fs::read_to_string(path.join("tracing_on"))
                .is_ok_and(|v| v.trim() == "1"),
            path,
            owner,
        })
        .collect();
    found.extend(
        layout
            .map(stale_runs)
            .unwrap_or_default()
            .into_iter()
            .map(|(path, owner)| Leftover {
                kind: LeftoverKind::RunCgroup,
                path,
                owner: owner as u32,
                tracing: false,
            }),
    );
    found
}

/// Finds the leftovers on this host (tracefs only where it is mounted).
pub fn find_on_host() -> Vec<Leftover> {
    let layout = CgroupLayout::detect().ok();
    find(crate::tracefs::find().as_deref(), layout.as_ref())
}

/// Removes one leftover (a cgroup with what it still holds); true when it
/// is gone.
pub fn remove(leftover: &Leftover) -> bool {
    match leftover.kind {
        LeftoverKind::TracefsInstance => remove_instance(&leftover.path),
        LeftoverKind::RunCgroup => remove_tree(&leftover.path),
    }
    !leftover.path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has (above the kernel's pid_max ceiling).
    const DEAD: u32 = 4_194_305;

    #[test]
    fn leftovers_of_dead_owners_are_found_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let instances = dir.path().join("instances");
        let dead = instances.join(format!("runq-{DEAD}-0"));
        let live = instances.join(format!("runq-{}-0", std::process::id()));
        for d in [&dead, &live, &instances.join("someone-else")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(dead.join("tracing_on"), "1\n").unwrap();
        let found = find(Some(dir.path()), None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, LeftoverKind::TracefsInstance);
        assert_eq!(found[0].owner, DEAD);
        assert!(found[0].tracing);
        // A real instance's files go with its directory; this fake's stay,
        // so only the turning off can be seen.
        assert!(!remove(&found[0]));
        assert_eq!(
            std::fs::read_to_string(dead.join("tracing_on")).unwrap(),
            "0"
        );
        assert!(live.exists());
    }
}
