//! Checks over time end to end: a short run's snapshots exist for every
//! group from the moment it starts, and an impossible check FAILs with its
//! window named.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use runq_workload::scenario_file::parse_scenario;
use runq_workload::{CgroupMode, Detail, SeriesDetail, Span, Verdict};

const SCENARIO: &str = r#"duration = "600ms"
snapshot_interval = "50ms"

[[group]]
name = "spin"
work_type = "SpinWait"
workers = 1

[[group.series_check]]
kind = "rate_within"
min = 1e15

[[group.series_check]]
kind = "nondecreasing"

[[group]]
name = "late"
work_type = "SpinWait"
workers = 1
deferred = true

[[group.series_check]]
kind = "nondecreasing"
metric = "iterations"

[[step]]
at = "300ms"
add_group = "late"
"#;

#[test]
fn snapshots_are_kept_and_an_impossible_rate_fails_in_a_named_window() {
    let scn = parse_scenario(Path::new("series.toml"), SCENARIO).unwrap();
    let stop = AtomicBool::new(false);
    let out = crate::run_to_end(&scn, CgroupMode::Off, &stop);
    let series = out.series.as_ref().expect("snapshots are on by default");
    assert_eq!(series.interval_ns, 50_000_000);
    let spin = series.group("spin").expect("spin's series");
    let late = series.group("late").expect("late's series");
    assert!(spin.at_ns.len() >= 3, "{spin:?}");
    assert!(
        late.at_ns[0] >= 300_000_000,
        "late starts at its step: {late:?}"
    );
    assert_eq!(spin.work_units.len(), spin.at_ns.len());
    let json = serde_json::to_value(&out).unwrap();
    assert!(
        json["series"]["groups"][0]["work_units"].is_array(),
        "{json}"
    );
    let rate = out
        .checks
        .iter()
        .find(|c| c.check.to_string() == "rate_within(work_units)")
        .expect("the check ran");
    assert!(
        !rate.pass
            && matches!(
                rate.detail[..],
                [Detail::Series(SeriesDetail::RateOutside { above: false, window: Span { from_ns, to_ns }, .. })]
                    if from_ns < to_ns
            ),
        "{rate:?}"
    );
    assert_eq!(out.verdict, Verdict::Fail);
    let counted = out
        .checks
        .iter()
        .filter(|c| c.check.to_string().starts_with("nondecreasing"));
    assert_eq!(counted.filter(|c| c.pass).count(), 2, "{:?}", out.checks);
}
