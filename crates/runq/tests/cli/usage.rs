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
        (&["compare"], "not provided: <A.json>"),
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

/// A matrix's axes given where no matrix runs, or a scenario list whose
/// steps a shortened run would cut, are refused before anything starts.
#[test]
fn matrix_axes_outside_a_matrix_or_cut_by_the_duration_are_refused() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "catalog"],
            "several scenarios are an axis of --vm-matrix",
        ),
        (
            &["run", "steady,mixed_workloads", "--vm"],
            "several scenarios are an axis of --vm-matrix",
        ),
        (
            &["run", "steady", "--scheduler", "a", "--scheduler", "b"],
            "several schedulers are an axis of --vm-matrix",
        ),
        (
            &["run", "catalog", "--vm-matrix", "--duration", "1s"],
            "step at 1s is not before the end of the run (1s) (and ",
        ),
        (
            &[
                "run",
                "steady",
                "--vm-matrix",
                "--scheduler",
                "kernel",
                "--scheduler",
                "/no/scx_x",
            ],
            "--scheduler: scheduler command \"/no/scx_x\"",
        ),
        (
            &["run", "steady,nope", "--vm-matrix"],
            "no scenario file or ready-made scenario \"nope\"",
        ),
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

/// Every command that reads a file a user names refuses a device, a FIFO
/// and a directory at once (a FIFO would block, `/dev/zero` never ends),
/// naming the path and what it is.
#[test]
fn devices_fifos_and_directories_are_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let run_json = dir.path().join("a.json");
    std::fs::write(&run_json, "{}").unwrap();
    let (a, f, d) = (
        run_json.to_str().unwrap(),
        fifo.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    );
    let readers: &[&[&str]] = &[
        &["compare", "/dev/zero", a],
        &["ctprof", "show"],
        &["collatz", "depth-report"],
        &["hud", "--headless", "--replay"],
        &["run"],
    ];
    for reader in readers {
        for (path, what) in [
            ("/dev/zero", "a character device"),
            (f, "a FIFO"),
            (d, "directory"),
        ] {
            let mut args = reader.to_vec();
            if args[0] == "compare" {
                args[1] = path;
            } else {
                args.push(path);
            }
            let started = std::time::Instant::now();
            let err = usage_error(&args);
            assert!(err.contains(path) && err.contains(what), "{args:?}: {err}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "{args:?}"
            );
        }
    }
}

#[test]
fn bad_evidence_settings_are_named() {
    for (args, needle) in [
        (
            &["run", "--overhead-budget", "0"][..],
            "give a share above 0",
        ),
        (
            &["run", "--overhead-budget", "lots"][..],
            "is not a share: give a percentage of one CPU",
        ),
        (&["run", "--overhead-budget", "150%"][..], "at most 100%"),
        (&["run", "--evidence", "fuzzy"][..], "--evidence"),
        (
            &["run", "--evidence", "exact", "--no-recorder"][..],
            "cannot be used with",
        ),
    ] {
        let err = usage_error(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn negative_values_are_named_as_negative() {
    for (args, needle) in [
        (
            &["run", "--workers", "-3"][..],
            "--workers -3: the value is negative",
        ),
        (
            &["run", "--duration", "-1s"][..],
            "--duration -1s: the value is negative",
        ),
    ] {
        let err = usage_error(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_kernel_counter_name_points_at_its_metric() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("s.ctprof.zst");
    std::fs::write(&snap, "x").unwrap();
    let err = usage_error(&[
        "ctprof",
        "show",
        snap.to_str().unwrap(),
        "--metrics",
        "nr_voluntary_switches",
    ]);
    assert!(err.contains("is ctprof's \"voluntary_csw\""), "{err}");
}
