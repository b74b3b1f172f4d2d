//! `runq man`: a roff page for runq and for each command; a closed pipe
//! is a quiet end; an unknown command is a usage error.

use std::io::Read;
use std::process::Stdio;

use crate::common::runq;

#[test]
fn prints_roff_pages_for_runq_and_its_commands() {
    let out = runq().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.contains(".TH runq 1") && page.contains("hud"),
        "{page}"
    );
    let hud = runq().args(["man", "hud"]).output().unwrap();
    let hud = String::from_utf8(hud.stdout).unwrap();
    assert!(
        hud.contains(".TH runq-hud") && hud.contains("unwind"),
        "{hud}"
    );
}

#[test]
fn nested_commands_have_pages_with_examples() {
    let out = runq().args(["man", "ctprof", "compare"]).output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH runq-ctprof-compare 1"), "{page}");
    assert!(page.contains(".SH EXAMPLES\n.nf\n"), "{page}");
    assert!(!page.contains("EXTRA"), "{page}");
    let out = runq().args(["man", "ctprof", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in `runq ctprof`: pick one of"), "{err}");
}

#[test]
fn an_unknown_command_is_a_usage_error() {
    let out = runq().args(["man", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no command \"nope\""), "{err}");
}

#[test]
fn a_closed_pipe_is_a_quiet_end() {
    let mut child = runq()
        .arg("man")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut one = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut one).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
