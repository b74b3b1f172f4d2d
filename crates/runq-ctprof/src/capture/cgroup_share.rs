//! When one read of a process's cgroup stands for all its threads.
//!
//! In cgroup v2 every thread of a process sits in the process's cgroup
//! unless that cgroup is part of a threaded subtree (`cgroup.type`
//! `threaded` or `domain threaded`, or a root cgroup with a `threaded`
//! child). A capture reads `/proc/<tid>/cgroup` for one thread of each
//! process and, when that cgroup is a plain domain, gives its path to the
//! process's other threads without reading their files: on a host of a
//! few large thread pools this saves one open, read and close per thread,
//! and the kernel's walk of every hierarchy under its `css_set` lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Whether a v2 cgroup directory holds whole processes only: a `domain`
/// cgroup, or a root (no `cgroup.type`) none of whose children is
/// `threaded`. Anything unreadable or unexpected answers false (read every
/// thread).
pub fn whole_processes(dir: &Path) -> bool {
    match std::fs::read(dir.join("cgroup.type")) {
        Ok(t) => t.trim_ascii() == b"domain",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            dir.join("cgroup.procs").exists() && !has_threaded_child(dir)
        }
        Err(_) => false,
    }
}

/// True when a child of `dir` is a `threaded` cgroup (or cannot be listed).
fn has_threaded_child(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    entries.flatten().any(|e| {
        e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::read(e.path().join("cgroup.type"))
                .is_ok_and(|t| t.trim_ascii() == b"threaded")
    })
}

/// One worker's record of the last process whose cgroup it read, and of
/// which cgroups hold whole processes.
#[derive(Debug, Default)]
pub struct SharedCgroup {
    /// Where the v2 hierarchy is mounted; `None` reads every thread.
    v2_root: Option<PathBuf>,
    /// The process whose thread's cgroup was read last, and its path.
    last: Option<(u32, String)>,
    /// Whether that path holds whole processes, once asked.
    last_whole: Option<bool>,
    /// Answers of [`whole_processes`] by cgroup path.
    known: HashMap<String, bool>,
}

impl SharedCgroup {
    /// A record for a hierarchy mounted at `v2_root`.
    pub fn new(v2_root: Option<PathBuf>) -> Self {
        SharedCgroup {
            v2_root,
            ..SharedCgroup::default()
        }
    }

    /// The cgroup path a thread of `tgid` shares with the process's thread
    /// read before it, when its own file need not be read.
    pub fn shared(&mut self, tgid: u32) -> Option<&str> {
        let (last_tgid, path) = self.last.as_ref()?;
        if *last_tgid != tgid {
            return None;
        }
        let root = self.v2_root.as_deref()?;
        let whole = *self.last_whole.get_or_insert_with(|| {
            *self
                .known
                .entry(path.clone())
                .or_insert_with(|| whole_processes(&root.join(path.trim_start_matches('/'))))
        });
        whole.then_some(path.as_str())
    }

    /// Records the cgroup read from a thread of `tgid`; returns it (a copy
    /// of the last one when the path is the same, without a new parse).
    pub fn read(&mut self, tgid: u32, path: &[u8]) -> String {
        match &mut self.last {
            Some((t, p)) if p.as_bytes() == path => {
                if *t != tgid {
                    *t = tgid;
                    self.last_whole = None;
                }
                p.clone()
            }
            _ => {
                let p = String::from_utf8_lossy(path).into_owned();
                self.last = Some((tgid, p.clone()));
                self.last_whole = None;
                p
            }
        }
    }

    /// Forgets the last process (its thread's cgroup could not be read).
    pub fn unread(&mut self) {
        self.last = None;
        self.last_whole = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cgroup(dir: &Path, kind: Option<&str>) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("cgroup.procs"), "").unwrap();
        if let Some(k) = kind {
            std::fs::write(dir.join("cgroup.type"), format!("{k}\n")).unwrap();
        }
    }

    #[test]
    fn domains_roots_and_threaded_subtrees() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        cgroup(root, None);
        cgroup(&root.join("app"), Some("domain"));
        cgroup(&root.join("pool"), Some("domain threaded"));
        cgroup(&root.join("pool/t1"), Some("threaded"));
        assert!(whole_processes(root));
        assert!(whole_processes(&root.join("app")));
        assert!(!whole_processes(&root.join("pool")));
        assert!(!whole_processes(&root.join("pool/t1")));
        assert!(!whole_processes(&root.join("missing")));
        // A root with a threaded child is a threaded domain.
        cgroup(&root.join("t0"), Some("threaded"));
        assert!(!whole_processes(root));
    }

    #[test]
    fn shares_within_a_process_of_a_domain_only() {
        let d = tempfile::tempdir().unwrap();
        cgroup(&d.path().join("app"), Some("domain"));
        cgroup(&d.path().join("pool"), Some("domain threaded"));
        let mut s = SharedCgroup::new(Some(d.path().to_path_buf()));
        assert_eq!(s.shared(10), None, "nothing read yet");
        assert_eq!(s.read(10, b"/app"), "/app");
        assert_eq!(s.shared(10), Some("/app"));
        assert_eq!(s.shared(11), None, "another process");
        assert_eq!(s.read(11, b"/pool"), "/pool");
        assert_eq!(s.shared(11), None, "a threaded domain");
        assert_eq!(s.read(12, b"/app"), "/app");
        assert_eq!(s.shared(12), Some("/app"));
        s.unread();
        assert_eq!(s.shared(12), None);
        let mut none = SharedCgroup::new(None);
        none.read(10, b"/app");
        assert_eq!(none.shared(10), None, "no v2 mount: read every thread");
    }
}
