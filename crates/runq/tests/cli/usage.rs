//! Usage errors across the tools: one line on stderr, exit 2, naming what
//! is missing, with a did-you-mean for a mistyped subcommand at any level.

use crate::common::runq;

fn usage_error(args: &[&str]) -> String {
    let out = runq().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    err
}

#[test]
fn missing_arguments_are_named() {
    let cases: &[(&[&str], &str)] = &[
        (&["ctprof", "capture"], "not provided: --output <PATH>"),
        (&["compare"], "not provided: <A.json>, <B.json>"),
        (
            &["ctprof", "export", "x.ctprof.zst"],
            "not provided: --format <FORMAT>",
        ),
        (&["collatz", "depth-report"], "not provided: <INPUT>"),
    ];
    for (args, needle) in cases {
        let err = usage_error(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn mistyped_subcommands_get_a_suggestion_at_every_level() {
    let cases: &[(&[&str], &str)] = &[
        (&["rn"], "'run'"),
        (&["ctprof", "captur"], "'capture'"),
        (&["collatz", "sweeep"], "did you mean 'sweep'?"),
    ];
    for (args, needle) in cases {
        let err = usage_error(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A number is still CPUS, and a word far from every subcommand is
    // still reported as not a number.
    assert!(usage_error(&["collatz", "lots"]).contains("CPUS \"lots\" is not a number"));
}
