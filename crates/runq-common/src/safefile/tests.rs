use super::*;

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn symlink_at_destination_is_refused_and_target_untouched() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let dest = d.path().join("snap.ctprof.zst");
    std::os::unix::fs::symlink(&victim, &dest).unwrap();
    for replace in [Replace::OwnFile, Replace::Never] {
        let e = write_atomic(&dest, b"attacker-controlled write", replace).unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&dest)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            entries(d.path()),
            ["snap.ctprof.zst", "victim"],
            "no temp file left"
        );
    }
}

#[test]
fn dangling_symlink_is_refused_and_not_created() {
    let d = tempfile::tempdir().unwrap();
    let dest = d.path().join("out.prom");
    let target = d.path().join("would-be-created");
    std::os::unix::fs::symlink(&target, &dest).unwrap();
    assert!(write_atomic(&dest, b"x", Replace::OwnFile).is_err());
    assert!(!target.exists());
}

#[test]
fn replaces_own_file_atomically_and_never_mode_refuses() {
    let d = tempfile::tempdir().unwrap();
    let dest = d.path().join("a");
    write_atomic(&dest, b"one", Replace::OwnFile).unwrap();
    write_atomic(&dest, b"two", Replace::OwnFile).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"two");
    let e = write_atomic(&dest, b"three", Replace::Never).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read(&dest).unwrap(), b"two");
    assert_eq!(entries(d.path()), ["a"]);
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn another_users_file_is_not_replaced() {
    let d = tempfile::tempdir().unwrap();
    let dest = d.path().join("theirs");
    std::fs::write(&dest, "theirs\n").unwrap();
    std::os::unix::fs::chown(&dest, Some(65534), Some(65534)).unwrap();
    let e = write_atomic(&dest, b"mine", Replace::OwnFile).unwrap_err();
    assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "theirs\n");
    assert_eq!(entries(d.path()), ["theirs"]);
}
