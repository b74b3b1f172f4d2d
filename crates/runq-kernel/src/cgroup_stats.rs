//! Per-cgroup enrichment: cpu, memory and pids figures and PSI read from
//! cgroup v2 files, falling back to the v1 controllers on hybrid hosts.
//! Every value records the cgroup version it came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cgroup::CgroupMount;
use crate::psi::{read_psi, Psi};

/// Which cgroup hierarchy a value was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// A v1 controller hierarchy.
    V1,
    /// The unified hierarchy.
    V2,
}

/// cpu controller figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupCpuStats {
    /// CPU time used, µs (`cpu.stat usage_usec`; v1 `cpuacct.usage` / 1000).
    pub usage_usec: Option<u64>,
    /// Throttled periods.
    pub nr_throttled: Option<u64>,
    /// Time throttled, µs.
    pub throttled_usec: Option<u64>,
    /// Quota per period, µs; `None` when unlimited.
    pub max_quota_us: Option<u64>,
    /// Period, µs.
    pub max_period_us: Option<u64>,
    /// `cpu.weight` (v1: converted from `cpu.shares`).
    pub weight: Option<u64>,
    /// `cpu.weight.nice`.
    pub weight_nice: Option<i64>,
}

/// memory controller figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupMemoryStats {
    /// Bytes in use.
    pub current: Option<u64>,
    /// Hard limit in bytes; `None` when unlimited.
    pub max: Option<u64>,
    /// Throttling limit in bytes.
    pub high: Option<u64>,
    /// Best-effort protection in bytes.
    pub low: Option<u64>,
    /// Hard protection in bytes.
    pub min: Option<u64>,
    /// `memory.stat` as a flat map.
    pub stat: BTreeMap<String, u64>,
    /// `memory.events` as a flat map.
    pub events: BTreeMap<String, u64>,
}

/// pids controller figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupPidsStats {
    /// Tasks in the cgroup.
    pub current: Option<u64>,
    /// Task limit; `None` when unlimited.
    pub max: Option<u64>,
}

/// Everything ctprof records about one cgroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupStats {
    /// cpu figures.
    pub cpu: CgroupCpuStats,
    /// memory figures.
    pub memory: CgroupMemoryStats,
    /// pids figures.
    pub pids: CgroupPidsStats,
    /// Pressure (v2 only).
    pub psi: Psi,
    /// `controller.field` -> version it was read from.
    pub sources: BTreeMap<String, CgroupVersion>,
}

/// Where each hierarchy is mounted: the v2 root and v1 roots by controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupRoots {
    /// The unified hierarchy's mount point.
    pub v2: Option<PathBuf>,
    /// v1 mount points by controller name.
    pub v1: BTreeMap<String, PathBuf>,
}

impl CgroupRoots {
    /// Builds the roots from parsed mountinfo.
    pub fn from_mounts(mounts: &[CgroupMount]) -> Self {
        let mut roots = CgroupRoots::default();
        for m in mounts {
            match &m.v1_controllers {
                None => {
                    roots.v2.get_or_insert_with(|| m.mount_point.clone());
                }
                Some(ctrls) => {
                    for c in ctrls {
                        roots
                            .v1
                            .entry(c.clone())
                            .or_insert_with(|| m.mount_point.clone());
                    }
                }
            }
        }
        roots
    }

    /// Reads `/proc/self/mountinfo`.
    pub fn detect() -> Self {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Self::from_mounts(&crate::cgroup::parse_mountinfo(&text))
    }
}

fn join(root: &Path, rel: &str) -> PathBuf {
    root.join(rel.trim_start_matches('/'))
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// Parses a single number, `max` as `None`.
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse().ok()
}

/// Parses `key value` lines into a map (cpu.stat, memory.stat, memory.events).
pub fn parse_flat_keyed(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Parses `cpu.max` (`max 100000` or `50000 100000`).
pub fn parse_cpu_max(text: &str) -> (Option<u64>, Option<u64>) {
    let mut it = text.split_ascii_whitespace();
    let quota = it.next().and_then(parse_limit);
    let period = it.next().and_then(|p| p.parse().ok());
    (quota, period)
}

fn set<T>(
    slot: &mut Option<T>,
    v: Option<T>,
    sources: &mut BTreeMap<String, CgroupVersion>,
    key: &str,
    ver: CgroupVersion,
) {
    if slot.is_none() && v.is_some() {
        *slot = v;
        sources.insert(key.to_string(), ver);
    }
}

/// Reads one cgroup. `v2_path` is the task's `0::` path; `v1_paths` its v1
/// paths by controller (from `/proc/<tid>/cgroup`). v2 files win; v1 fills
/// what v2 did not provide.
pub fn read_cgroup_stats(
    roots: &CgroupRoots,
    v2_path: &str,
    v1_paths: &BTreeMap<String, String>,
) -> CgroupStats {
    let mut st = CgroupStats::default();
    if let Some(root) = &roots.v2 {
        read_v2(&join(root, v2_path), &mut st);
    }
    let v1_dir = |ctrl: &str| Some(join(roots.v1.get(ctrl)?, v1_paths.get(ctrl)?));
    read_v1(&v1_dir, &mut st);
    st
}

fn read_v2(dir: &Path, st: &mut CgroupStats) {
    use CgroupVersion::V2;
    let src = &mut st.sources;
    if let Some(t) = read(dir, "cpu.stat") {
        let m = parse_flat_keyed(&t);
        set(
            &mut st.cpu.usage_usec,
            m.get("usage_usec").copied(),
            src,
            "cpu.usage_usec",
            V2,
        );
        set(
            &mut st.cpu.nr_throttled,
            m.get("nr_throttled").copied(),
            src,
            "cpu.nr_throttled",
            V2,
        );
        set(
            &mut st.cpu.throttled_usec,
            m.get("throttled_usec").copied(),
            src,
            "cpu.throttled_usec",
            V2,
        );
    }
    if let Some(t) = read(dir, "cpu.max") {
        let (q, p) = parse_cpu_max(&t);
        set(&mut st.cpu.max_quota_us, q, src, "cpu.max_quota_us", V2);
        set(&mut st.cpu.max_period_us, p, src, "cpu.max_period_us", V2);
    }
    set(
        &mut st.cpu.weight,
        read(dir, "cpu.weight").and_then(|t| t.trim().parse().ok()),
        src,
        "cpu.weight",
        V2,
    );
    set(
        &mut st.cpu.weight_nice,
        read(dir, "cpu.weight.nice").and_then(|t| t.trim().parse().ok()),
        src,
        "cpu.weight_nice",
        V2,
    );
    set(
        &mut st.memory.current,
        read(dir, "memory.current").and_then(|t| parse_limit(&t)),
        src,
        "memory.current",
        V2,
    );
    for (file, slot) in [
        ("memory.max", &mut st.memory.max),
        ("memory.high", &mut st.memory.high),
        ("memory.low", &mut st.memory.low),
        ("memory.min", &mut st.memory.min),
    ] {
        set(
            slot,
            read(dir, file).and_then(|t| parse_limit(&t)),
            src,
            file,
            V2,
        );
    }
    if let Some(t) = read(dir, "memory.stat") {
        st.memory.stat = parse_flat_keyed(&t);
        src.insert("memory.stat".into(), V2);
    }
    if let Some(t) = read(dir, "memory.events") {
        st.memory.events = parse_flat_keyed(&t);
        src.insert("memory.events".into(), V2);
    }
    set(
        &mut st.pids.current,
        read(dir, "pids.current").and_then(|t| parse_limit(&t)),
        src,
        "pids.current",
        V2,
    );
    set(
        &mut st.pids.max,
        read(dir, "pids.max").and_then(|t| parse_limit(&t)),
        src,
        "pids.max",
        V2,
    );
    st.psi = read_psi(dir, ".pressure");
}

/// v1 `memory.limit_in_bytes` reports "unlimited" as a huge page-aligned value.
fn v1_mem_limit(t: &str) -> Option<u64> {
    parse_limit(t).filter(|&v| v < (1u64 << 62))
}

fn read_v1(dir_for: &dyn Fn(&str) -> Option<PathBuf>, st: &mut CgroupStats) {
    use CgroupVersion::V1;
    let src = &mut st.sources;
    if let Some(d) = dir_for("cpuacct") {
        let usage = read(&d, "cpuacct.usage").and_then(|t| t.trim().parse::<u64>().ok());
        set(
            &mut st.cpu.usage_usec,
            usage.map(|ns| ns / 1000),
            src,
            "cpu.usage_usec",
            V1,
        );
    }
    if let Some(d) = dir_for("cpu") {
        if let Some(t) = read(&d, "cpu.stat") {
            let m = parse_flat_keyed(&t);
            set(
                &mut st.cpu.nr_throttled,
                m.get("nr_throttled").copied(),
                src,
                "cpu.nr_throttled",
                V1,
            );
            let thr = m.get("throttled_time").map(|ns| ns / 1000);
            set(
                &mut st.cpu.throttled_usec,
                thr,
                src,
                "cpu.throttled_usec",
                V1,
            );
        }
        let quota = read(&d, "cpu.cfs_quota_us").and_then(|t| t.trim().parse::<i64>().ok());
        if quota.is_some() && !st.sources.contains_key("cpu.max_period_us") {
            let q = quota.and_then(|q| u64::try_from(q).ok());
            st.cpu.max_quota_us = q;
            st.sources.insert("cpu.max_quota_us".into(), V1);
            let period = read(&d, "cpu.cfs_period_us").and_then(|t| t.trim().parse().ok());
            set(
                &mut st.cpu.max_period_us,
                period,
                &mut st.sources,
                "cpu.max_period_us",
                V1,
            );
        }
        let shares = read(&d, "cpu.shares").and_then(|t| t.trim().parse::<u64>().ok());
        let weight = shares.map(|s| 1 + (s.clamp(2, 262_144) - 2) * 9999 / 262_142);
        set(
            &mut st.cpu.weight,
            weight,
            &mut st.sources,
            "cpu.weight",
            V1,
        );
    }
    let src = &mut st.sources;
    if let Some(d) = dir_for("memory") {
        set(
            &mut st.memory.current,
            read(&d, "memory.usage_in_bytes").and_then(|t| parse_limit(&t)),
            src,
            "memory.current",
            V1,
        );
        set(
            &mut st.memory.max,
            read(&d, "memory.limit_in_bytes").and_then(|t| v1_mem_limit(&t)),
            src,
            "memory.max",
            V1,
        );
        if st.memory.stat.is_empty() {
            if let Some(t) = read(&d, "memory.stat") {
                st.memory.stat = parse_flat_keyed(&t);
                src.insert("memory.stat".into(), V1);
            }
        }
    }
    if let Some(d) = dir_for("pids") {
        set(
            &mut st.pids.current,
            read(&d, "pids.current").and_then(|t| parse_limit(&t)),
            src,
            "pids.current",
            V1,
        );
        set(
            &mut st.pids.max,
            read(&d, "pids.max").and_then(|t| parse_limit(&t)),
            src,
            "pids.max",
            V1,
        );
    }
}

#[cfg(test)]
mod tests;
