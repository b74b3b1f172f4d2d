//! Checks over time on synthetic series: each pattern passes on a healthy
//! series, fails on a broken one, and its detail names the window.

use super::*;
use crate::checks::detail::{Detail, SeriesDetail, Span};
use crate::checks::CheckResult;

const MS: u64 = 1_000_000;

/// A group's series sampled every 100 ms from `values` (work units), with
/// on-CPU time growing by `cpu_per_step` ns per snapshot.
fn group(name: &str, values: &[u64], cpu_per_step: u64) -> GroupSeries {
    let n = values.len() as u64;
    GroupSeries {
        group: name.into(),
        at_ns: (0..n).map(|i| i * 100 * MS).collect(),
        work_units: values.to_vec(),
        iterations: values.to_vec(),
        cpu_time_ns: Some((0..n).map(|i| i * cpu_per_step).collect()),
        run_delay_ns: None,
    }
}

fn run(groups: Vec<GroupSeries>) -> RunSeries {
    RunSeries {
        interval_ns: 100 * MS,
        snapshots: groups.first().map_or(0, |g| g.at_ns.len() as u64),
        sampler_cpu_ns: 0,
        host: None,
        groups,
    }
}

/// 1000 units per 100 ms (10k/s) for `n` snapshots.
fn steady(n: u64) -> Vec<u64> {
    (0..n).map(|i| i * 1000).collect()
}

fn check(metric: Metric, after_ms: u64, kind: SeriesKind) -> SeriesCheck {
    SeriesCheck {
        metric,
        after_ns: after_ms * MS,
        kind,
    }
}

fn one(c: SeriesCheck, series: &RunSeries) -> CheckResult {
    let mut r = evaluate("g", &[c], series);
    assert_eq!(r.len(), 1);
    r.remove(0)
}

fn detail(r: &CheckResult) -> &Detail {
    match &r.detail[..] {
        [d] => d,
        all => panic!("one detail, not {all:?}"),
    }
}

fn span(from_ms: u64, to_ms: u64) -> Span {
    Span {
        from_ns: from_ms * MS,
        to_ns: to_ms * MS,
    }
}

#[test]
fn nondecreasing_catches_a_counter_reset_and_names_its_window() {
    let c = || check(Metric::WorkUnits, 0, SeriesKind::Nondecreasing);
    let ok = one(c(), &run(vec![group("g", &steady(10), 0)]));
    assert!(ok.pass && ok.measured == 0.0, "{ok:?}");
    let mut values = steady(10);
    values[6] = 10; // reset between 0.50 and 0.60 s
    let bad = one(c(), &run(vec![group("g", &values, 0)]));
    assert!(!bad.pass, "{bad:?}");
    assert!(
        matches!(detail(&bad), Detail::Series(SeriesDetail::Fell { metric: Metric::WorkUnits, from: 5000, to: 10, window, .. })
            if *window == span(500, 600)),
        "{:?}",
        detail(&bad)
    );
    assert_eq!(bad.check.to_string(), "nondecreasing(work_units)");
}

#[test]
fn rate_within_names_the_slow_window_and_honours_the_warm_up() {
    let mut values = steady(10);
    for v in &mut values[4..] {
        *v -= 900; // 0.30–0.40 s: 100 units, 1k/s
    }
    let s = run(vec![group("g", &values, 0)]);
    let kind = || SeriesKind::RateWithin {
        min: Some(5_000.0),
        max: Some(20_000.0),
    };
    let bad = one(check(Metric::WorkUnits, 0, kind()), &s);
    assert!(!bad.pass && bad.measured == 1_000.0, "{bad:?}");
    assert!(
        matches!(detail(&bad), Detail::Series(SeriesDetail::RateOutside { metric: Metric::WorkUnits, rate, window, above: false, bound, .. })
            if (*rate - 1_000.0).abs() < 1e-6 && *window == span(300, 400) && *bound == 5_000.0),
        "{:?}",
        detail(&bad)
    );
    let after = one(check(Metric::WorkUnits, 400, kind()), &s);
    assert!(after.pass, "the slow window is in the warm-up: {after:?}");
    let high = one(
        check(
            Metric::WorkUnits,
            0,
            SeriesKind::RateWithin {
                min: None,
                max: Some(5_000.0),
            },
        ),
        &s,
    );
    assert!(
        !high.pass
            && matches!(detail(&high), Detail::Series(SeriesDetail::RateOutside { above: true, bound, .. }) if *bound == 5_000.0),
        "{high:?}"
    );
}

#[test]
fn steady_within_measures_spread_and_names_the_farthest_window() {
    let kind = || SeriesKind::SteadyWithin { max_cv: 0.2 };
    let ok = one(
        check(Metric::WorkUnits, 0, kind()),
        &run(vec![group("g", &steady(10), 0)]),
    );
    assert!(ok.pass && ok.measured < 1e-9, "{ok:?}");
    let mut values = steady(10);
    for v in &mut values[8..] {
        *v += 5000; // 0.70–0.80 s: 6000 units
    }
    let bad = one(
        check(Metric::WorkUnits, 0, kind()),
        &run(vec![group("g", &values, 0)]),
    );
    assert!(!bad.pass && bad.measured > 0.2, "{bad:?}");
    assert!(
        matches!(detail(&bad), Detail::Series(SeriesDetail::Unsteady { farthest, farthest_from_ns, farthest_to_ns, .. })
            if (*farthest - 60_000.0).abs() < 1e-6 && (*farthest_from_ns, *farthest_to_ns) == (700 * MS, 800 * MS)),
        "{:?}",
        detail(&bad)
    );
}

#[test]
fn converges_to_judges_the_end_window_against_a_rate() {
    // 1k/s for the first 2 s, then 10k/s for the last second.
    let values: Vec<u64> = (0..31u64)
        .map(|i| {
            if i <= 20 {
                i * 100
            } else {
                2000 + (i - 20) * 1000
            }
        })
        .collect();
    let s = run(vec![group("g", &values, 0)]);
    let kind = |rate: f64| SeriesKind::ConvergesTo {
        target: Target::Rate(rate),
        tolerance: 0.1,
        last_ns: Some(500 * MS),
    };
    let ok = one(check(Metric::WorkUnits, 0, kind(10_000.0)), &s);
    assert!(ok.pass, "{ok:?}");
    let bad = one(check(Metric::WorkUnits, 0, kind(1_000.0)), &s);
    assert!(!bad.pass, "{bad:?}");
    assert!(
        matches!(detail(&bad), Detail::Series(SeriesDetail::ConvergeRate { rate, window, target, tolerance, .. })
            if (*rate - 10_000.0).abs() < 1e-6 && *window == span(2500, 3000) && *target == 1_000.0 && *tolerance == 0.1),
        "{:?}",
        detail(&bad)
    );
}

#[test]
fn converges_to_a_share_of_every_group() {
    let a = group("g", &steady(11), 75 * MS); // 0.75 CPU
    let b = group("other", &steady(11), 25 * MS); // 0.25 CPU
    let s = run(vec![a, b]);
    let kind = |share: f64| SeriesKind::ConvergesTo {
        target: Target::Share(share),
        tolerance: 0.05,
        last_ns: None,
    };
    let ok = one(check(Metric::CpuTime, 0, kind(0.75)), &s);
    assert!(ok.pass, "{ok:?}");
    let bad = one(check(Metric::CpuTime, 0, kind(0.5)), &s);
    assert!(!bad.pass, "{bad:?}");
    assert!(
        matches!(detail(&bad), Detail::Series(SeriesDetail::ConvergeShare { metric: Metric::CpuTime, share, rate, total, window, target, .. })
            if (*share - 0.75).abs() < 1e-6 && (*rate - 0.75).abs() < 1e-6 && (*total - 1.0).abs() < 1e-6
                && *window == span(800, 1000) && *target == 0.5),
        "{:?}",
        detail(&bad)
    );
}

#[test]
fn stall_names_the_window_without_progress() {
    let kind = || SeriesKind::Stall {
        max_stall_ns: 250 * MS,
    };
    let ok = one(
        check(Metric::WorkUnits, 0, kind()),
        &run(vec![group("g", &steady(10), 0)]),
    );
    assert!(ok.pass && ok.measured == 0.0, "{ok:?}");
    let mut values = steady(10);
    for v in &mut values[4..8] {
        *v = 3000; // no progress from 0.30 to 0.70 s
    }
    for v in &mut values[8..] {
        *v -= 4000;
    }
    let bad = one(
        check(Metric::WorkUnits, 0, kind()),
        &run(vec![group("g", &values, 0)]),
    );
    assert!(!bad.pass && bad.measured == 400.0, "{bad:?}");
    assert!(
        matches!(detail(&bad), Detail::Series(SeriesDetail::Stalled { window, flat_ms, bound_ms, .. })
            if *window == span(300, 700) && *flat_ms == 400.0 && *bound_ms == 250.0),
        "{:?}",
        detail(&bad)
    );
}

#[test]
fn a_check_without_data_fails_and_says_why() {
    let s = run(vec![group("g", &steady(3), 0)]);
    let late = one(
        check(Metric::WorkUnits, 5000, SeriesKind::Nondecreasing),
        &s,
    );
    let why = |c: &CheckResult| c.not_judged.clone().unwrap_or_default();
    assert!(
        !late.pass && why(&late).starts_with("no interval between snapshots"),
        "{late:?}"
    );
    let none = one(check(Metric::RunDelay, 0, SeriesKind::Nondecreasing), &s);
    assert!(!none.pass && why(&none).contains("run_delay was not recorded"));
    let other = evaluate(
        "missing",
        &[check(Metric::WorkUnits, 0, SeriesKind::Nondecreasing)],
        &s,
    );
    assert!(!other[0].pass && why(&other[0]).contains("no snapshot of group"));
    // Interrupted, a check the run did not reach is excused, and says so;
    // a judged FAIL stays a FAIL.
    let flat = run(vec![group("g", &[5, 5, 5, 5], 0)]);
    let stall = SeriesKind::Stall { max_stall_ns: MS };
    let judged = one(check(Metric::WorkUnits, 0, stall), &flat);
    assert!(!judged.pass, "{judged:?}");
    let mut checks = vec![late, judged];
    check::excuse_unjudged(&mut checks);
    assert!(
        checks[0].pass && checks[0].not_judged.is_some(),
        "{checks:?}"
    );
    assert!(!checks[1].pass);
}

#[test]
fn metric_names_round_trip_and_rates_scale() {
    for (name, m) in Metric::ALL {
        assert_eq!(Metric::from_name(name), Some(m));
        assert_eq!(m.name(), name);
    }
    let w = Window::between(Metric::CpuTime, (0, 0), (100 * MS, 50 * MS));
    assert!((w.rate - 0.5).abs() < 1e-9);
    assert_eq!(Metric::CpuTime.fmt_rate(w.rate), "0.50 CPU");
}

#[test]
fn scenarios_need_snapshots_and_progress_for_their_checks() {
    use crate::spawn::{CustomContext, CustomWork};
    fn idle(_: &CustomContext) -> crate::WorkerReport {
        crate::WorkerReport::default()
    }
    let custom = CustomWork {
        name: "idle",
        run: idle,
    };
    let mut scn = crate::ScenarioBuilder::new("x")
        .custom_group("c", custom, 1, None)
        .build();
    let stall = |metric| check(metric, 0, SeriesKind::Stall { max_stall_ns: MS });
    scn.groups[0].series_checks = vec![stall(Metric::CpuTime)];
    validate_scenario(&scn).unwrap();
    scn.groups[0].series_checks = vec![stall(Metric::WorkUnits)];
    let e = validate_scenario(&scn).unwrap_err();
    assert!(e.contains("custom work publishes no progress"), "{e}");
    scn.groups[0].series_checks = vec![stall(Metric::CpuTime)];
    scn.snapshot_interval = None;
    let e = validate_scenario(&scn).unwrap_err();
    assert!(e.contains("snapshot_interval is off"), "{e}");
    scn.snapshot_interval = Some(std::time::Duration::from_millis(5));
    assert!(validate_scenario(&scn)
        .unwrap_err()
        .contains("10ms minimum"));
}
