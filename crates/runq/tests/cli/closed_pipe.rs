//! `runq X | head -c1`: a reader that goes away is a quiet end for every
//! command that writes to stdout — no panic, no message, exit as usual.

use std::process::Stdio;

use crate::common::runq;

/// Runs `args` with stdout closed by the reader right after the start
/// and returns (exit code, stderr).
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let mut child = runq()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_run_whose_reader_left_ends_quietly() {
    // The report comes after the 0.2 s run, so the pipe is closed by then.
    // On a busy host the run may FAIL or be INDETERMINATE (a spinner kept
    // 2.4 s off its CPU by other tests' workers): a verdict's first line
    // is then all stderr may hold.
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec![
            "run",
            "--work-type",
            "SpinWait",
            "--workers",
            "1",
            "--duration",
            "0.2",
            "--no-cgroups",
        ];
        args.extend_from_slice(extra);
        let (code, err) = with_stdout_closed(&args);
        assert!(matches!(code, Some(0 | 1 | 75)), "{args:?}: {code:?} {err}");
        // A verdict's first line (its evidence block indented under it),
        // and never a complaint about the closed pipe.
        let verdict = |l: &str| l.starts_with("runq: FAIL") || l.starts_with("runq: INDETERMINATE");
        assert!(err.lines().next().is_none_or(verdict), "{args:?}: {err}");
        let later = err.lines().skip(1);
        assert!(
            later.clone().all(|l| l.starts_with("  ")),
            "{args:?}: {err}"
        );
        for l in later {
            assert!(
                !l.contains("Broken pipe") && !l.contains("os error 32"),
                "{err}"
            );
        }
        assert_eq!(err.is_empty(), code == Some(0), "{args:?}: {err}");
    }
}

#[test]
fn listings_and_scripts_end_quietly() {
    for args in [
        &["completions", "bash"][..],
        &["run", "--list"][..],
        &["man"][..],
        &["ctprof", "metric-list"][..],
    ] {
        let (code, err) = with_stdout_closed(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}
