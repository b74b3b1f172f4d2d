use super::*;

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

#[test]
fn small_parsers() {
    assert_eq!(parse_limit("max\n"), Some(UNLIMITED));
    assert_eq!(parse_limit("42\n"), Some(42));
    assert_eq!(
        parse_cpu_max("max 100000\n"),
        (Some(UNLIMITED), Some(100000))
    );
    assert_eq!(parse_cpu_max("50000 100000\n"), (Some(50000), Some(100000)));
    let m = parse_flat_keyed("usage_usec 10\nbad\nx y\n");
    assert_eq!(m.len(), 1);
}

#[test]
fn pure_v2_tree() {
    let d = tempfile::tempdir().unwrap();
    let g = d.path().join("a/b");
    write(
        &g,
        "cpu.stat",
        "usage_usec 500\nnr_throttled 2\nthrottled_usec 30\n",
    );
    write(&g, "cpu.max", "50000 100000\n");
    write(&g, "cpu.weight", "100\n");
    write(&g, "memory.current", "4096\n");
    write(&g, "memory.max", "max\n");
    write(&g, "memory.events", "oom 1\n");
    write(&g, "pids.current", "3\n");
    write(
        &g,
        "cpu.pressure",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
    );
    let roots = CgroupRoots {
        v2: Some(d.path().to_path_buf()),
        v1: BTreeMap::new(),
    };
    let s = read_cgroup_stats(&roots, "/a/b", &BTreeMap::new());
    assert_eq!(s.cpu.usage_usec, Some(500));
    assert_eq!(s.cpu.max_quota_us, Some(50000));
    assert_eq!(s.cpu.weight, Some(100));
    assert_eq!(s.memory.current, Some(4096));
    assert_eq!(s.memory.max, Some(UNLIMITED));
    assert_eq!(s.memory.events.get("oom"), Some(&1));
    assert_eq!(s.pids.current, Some(3));
    assert_eq!(s.psi.cpu.unwrap().some.unwrap().total_us, 5);
    assert_eq!(s.sources.get("cpu.usage_usec"), Some(&CgroupVersion::V2));
}

#[test]
fn hybrid_fills_from_v1() {
    let d = tempfile::tempdir().unwrap();
    let v2 = d.path().join("unified");
    write(
        &v2.join("g"),
        "cpu.stat",
        "usage_usec 7\nuser_usec 3\nsystem_usec 4\n",
    );
    let cpu = d.path().join("cpu");
    write(&cpu.join("g"), "cpu.cfs_quota_us", "-1\n");
    write(&cpu.join("g"), "cpu.cfs_period_us", "100000\n");
    write(&cpu.join("g"), "cpu.shares", "1024\n");
    write(
        &cpu.join("g"),
        "cpu.stat",
        "nr_periods 0\nnr_throttled 4\nthrottled_time 9000\n",
    );
    let mem = d.path().join("memory");
    write(&mem.join("m"), "memory.usage_in_bytes", "8192\n");
    write(
        &mem.join("m"),
        "memory.limit_in_bytes",
        "9223372036854771712\n",
    );
    let roots = CgroupRoots {
        v2: Some(v2),
        v1: [("cpu".to_string(), cpu), ("memory".to_string(), mem)]
            .into_iter()
            .collect(),
    };
    let v1_paths = [
        ("cpu".to_string(), "/g".to_string()),
        ("memory".to_string(), "/m".to_string()),
    ]
    .into_iter()
    .collect();
    let s = read_cgroup_stats(&roots, "/g", &v1_paths);
    assert_eq!(s.cpu.usage_usec, Some(7));
    assert_eq!(s.sources.get("cpu.usage_usec"), Some(&CgroupVersion::V2));
    assert_eq!(s.cpu.nr_throttled, Some(4));
    assert_eq!(s.cpu.throttled_usec, Some(9));
    assert_eq!(s.sources.get("cpu.nr_throttled"), Some(&CgroupVersion::V1));
    assert_eq!(s.cpu.max_quota_us, Some(UNLIMITED));
    assert_eq!(s.cpu.max_period_us, Some(100000));
    assert_eq!(s.cpu.weight, Some(39));
    assert_eq!(s.memory.current, Some(8192));
    assert_eq!(s.memory.max, Some(UNLIMITED));
    assert_eq!(s.sources.get("memory.current"), Some(&CgroupVersion::V1));
}

#[test]
fn missing_dirs_give_empty_stats() {
    let roots = CgroupRoots {
        v2: Some(PathBuf::from("/nonexistent")),
        v1: BTreeMap::new(),
    };
    let s = read_cgroup_stats(&roots, "/x", &BTreeMap::new());
    assert_eq!(s, CgroupStats::default());
}

#[test]
fn roots_from_mounts() {
    let mounts = crate::cgroup::parse_mountinfo(
        "35 24 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n36 24 0:31 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
    );
    let r = CgroupRoots::from_mounts(&mounts);
    assert_eq!(r.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
    assert_eq!(
        r.v1.get("cpuacct").map(PathBuf::as_path),
        Some(Path::new("/sys/fs/cgroup/cpu,cpuacct"))
    );
}

/// Every v2 file the table names, each value landing in its own field
/// with its source recorded.
#[test]
fn every_v2_file_reaches_its_field() {
    let d = tempfile::tempdir().unwrap();
    let g = d.path().join("g");
    write(
        &g,
        "cpu.stat",
        "usage_usec 1\nnr_throttled 2\nthrottled_usec 3\n",
    );
    write(&g, "cpu.max", "max 100000\n");
    write(&g, "cpu.weight", "200\n");
    write(&g, "cpu.weight.nice", "-5\n");
    for (i, f) in ["memory.current", "memory.max", "memory.high"]
        .into_iter()
        .enumerate()
    {
        write(&g, f, &format!("{}\n", 4096 * (i + 1)));
    }
    write(&g, "memory.low", "max\n");
    write(&g, "memory.min", "7\n");
    write(&g, "memory.stat", "anon 11\nfile 12\n");
    write(&g, "pids.current", "5\n");
    write(&g, "pids.max", "max\n");
    let roots = CgroupRoots {
        v2: Some(d.path().to_path_buf()),
        v1: BTreeMap::new(),
    };
    let s = read_cgroup_stats(&roots, "/g", &BTreeMap::new());
    let cpu = CgroupCpuStats {
        usage_usec: Some(1),
        nr_throttled: Some(2),
        throttled_usec: Some(3),
        max_quota_us: Some(UNLIMITED),
        max_period_us: Some(100000),
        weight: Some(200),
        weight_nice: Some(-5),
    };
    assert_eq!(s.cpu, cpu);
    let m = &s.memory;
    assert_eq!(
        (m.current, m.max, m.high),
        (Some(4096), Some(8192), Some(12288))
    );
    assert_eq!((m.low, m.min), (Some(UNLIMITED), Some(7)));
    assert_eq!(m.stat.get("file"), Some(&12));
    assert!(m.events.is_empty());
    assert_eq!(
        s.pids,
        CgroupPidsStats {
            current: Some(5),
            max: Some(UNLIMITED)
        }
    );
    let keys: Vec<&str> = s.sources.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "cpu.max_period_us",
            "cpu.max_quota_us",
            "cpu.nr_throttled",
            "cpu.throttled_usec",
            "cpu.usage_usec",
            "cpu.weight",
            "cpu.weight_nice",
            "memory.current",
            "memory.high",
            "memory.low",
            "memory.max",
            "memory.min",
            "memory.stat",
            "pids.current",
            "pids.max",
        ]
    );
    assert!(s.sources.values().all(|v| *v == CgroupVersion::V2));
}

/// Every v1 controller file the table names, on a v1-only host.
#[test]
fn every_v1_file_reaches_its_field() {
    let d = tempfile::tempdir().unwrap();
    let dir = |c: &str| d.path().join(c).join("g");
    write(&dir("cpuacct"), "cpuacct.usage", "5000000\n");
    write(&dir("cpu"), "cpu.cfs_quota_us", "50000\n");
    write(&dir("cpu"), "cpu.cfs_period_us", "100000\n");
    write(&dir("cpu"), "cpu.shares", "262144\n");
    write(
        &dir("cpu"),
        "cpu.stat",
        "nr_throttled 3\nthrottled_time 7000\n",
    );
    write(&dir("memory"), "memory.usage_in_bytes", "4096\n");
    write(&dir("memory"), "memory.limit_in_bytes", "8192\n");
    write(&dir("memory"), "memory.stat", "cache 9\n");
    write(&dir("pids"), "pids.current", "2\n");
    write(&dir("pids"), "pids.max", "64\n");
    let ctrls = ["cpuacct", "cpu", "memory", "pids"];
    let roots = CgroupRoots {
        v2: None,
        v1: ctrls
            .iter()
            .map(|c| (c.to_string(), d.path().join(c)))
            .collect(),
    };
    let paths = ctrls.iter().map(|c| (c.to_string(), "/g".into())).collect();
    let s = read_cgroup_stats(&roots, "/", &paths);
    let cpu = CgroupCpuStats {
        usage_usec: Some(5000),
        nr_throttled: Some(3),
        throttled_usec: Some(7),
        max_quota_us: Some(50000),
        max_period_us: Some(100000),
        weight: Some(10000),
        weight_nice: None,
    };
    assert_eq!(s.cpu, cpu);
    assert_eq!((s.memory.current, s.memory.max), (Some(4096), Some(8192)));
    assert_eq!(s.memory.stat.get("cache"), Some(&9));
    assert_eq!(
        s.pids,
        CgroupPidsStats {
            current: Some(2),
            max: Some(64)
        }
    );
    assert_eq!(s.sources.len(), 11);
    assert!(s.sources.values().all(|v| *v == CgroupVersion::V1));
}
