//! The directory a VM's guest writes into, shared read-write: its run
//! script, each run's output, the console. Removed at the end unless an
//! error keeps it for its console, and by a guard process when runq dies
//! without removing it.

use std::path::{Path, PathBuf};

use runq_kernel::guard::{Guard, Undo};

use crate::VmError;

/// The directory the guest writes into (shared read-write), removed at
/// the end unless kept for a console a user should read. A guard process
/// holds it too: when runq dies without removing it (SIGKILL), the guard
/// kills the VM's process group and removes the directory.
#[derive(Debug)]
pub(crate) struct SharedDir {
    path: PathBuf,
    kept: std::cell::Cell<bool>,
    guard: Guard,
}

impl SharedDir {
    /// A fresh directory in the temp dir, and its guard.
    pub(crate) fn create() -> Result<Self, VmError> {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("runq-vm-{}-{seq}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir)
            .map_err(|e| VmError::io(format!("creating {}", dir.display()), e))?;
        let guard = Guard::spawn(vec![Undo::remove_tree(&dir)]).map_err(|e| {
            let _ = std::fs::remove_dir(&dir);
            VmError::io("starting the guard process of the VM", e)
        })?;
        Ok(SharedDir {
            path: dir,
            kept: std::cell::Cell::new(false),
            guard,
        })
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The guard a VM's process group announces itself to.
    pub(crate) fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Keeps the directory past this value (its console is named in an
    /// error a user should read).
    pub(crate) fn keep(&self) {
        self.kept.set(true);
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        if !self.kept.get() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
