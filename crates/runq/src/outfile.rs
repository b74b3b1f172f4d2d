//! Files a command will write after long work (`run --output`, `--junit`),
//! checked before the work starts: a path that cannot be written is a run
//! error (exit 3) found in a second, not after a long `--repeat` run.

use std::path::Path;

use crate::exit;

/// Checks that `path` (given with `flag`) can be created or replaced: not
/// a directory, in an existing directory, writable by this process. A file
/// created by the check is removed again, so nothing is left behind if the
/// run ends early.
pub fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    if path.is_dir() {
        return Err(exit::run_error(format!(
            "{flag} {shown}: is a directory; give a file path"
        )));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent.filter(|d| !d.is_dir()) {
        return Err(exit::run_error(format!(
            "{flag} {shown}: the directory {} does not exist",
            dir.display()
        )));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| exit::run_error(format!("{flag} {shown}: cannot write: {e}")))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(e: &anyhow::Error) -> String {
        e.to_string()
    }

    #[test]
    fn bad_paths_are_found_before_the_work() {
        let d = tempfile::tempdir().unwrap();
        let e = check_writable("--output", d.path()).unwrap_err();
        assert!(code(&e).contains("is a directory"), "{e}");
        let e = check_writable("--output", &d.path().join("no/such/x.json")).unwrap_err();
        assert!(code(&e).contains("does not exist"), "{e}");
        let fresh = d.path().join("x.json");
        check_writable("--output", &fresh).unwrap();
        assert!(!fresh.exists(), "the check leaves no file behind");
        std::fs::write(&fresh, "keep").unwrap();
        check_writable("--output", &fresh).unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "keep");
    }
}
