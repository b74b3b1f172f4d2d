use super::*;
use crate::checks::detail::{RateDetail, SetupError, StuckHow};
use crate::report::WorkerExitInfo;
use crate::CheckId;

fn report(units: u64, wall: u64, off: u64, gap: u64) -> WorkerReport {
    WorkerReport {
        work_units: units,
        wall_time_ns: wall,
        off_cpu_ns: off,
        max_gap_ms: gap,
        completed: true,
        ..Default::default()
    }
}

#[test]
fn defaults_pass_a_healthy_group() {
    let a = report(10_240, 1_000_000_000, 100_000_000, 5);
    let b = report(20_480, 1_000_000_000, 200_000_000, 9);
    let res = CheckConfig::default().evaluate_group("g", &[&a, &b], GroupWork::Framework);
    assert!(res.iter().all(|r| r.pass), "{res:?}");
    assert_eq!(verdict(&res, false), Verdict::Pass);
    assert_eq!(verdict(&res, true), Verdict::Fail);
}

#[test]
fn stuck_and_dead_workers_fail() {
    let idle = report(0, 1_000_000_000, 0, 0);
    let dead = WorkerReport::sentinel(1, 0, WorkerExitInfo::Signaled(9));
    let res = CheckConfig::default().evaluate_group("g", &[&idle, &dead], GroupWork::Framework);
    let ns = res.iter().find(|r| r.check == CheckId::NotStuck).unwrap();
    assert_eq!((ns.measured, ns.pass), (2.0, false));
}

#[test]
fn a_dead_partner_is_named_and_a_normal_stop_is_not() {
    let mut survivor = report(1024, 1_000_000_000, 0, 0);
    survivor.tid = 76;
    survivor.partner_lost = Some(1);
    let dead = WorkerReport::sentinel(77, 0, WorkerExitInfo::Signaled(9));
    let res = CheckConfig::default().evaluate_group("g", &[&survivor, &dead], GroupWork::Framework);
    let ns = res.iter().find(|r| r.check == CheckId::NotStuck).unwrap();
    assert!(!ns.pass);
    assert_eq!(
        ns.detail,
        [Detail::Group(GroupDetail::PartnersLost {
            lost: vec![LostPartner {
                partner: 1,
                partner_pid: 77,
                how: WorkerExitInfo::Signaled(9),
                worker: 76,
            }]
        })]
    );
    let mut other = report(1024, 1_000_000_000, 0, 0);
    other.partner_lost = Some(0);
    let res =
        CheckConfig::default().evaluate_group("g", &[&survivor, &other], GroupWork::Framework);
    let ns = res.iter().find(|r| r.check == CheckId::NotStuck).unwrap();
    assert!(ns.pass && ns.detail.is_empty(), "{ns:?}");
}

#[test]
fn gap_and_spread_bounds() {
    let a = report(1024, 1_000_000_000, 0, 2500);
    let b = report(1024, 1_000_000_000, 900_000_000, 1);
    let res = CheckConfig::default().evaluate_group("g", &[&a, &b], GroupWork::Framework);
    let get = |n: &str| {
        res.iter()
            .find(|r| r.check.to_string() == n)
            .unwrap()
            .clone()
    };
    assert!(!get("max_gap_ms").pass);
    assert_eq!(get("max_gap_ms").measured, 2500.0);
    assert!(!get("max_offcpu_spread_pct").pass);
    assert!((get("max_offcpu_spread_pct").measured - 90.0).abs() < 1e-9);
}

#[test]
fn disable_and_validate() {
    let cfg = CheckConfig {
        disable: vec!["max_gap_ms".into()],
        ..Default::default()
    };
    let a = report(1024, 1_000_000_000, 0, 99_999);
    assert!(cfg
        .evaluate_group("g", &[&a], GroupWork::Framework)
        .iter()
        .all(|r| r.check != CheckId::MaxGapMs));
    assert!(CheckConfig {
        disable: vec!["nope".into()],
        ..Default::default()
    }
    .validate()
    .is_err());
}

#[test]
fn op_prints_and_serializes_as_the_operator() {
    assert_eq!(format!("[{:<3}]", Op::AtMost), "[<= ]");
    assert_eq!(Op::AtLeast.to_string(), ">=");
    assert_eq!(serde_json::to_value(Op::AtMost).unwrap(), "<=");
    assert!(Op::AtLeast.holds(1.0, 1.0) && !Op::AtLeast.holds(0.9, 1.0));
    assert!(Op::AtMost.holds(1.0, 1.0) && !Op::AtMost.holds(1.1, 1.0));
}

#[test]
fn names_and_ranges_come_from_the_table() {
    assert_eq!(CHECK_NAMES[0], "not_stuck");
    assert_eq!(CHECK_NAMES[1], "setup_applied");
    assert_eq!(CHECK_NAMES[11], "min_fair_share");
    let bad = |cfg: CheckConfig| cfg.validate().unwrap_err();
    assert_eq!(
        bad(CheckConfig {
            max_offcpu_spread_pct: Some(101.0),
            ..Default::default()
        }),
        "max_offcpu_spread_pct must be between 0 and 100"
    );
    assert_eq!(
        bad(CheckConfig {
            min_fair_share: Some(-0.1),
            ..Default::default()
        }),
        "min_fair_share must be between 0 and 1"
    );
    // Group checks come out in table order; the cross-group one never.
    let a = report(1024, 1_000_000_000, 0, 0);
    let cfg = CheckConfig {
        min_work_rate: Some(1.0),
        max_numa_pages_migrated: Some(0),
        ..Default::default()
    };
    let names: Vec<String> = cfg
        .evaluate_group("g", &[&a], GroupWork::Framework)
        .into_iter()
        .map(|r| r.check.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "not_stuck",
            "setup_applied",
            "max_gap_ms",
            "max_offcpu_spread_pct",
            "min_work_rate",
            "max_numa_pages_migrated"
        ]
    );
}

#[test]
fn statistics() {
    assert_eq!(coefficient_of_variation(&[5, 5, 5]), Some(0.0));
    assert!(coefficient_of_variation(&[1]).is_none());
    let cv = coefficient_of_variation(&[1, 3]).unwrap();
    assert!((cv - std::f64::consts::SQRT_2 / 2.0).abs() < 1e-9);
    let mut a = report(4096, 1, 0, 0);
    a.migration_count = 2;
    assert_eq!(migration_ratio(&[&a]), 0.5);
    a.numa_pages = [(0, 30), (1, 10)].into();
    assert_eq!(numa_locality(&[&a]), Some(0.75));
}

#[test]
fn custom_groups_skip_telemetry_checks() {
    let a = report(0, 0, 0, 99_999);
    let res = CheckConfig::default().evaluate_group("c", &[&a], GroupWork::Custom);
    let names: Vec<String> = res.iter().map(|r| r.check.to_string()).collect();
    assert_eq!(names, ["not_stuck", "setup_applied"]);
    assert!(res.iter().all(|r| r.pass));
}

#[test]
fn every_failed_group_check_says_what_was_measured() {
    let mut a = report(0, 3_000_000_000, 2_900_000_000, 3_001);
    a.tid = 41;
    a.max_gap_at_ms = 1200;
    a.cpu_time_ns = 100_000_000;
    a.schedstat_run_delay_ns = 2_900_000_000;
    let mut b = report(1_000_000, 3_000_000_000, 0, 2);
    b.tid = 42;
    let cfg = CheckConfig {
        min_work_rate: Some(1e12),
        ..CheckConfig::default()
    };
    let res = cfg.evaluate_group("g", &[&a, &b], GroupWork::Framework);
    let detail = |name: &str| {
        let r = res.iter().find(|r| r.check.to_string() == name).unwrap();
        assert!(!r.pass, "{name}");
        match &r.detail[..] {
            [d] => d.clone(),
            all => panic!("{name}: {all:?}"),
        }
    };
    let Detail::Group(GroupDetail::Stuck { ways }) = detail("not_stuck") else {
        panic!("not_stuck names the stuck workers");
    };
    assert_eq!(ways[0].workers, [41]);
    assert!(
        matches!(
            ways[0].how,
            StuckHow::NoWork {
                wall_ns: 3_000_000_000,
                ..
            }
        ),
        "{ways:?}"
    );
    assert_eq!(
        detail("max_gap_ms"),
        Detail::Group(GroupDetail::Gap {
            worker: 41,
            source: crate::gap::GapSource::RunDelay,
            gap_ms: 3001,
            at_ms: 1200,
            cpu: 0,
        })
    );
    assert!(
        matches!(detail("max_offcpu_spread_pct"), Detail::Group(GroupDetail::OffCpuSpread { most_worker: 41, most_pct, .. })
            if (most_pct - 96.67).abs() < 0.01),
        "{:?}",
        detail("max_offcpu_spread_pct")
    );
    assert!(matches!(
        detail("min_work_rate"),
        Detail::Rate(RateDetail::SlowestWorker {
            worker: 41,
            work_units: 0,
            ..
        })
    ));
}

#[test]
fn a_setup_error_fails_unless_the_scenario_allows_it() {
    let mut a = report(1024, 1_000_000_000, 0, 0);
    a.tid = 9;
    a.affinity_error = Some("sched_setaffinity(3): Invalid argument".into());
    let res = CheckConfig::default().evaluate_group("g", &[&a], GroupWork::Framework);
    let s = res
        .iter()
        .find(|r| r.check == CheckId::SetupApplied)
        .unwrap();
    assert!(!s.pass);
    assert_eq!(
        s.detail,
        [Detail::Group(GroupDetail::SetupFailed {
            errors: vec![SetupError {
                worker: 9,
                error: "sched_setaffinity(3): Invalid argument".into(),
            }]
        })]
    );
    let allowed = CheckConfig {
        disable: vec!["setup_applied".into()],
        ..Default::default()
    };
    let res = allowed.evaluate_group("g", &[&a], GroupWork::Framework);
    assert!(res.iter().all(|r| r.check != CheckId::SetupApplied));
}

#[test]
fn a_messenger_and_its_receivers_are_judged_apart() {
    // The messenger sleeps most of the run, its receivers compute: a 77
    // point spread across roles, none within them.
    let mut messenger = report(1024, 1_000_000_000, 900_000_000, 0);
    messenger.is_messenger = true;
    messenger.role = 1;
    let a = report(1024, 1_000_000_000, 130_000_000, 0);
    let b = report(1024, 1_000_000_000, 140_000_000, 0);
    assert!(offcpu_spread_pct(&[&messenger, &a, &b]) > 50.0);
    assert!(offcpu_spread_by_role(&[&messenger, &a, &b]) < 2.0);
}

#[test]
fn three_roles_are_judged_apart_and_the_worst_role_is_named() {
    // A priority inversion's low holder computes, its high waiter sleeps
    // between acquires, its medium hogs: spreads across roles only.
    let low = report(1024, 1_000_000_000, 100_000_000, 0);
    let mut medium = report(1024, 1_000_000_000, 20_000_000, 0);
    medium.role = 1;
    let mut high = report(1024, 1_000_000_000, 970_000_000, 0);
    high.role = 2;
    let mut high2 = report(1024, 1_000_000_000, 900_000_000, 0);
    high2.role = 2;
    let all = [&low, &medium, &high, &high2];
    assert!(offcpu_spread_pct(&all) > 90.0);
    let (spread, members) = worst_role(&all).unwrap();
    assert!((spread - 7.0).abs() < 0.01, "{spread}");
    assert!(members.iter().all(|r| r.role == 2));
    assert_eq!(offcpu_spread_by_role(&all), spread);
}

#[test]
fn racing_workers_off_cpu_shares_are_not_compared() {
    // EpollStorm on 16 CPUs: the consumer that wins most drains is off
    // the CPU 30% of the run, the others 90%.
    let winner = report(1000, 1_000_000_000, 300_000_000, 1);
    let loser = report(10, 1_000_000_000, 900_000_000, 1);
    let spread = |work| {
        CheckConfig::default()
            .evaluate_group("consumers", &[&winner, &loser], work)
            .into_iter()
            .find(|c| c.check == CheckId::MaxOffcpuSpreadPct)
    };
    assert!(!spread(GroupWork::Framework).unwrap().pass);
    assert!(spread(GroupWork::Race).is_none());
}

#[test]
fn the_p999_tail_is_judged_only_when_a_scenario_bounds_it() {
    let mut a = report(1024, 1_000_000_000, 0, 0);
    // 999 fast wakes and one slow one: p99 holds, p99.9 is the slow one.
    a.resume_latencies_ns = vec![10_000; 999];
    a.resume_latencies_ns.push(5_000_000);
    let off = CheckConfig::default().evaluate_group("g", &[&a], GroupWork::Framework);
    assert!(off.iter().all(|r| r.check != CheckId::MaxP999WakeLatencyUs));
    let cfg = CheckConfig {
        max_p999_wake_latency_us: Some(1_000),
        ..Default::default()
    };
    let res = cfg.evaluate_group("g", &[&a], GroupWork::Framework);
    let p99 = res.iter().find(|r| r.check == CheckId::MaxP99WakeLatencyUs);
    assert!(p99.is_some_and(|r| r.pass), "{res:?}");
    let tail = res
        .iter()
        .find(|r| r.check == CheckId::MaxP999WakeLatencyUs)
        .expect("judged");
    assert!(!tail.pass && tail.measured > 1_000.0, "{tail:?}");
    assert_eq!(tail.check.to_string(), "max_p999_wake_latency_us");
    assert!(
        matches!(
            tail.detail[..],
            [Detail::Group(GroupDetail::LatencySamples {
                samples: 1000,
                ..
            })]
        ),
        "{:?}",
        tail.detail
    );
}
