//! Files a command will write after long work (`run --output`, `--junit`),
//! checked before the work starts: a path that cannot be written is a
//! usage error (exit 2, as in every tool) found in a second, not after a
//! long `--repeat` run.

use std::path::Path;

use runq_common::safefile::{check_destination, same_destination, Replace};

use crate::exit;

/// Checks every output a command was given, before its work: each can be
/// written (see [`check_writable`]), and no two name one file.
pub fn check_outputs(outputs: &[(&str, Option<&Path>)]) -> anyhow::Result<()> {
    let given: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|(flag, p)| p.map(|p| (*flag, p)))
        .collect();
    for (flag, path) in &given {
        check_writable(flag, path)?;
    }
    if let Some((a, b)) = same_destination(&given) {
        return Err(exit::usage(format!(
            "{a} and {b} name the same file; give each output its own path"
        )));
    }
    Ok(())
}

/// Checks that `path` (given with `flag`) can be created or replaced: not
/// a directory or a symlink (root never writes through one), in an
/// existing directory that this process can write. Creates nothing.
pub fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent.filter(|d| !d.is_dir()) {
        return Err(exit::usage(format!(
            "{flag} {shown}: the directory {} does not exist; create it first",
            dir.display()
        )));
    }
    check_destination(path, Replace::OwnFile).map_err(|e| {
        let text = e.to_string();
        // The safe writer's own messages already name the path.
        if text.starts_with(&shown.to_string()) {
            exit::usage(format!("{flag} {text}"))
        } else {
            exit::usage(format!("{flag} {shown}: cannot write: {text}"))
        }
    })
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

    #[test]
    fn symlinks_are_refused_before_the_work() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = d.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = check_writable("--output", &link).unwrap_err();
        assert!(code(&e).contains("is a symlink"), "{e}");
        let dangling = d.path().join("dangling.xml");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &dangling).unwrap();
        let e = check_writable("--junit", &dangling).unwrap_err();
        assert!(code(&e).starts_with("--junit "), "{e}");
        assert!(!d.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn two_outputs_on_one_path_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("x");
        let b = d.path().join(".").join("x");
        let e = check_outputs(&[("--output", Some(&a)), ("--junit", Some(&b))]).unwrap_err();
        assert!(
            code(&e).contains("--output and --junit name the same file"),
            "{e}"
        );
        let c = d.path().join("y");
        check_outputs(&[("--output", Some(&a)), ("--junit", Some(&c)), ("--x", None)]).unwrap();
    }
}
