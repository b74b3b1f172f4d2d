use super::*;

const SEC: u64 = 1_000_000_000;

fn cpus(n: std::ops::Range<usize>) -> BTreeSet<usize> {
    n.collect()
}

fn entity(weight: f64, set: BTreeSet<usize>, quota: Option<f64>) -> FairEntity {
    FairEntity {
        weight,
        cpus: set,
        quota_cpus: quota,
    }
}

/// `n` workers of `group` in `entity`, each wanting `demand` and getting
/// `got` CPUs over a 1 s window.
fn workers(group: usize, entity: usize, n: usize, demand: f64, got: f64) -> Vec<FairWorker> {
    (0..n)
        .map(|i| FairWorker {
            group,
            entity,
            weight: 1.0,
            demand,
            cpu_ns: (got * SEC as f64) as u64,
            tid: (group * 100 + i) as u32,
        })
        .collect()
}

fn model(entities: Vec<FairEntity>, ws: Vec<Vec<FairWorker>>, basis: &str) -> FairModel {
    FairModel {
        entities,
        group_names: (0..ws.len()).map(|g| format!("g{g}")).collect(),
        workers: ws.into_iter().flatten().collect(),
        window_ns: SEC,
        basis: basis.into(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn water_fill_caps_and_redistributes() {
    let a = water_fill(2.0, &[(1.0, 2.0), (1.0, 2.0)]);
    assert!(close(a[0], 1.0) && close(a[1], 1.0), "{a:?}");
    // A light entity's spare capacity goes to the heavy one.
    let a = water_fill(2.0, &[(1.0, 0.2), (1.0, 2.0)]);
    assert!(close(a[0], 0.2) && close(a[1], 1.8), "{a:?}");
    let a = water_fill(2.0, &[(1.0, 2.0), (2.0, 2.0)]);
    assert!(close(a[0], 2.0 / 3.0) && close(a[1], 4.0 / 3.0), "{a:?}");
    assert_eq!(water_fill(1.0, &[(0.0, 1.0)]), vec![0.0]);
}

#[test]
fn equal_weights_starved_group_fails_with_a_clear_message() {
    // The default scenario on a v1 host: 2 spinners get 0.4% of the CPU
    // time the run got (1.968 CPUs), pipe pairs the rest.
    let m = model(
        vec![entity(1.0, cpus(0..2), None), entity(1.0, cpus(0..2), None)],
        vec![workers(0, 0, 2, 1.0, 0.004), workers(1, 1, 4, 0.5, 0.49)],
        "equal cpu.shares",
    );
    let shares = group_shares(&m);
    assert!(close(shares[0].pool_cpus, 1.968), "{shares:?}");
    assert!(close(shares[0].expected_cpus, 0.984), "{shares:?}");
    assert!(shares[0].ratio() < 0.01);
    let Detail::Share(ShareDetail::FairShare {
        group,
        got_pct,
        expected_pct,
        basis,
    }) = describe(&m, &shares[0])
    else {
        panic!("a group's share");
    };
    assert_eq!((group.as_str(), basis.as_str()), ("g0", "equal cpu.shares"));
    assert!(
        (got_pct * 10.0).round() == 4.0 && close(expected_pct, 50.0),
        "{got_pct} {expected_pct}"
    );
    assert!(shares[1].ratio() > 1.9);
}

#[test]
fn two_to_one_weights() {
    let m = model(
        vec![entity(2.0, cpus(0..2), None), entity(1.0, cpus(0..2), None)],
        vec![workers(0, 0, 2, 1.0, 0.66), workers(1, 1, 2, 1.0, 0.34)],
        "cpu.weight 2:1",
    );
    let s = group_shares(&m);
    assert!(close(s[0].expected_cpus, 4.0 / 3.0) && close(s[1].expected_cpus, 2.0 / 3.0));
    assert!(s.iter().all(|s| s.ratio() > 0.95), "{s:?}");
}

#[test]
fn cpuset_split_makes_separate_pools() {
    // One spinner on CPU 0 against three on CPU 1: each pool is 1 CPU.
    let m = model(
        vec![entity(1.0, cpus(0..1), None), entity(1.0, cpus(1..2), None)],
        vec![workers(0, 0, 1, 1.0, 1.0), workers(1, 1, 3, 1.0, 1.0 / 3.0)],
        "equal cpu.shares",
    );
    let s = group_shares(&m);
    assert!(close(s[0].expected_cpus, 1.0) && close(s[1].expected_cpus, 1.0));
    assert!(close(s[0].pool_cpus, 1.0));
    assert!(s.iter().all(|s| s.ratio() > 0.99), "{s:?}");
    // Partially overlapping cpusets: one pool, each capped by its cpuset.
    let m = model(
        vec![entity(1.0, cpus(0..1), None), entity(1.0, cpus(0..2), None)],
        vec![workers(0, 0, 2, 1.0, 0.5), workers(1, 1, 2, 1.0, 0.75)],
        "equal cpu.shares",
    );
    let s = group_shares(&m);
    assert!(close(s[0].expected_cpus, 1.0) && close(s[0].pool_cpus, 2.5));
}

#[test]
fn load_from_outside_the_run_does_not_count() {
    // Other processes took half the machine; equal groups split the rest.
    let m = model(
        vec![entity(1.0, cpus(0..2), None), entity(1.0, cpus(0..2), None)],
        vec![workers(0, 0, 2, 1.0, 0.25), workers(1, 1, 2, 1.0, 0.25)],
        "equal cpu.shares",
    );
    assert!(group_shares(&m).iter().all(|s| close(s.ratio(), 1.0)));
}

#[test]
fn quota_caps_the_entitlement() {
    // A group limited to 0.5 CPU by cpu.max is not owed half of 2 CPUs.
    let m = model(
        vec![
            entity(1.0, cpus(0..2), Some(0.5)),
            entity(1.0, cpus(0..2), None),
        ],
        vec![workers(0, 0, 2, 1.0, 0.25), workers(1, 1, 2, 1.0, 0.75)],
        "equal cpu.shares, cpu.max",
    );
    let s = group_shares(&m);
    assert!(close(s[0].expected_cpus, 0.5) && close(s[1].expected_cpus, 1.5));
    assert!(s.iter().all(|s| s.ratio() > 0.99), "{s:?}");
}

#[test]
fn own_sleep_lowers_the_entitlement() {
    // Sleepers that want 10% each are owed 10%, and the rest goes on.
    let m = model(
        vec![entity(1.0, cpus(0..2), None), entity(1.0, cpus(0..2), None)],
        vec![workers(0, 0, 2, 0.1, 0.1), workers(1, 1, 2, 1.0, 0.9)],
        "equal cpu.shares",
    );
    let s = group_shares(&m);
    assert!(close(s[0].expected_cpus, 0.2) && close(s[1].expected_cpus, 1.8));
}

#[test]
fn worst_worker_in_a_group() {
    let mut ws = workers(0, 0, 2, 1.0, 0.5);
    ws[1].cpu_ns = SEC / 100;
    let m = model(vec![entity(1.0, cpus(0..2), None)], vec![ws], "equal");
    let (tid, share) = worst_worker(&m, 0).unwrap();
    assert_eq!(tid, 1);
    assert!(share.ratio() < 0.05, "{share:?}");
    let one = model(
        vec![entity(1.0, cpus(0..2), None)],
        vec![workers(0, 0, 1, 1.0, 1.0)],
        "equal",
    );
    assert!(worst_worker(&one, 0).is_none());
}

#[test]
fn items_bound_to_the_same_cpus_share_them() {
    // Two pinned to CPU 0 beside one free on CPUs 0-3: the pinned get one
    // CPU between them, the free one what it can use.
    let limits = [SharedLimit {
        members: vec![0, 1],
        limit: 1.0,
    }];
    let a = fill_within_limits(4.0, &[(1.0, 1.0), (1.0, 1.0), (1.0, 4.0)], &limits);
    assert!(
        close(a[0], 0.5) && close(a[1], 0.5) && close(a[2], 3.0),
        "{a:?}"
    );
    // Without the shared limit, the same items split the capacity evenly.
    let a = fill_within_limits(3.0, &[(1.0, 1.0), (1.0, 1.0), (1.0, 4.0)], &[]);
    assert!(a.iter().all(|&x| close(x, 1.0)), "{a:?}");
}

#[test]
fn a_group_pinned_to_one_cpu_is_owed_one_cpu() {
    // affinity_pinned on 16 CPUs: a cgroup of 2 spinners pinned to CPU 0
    // beside a cgroup of 16 free spinners, equal weights. The pinned got
    // 0.94 CPU: all a CPU can give them, not half of the machine.
    let m = model(
        vec![
            entity(1.0, cpus(0..1), None),
            entity(1.0, cpus(0..16), None),
        ],
        vec![workers(0, 0, 2, 1.0, 0.47), workers(1, 1, 16, 1.0, 0.94)],
        "equal cpu.weight, CPU sets",
    );
    let shares = group_shares(&m);
    assert!(close(shares[0].expected_cpus, 1.0), "{shares:?}");
    assert!(shares[0].ratio() > 0.9, "{shares:?}");
    // Lone workers pinned to one CPU share it too.
    let m = model(
        vec![entity(1.0, cpus(0..1), None), entity(1.0, cpus(0..1), None)],
        vec![workers(0, 0, 1, 1.0, 0.5), workers(1, 1, 1, 1.0, 0.5)],
        "no cgroups: one share per runnable worker, CPU sets",
    );
    assert!(group_shares(&m).iter().all(|s| close(s.ratio(), 1.0)));
}
