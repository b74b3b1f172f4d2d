//! The evidence files a guest's run wrote (flight-recorder traces, the
//! scheduler's state dumps) into the shared directory, brought to the
//! host's evidence directory once the guest is gone, and the guest's paths
//! in its outputs turned into the host's: the guest's own /tmp lives in
//! the guest's memory and goes with it.

use std::path::{Path, PathBuf};

use crate::guest::guest_evidence;

/// What was brought from a guest's evidence directory.
#[derive(Debug, Default)]
pub struct Brought {
    /// The guest's directory, as its outputs name it.
    from: String,
    /// The host's.
    to: String,
    /// Files copied.
    pub copied: usize,
    /// Files that could not be, one sentence each.
    pub failed: Vec<String>,
}

impl Brought {
    /// `text` with the guest's evidence directory replaced by the host's
    /// (unchanged when no file was copied).
    pub fn rewrite(&self, text: &str) -> String {
        if self.copied == 0 || self.from.is_empty() {
            return text.to_string();
        }
        text.replace(&self.from, &self.to)
    }
}

/// Copies the files of `dir`'s evidence directory into `host_dir`
/// (created when missing).
pub fn bring(dir: &Path, host_dir: &Path) -> Brought {
    let guest = guest_evidence(dir);
    let mut out = Brought {
        from: guest.display().to_string(),
        to: host_dir.display().to_string(),
        ..Brought::default()
    };
    let files: Vec<PathBuf> = std::fs::read_dir(&guest)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    if files.is_empty() {
        return out;
    }
    if let Err(e) = std::fs::create_dir_all(host_dir) {
        out.failed
            .push(format!("creating {}: {e}", host_dir.display()));
        return out;
    }
    for f in files {
        let Some(name) = f.file_name() else { continue };
        match std::fs::copy(&f, host_dir.join(name)) {
            Ok(_) => out.copied += 1,
            Err(e) => out.failed.push(format!(
                "copying {} to {}: {e}",
                f.display(),
                host_dir.display()
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_to_the_host_and_paths_follow_them() {
        let shared = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        let guest = guest_evidence(shared.path());
        std::fs::create_dir_all(&guest).unwrap();
        std::fs::write(guest.join("runq-scheduler-1-let-go-0ms.txt"), "dump").unwrap();
        let to = host.path().join("ev");
        let b = bring(shared.path(), &to);
        assert_eq!((b.copied, b.failed.len()), (1, 0));
        let copied = to.join("runq-scheduler-1-let-go-0ms.txt");
        assert_eq!(std::fs::read_to_string(&copied).unwrap(), "dump");
        let line = format!(
            "evidence: {}/runq-scheduler-1-let-go-0ms.txt",
            guest.display()
        );
        assert_eq!(b.rewrite(&line), format!("evidence: {}", copied.display()));
    }

    #[test]
    fn nothing_written_leaves_the_text_and_creates_no_directory() {
        let shared = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        let to = host.path().join("never");
        let b = bring(shared.path(), &to);
        assert_eq!(b.copied, 0);
        assert!(!to.exists());
        assert_eq!(b.rewrite("a /x/evidence b"), "a /x/evidence b");
    }
}
