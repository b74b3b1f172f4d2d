//! Scenario file parsing: good files, and bad ones located to line and key.

use super::*;

fn parse(text: &str) -> Result<Scenario, ScenarioFileError> {
    parse_scenario(Path::new("t.toml"), text)
}

const GOOD: &str = r#"
name = "demo"
duration = "2s"

[checks]
max_gap_ms = 500
disable = ["min_numa_locality"]

[[cgroup]]
name = "a"
cpuset = "0"
cpu_max = "50%"
weight = 200

[[group]]
name = "spin"
work_type = "SpinWait"
workers = 2
cgroup = "a"
policy = "batch"
nice = 3

[[group]]
name = "pipes"
work_type = "PipeIo"
params = { burst_iters = 0 }
workers = 2
affinity = "random:1"
deferred = true

[[step]]
at = "500ms"
add_group = "pipes"

[[step]]
at = 1
cgroup = "a"
weight = 50
"#;

#[test]
fn parses_a_full_file() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.name, "demo");
    assert_eq!(s.duration, Duration::from_secs(2));
    assert_eq!(s.checks.max_gap_ms, Some(500));
    assert_eq!(s.cgroups[0].limits.cpu_max, Some((50_000, 100_000)));
    assert_eq!(s.cgroups[0].limits.weight, Some(200));
    assert_eq!(s.groups.len(), 2);
    assert_eq!(s.groups[0].setup.nice, Some(3));
    assert!(s.groups[1].deferred);
    assert_eq!(s.groups[1].work.with_params(&[]).unwrap(), s.groups[1].work);
    assert_eq!(s.steps.len(), 2);
    assert_eq!(s.steps[0].action, StepAction::AddGroup("pipes".into()));
}

fn err_of(text: &str) -> ScenarioFileError {
    parse(text).expect_err("should fail")
}

#[test]
fn unknown_key_names_line() {
    let e = err_of("duration = \"1s\"\n[[group]]\nname = \"a\"\nwork_type = \"SpinWait\"\nworkers = 1\nspeed = 3\n");
    assert!(e.line >= 2, "{e}");
    assert!(e.to_string().contains("unknown field `speed`"), "{e}");
    assert!(e.to_string().starts_with("t.toml:"), "{e}");
}

#[test]
fn wrong_type_names_line() {
    let e = err_of(
        "duration = \"1s\"\n[[group]]\nname = \"a\"\nwork_type = \"SpinWait\"\nworkers = \"two\"\n",
    );
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn impossible_cpuset_names_line_and_key() {
    let e = err_of("duration = \"1s\"\n[[cgroup]]\nname = \"a\"\ncpuset = \"0-4095\"\n[[group]]\nname = \"g\"\nwork_type = \"SpinWait\"\nworkers = 1\n");
    assert_eq!((e.line, e.key.as_deref()), (4, Some("cpuset")), "{e}");
    assert!(e.message.contains("not all online"), "{e}");
}

#[test]
fn negative_and_zero_durations() {
    for d in ["\"-1s\"", "-1", "0", "\"soon\""] {
        let e = err_of(&format!(
            "\n\nduration = {d}\n[[group]]\nname = \"g\"\nwork_type = \"SpinWait\"\nworkers = 1\n"
        ));
        assert_eq!(
            (e.line, e.key.as_deref()),
            (3, Some("duration")),
            "{d}: {e}"
        );
    }
}

#[test]
fn bad_work_type_and_workers() {
    let e =
        err_of("duration = 1\n[[group]]\nname = \"g\"\nwork_type = \"SpinWiat\"\nworkers = 1\n");
    assert_eq!((e.line, e.key.as_deref()), (4, Some("work_type")));
    assert!(e.message.contains("did you mean SpinWait"));
    let e = err_of("duration = 1\n[[group]]\nname = \"g\"\nwork_type = \"PipeIo\"\nworkers = -2\n");
    assert_eq!((e.line, e.key.as_deref()), (5, Some("workers")));
}

#[test]
fn semantic_errors_name_the_file() {
    let e = err_of("duration = 1\n[[group]]\nname = \"g\"\nwork_type = \"SpinWait\"\nworkers = 1\n[[step]]\nat = \"5s\"\nremove_group = \"g\"\n");
    assert!(e.to_string().starts_with("t.toml:"), "{e}");
    assert!(e.message.contains("before the end"), "{e}");
}

const TYPO: &str = r#"duration = "1s"

[[cgroup]]
name = "interactive"
weight = 200

[[group]]
name = "ui"
work_type = "SpinWait"
workers = 1
cgroup = "intractive"
"#;

#[test]
fn a_mistyped_cgroup_is_an_error_at_its_line_with_a_suggestion() {
    let e = parse(TYPO).unwrap_err();
    assert_eq!(e.line, 11, "{e}");
    assert!(e.message.contains("unknown cgroup \"intractive\""), "{e}");
    assert!(e.message.contains("did you mean \"interactive\"?"), "{e}");
}

#[test]
fn an_undeclared_cgroup_says_how_to_declare_it() {
    let text = TYPO.replace("[[cgroup]]\nname = \"interactive\"\nweight = 200\n", "");
    let e = parse(&text).unwrap_err();
    assert!(
        e.message.contains("declare it in a [[cgroup]] table"),
        "{e}"
    );
}

#[test]
fn steps_name_declared_groups_and_cgroups() {
    let fixed = TYPO.replace("\"intractive\"", "\"interactive\"");
    let step = |body: &str| format!("{fixed}\n[[step]]\nat = \"500ms\"\n{body}\n");
    let e = parse(&step("remove_group = \"iu\"")).unwrap_err();
    assert_eq!(e.line, 15, "{e}");
    assert!(
        e.message
            .contains("unknown group \"iu\" (did you mean \"ui\"?)"),
        "{e}"
    );
    let e = parse(&step("cgroup = \"interactiv\"\nweight = 50")).unwrap_err();
    assert!(e.message.contains("did you mean \"interactive\"?"), "{e}");
    assert!(parse(&step("cgroup = \"interactive\"\nweight = 50")).is_ok());
}

#[test]
fn rules_checked_after_parsing_point_at_their_group() {
    let text = TYPO
        .replace("\"intractive\"", "\"interactive\"")
        .replace("workers = 1", "workers = 1\nclone_mode = \"thread\"");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("cannot have their own cgroup"), "{e}");
    assert_eq!(e.line, 8, "the group's name line: {e}");
}

#[test]
fn sequence_phases_are_written_in_toml() {
    let text = r#"duration = "1s"

[[group]]
name = "seq"
work_type = "Sequence"
workers = 1
params = { phases = [ { kind = "Sleep", ms = 3000 }, { kind = "Spin", ms = 5 } ] }
"#;
    let scn = parse(text).unwrap();
    let json = serde_json::to_value(&scn.groups[0].work).unwrap();
    assert_eq!(json["phases"][0]["kind"], "Sleep");
    assert_eq!(json["phases"][0]["ms"], 3000);
    assert_eq!(json["phases"][1]["kind"], "Spin");
}

const SERIES: &str = r#"duration = "3s"
snapshot_interval = "50ms"

[[group]]
name = "spin"
work_type = "SpinWait"
workers = 2

[[group.series_check]]
kind = "rate_within"
metric = "work_units"
min = 1000
max = 5e9
after = "500ms"

[[group.series_check]]
kind = "stall"
max_stall = "300ms"

[[group.series_check]]
kind = "converges_to"
metric = "cpu_time"
share = 1.0
tolerance = 0.2
last = "1s"

[[group.series_check]]
kind = "steady_within"
max_cv = 0.5

[[group.series_check]]
kind = "nondecreasing"
metric = "iterations"
"#;

#[test]
fn parses_checks_over_time() {
    use crate::series::{Metric, SeriesKind, Target};
    let s = parse(SERIES).unwrap();
    assert_eq!(s.snapshot_interval, Some(Duration::from_millis(50)));
    let c = &s.groups[0].series_checks;
    assert_eq!(c.len(), 5);
    assert_eq!(c[0].after_ns, 500_000_000);
    assert_eq!(
        c[0].kind,
        SeriesKind::RateWithin {
            min: Some(1000.0),
            max: Some(5e9)
        }
    );
    assert_eq!(c[1].metric, Metric::WorkUnits, "work_units by default");
    assert_eq!(
        c[1].kind,
        SeriesKind::Stall {
            max_stall_ns: 300_000_000
        }
    );
    assert!(matches!(
        c[2].kind,
        SeriesKind::ConvergesTo { target: Target::Share(s), last_ns: Some(1_000_000_000), .. } if s == 1.0
    ));
    assert_eq!(c[4].id().to_string(), "nondecreasing(iterations)");
    let plain = parse(
        "duration = \"1s\"\n[[group]]\nname = \"a\"\nwork_type = \"SpinWait\"\nworkers = 1\n",
    );
    assert_eq!(
        plain.unwrap().snapshot_interval,
        Some(Duration::from_millis(100))
    );
}

#[test]
fn snapshot_interval_turns_off_and_has_a_minimum() {
    let with = |v: &str| SERIES.replace("\"50ms\"", v);
    let text = "duration = \"1s\"\nsnapshot_interval = 0\n[[group]]\nname = \"a\"\nwork_type = \"SpinWait\"\nworkers = 1\n";
    assert_eq!(parse(text).unwrap().snapshot_interval, None);
    let e = err_of(&with("\"5ms\""));
    assert_eq!(e.line, 2, "{e}");
    assert!(e.to_string().contains("below the 10ms minimum"), "{e}");
    let e = err_of(&with("\"off\""));
    assert!(e.to_string().contains("snapshot_interval is off"), "{e}");
}

#[test]
fn a_bad_check_over_time_is_an_error_at_its_line() {
    let e = err_of(&SERIES.replace("\"stall\"", "\"stal\""));
    assert_eq!((e.line, e.key.as_deref()), (17, Some("kind")), "{e}");
    assert!(e.to_string().contains("did you mean \"stall\"?"), "{e}");
    let e = err_of(&SERIES.replace("\"cpu_time\"", "\"cpu_tim\""));
    assert!(e.to_string().contains("did you mean \"cpu_time\"?"), "{e}");
    let e = err_of(&SERIES.replace("max_stall = \"300ms\"", "max_cv = 3"));
    assert_eq!((e.line, e.key.as_deref()), (18, Some("max_cv")), "{e}");
    assert!(
        e.to_string()
            .contains("does not apply to stall (it takes max_stall)"),
        "{e}"
    );
    let e = err_of(&SERIES.replace("max_stall = \"300ms\"", ""));
    assert!(e.to_string().contains("stall needs max_stall"), "{e}");
    let e = err_of(&SERIES.replace("min = 1000", "min = 1e10"));
    assert_eq!(e.line, 10, "{e}");
    assert!(e.to_string().contains("min is above max"), "{e}");
    let e = err_of(&SERIES.replace("after = \"500ms\"", "after = \"4s\""));
    assert!(e.to_string().contains("before the end of the run"), "{e}");
    let e = err_of(&SERIES.replace("kind = \"stall\"", "kind = \"stall\"\nspeed = 1"));
    assert!(e.to_string().contains("unknown field `speed`"), "{e}");
}

#[test]
fn a_type_error_names_its_key_and_line() {
    let e = parse("duration = \"1s\"\n\n[[group]]\nname = \"a\"\nwork_type = \"SpinWait\"\nworkers = \"two\"\n")
        .unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (6, Some("workers")), "{e}");
    let e = parse("duration = \"1s\"\n[checks]\nmax_gap_ms = \"x\"\n").unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (3, Some("max_gap_ms")), "{e}");
    assert_eq!(key_at("[[group]]\n", 3), None, "a table header is no key");
}
