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

/// A limit that does not limit: a v2 file saying `max`, or v1's "no
/// limit" value. Kept apart from a missing figure (`None`), so readers can
/// say "unlimited" where they would say "unavailable".
pub const UNLIMITED: u64 = u64::MAX;

/// Parses a single number, `max` as [`UNLIMITED`].
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return Some(UNLIMITED);
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

/// A figure's destination: its `controller.field` key in
/// [`CgroupStats::sources`] and its slot.
struct Dest<T> {
    key: &'static str,
    slot: fn(&mut CgroupStats) -> &mut Option<T>,
}

impl<T> Dest<T> {
    const fn new(key: &'static str, slot: fn(&mut CgroupStats) -> &mut Option<T>) -> Self {
        Dest { key, slot }
    }

    /// Stores `v` unless the slot is already filled (v2 is read first, so
    /// v2 wins), recording the version it came from.
    fn fill(&self, st: &mut CgroupStats, v: Option<T>, ver: CgroupVersion) {
        let slot = (self.slot)(st);
        if slot.is_none() && v.is_some() {
            *slot = v;
            st.sources.insert(self.key.to_string(), ver);
        }
    }
}

// The destinations, shared by the v2 and v1 tables below.
const CPU_USAGE: Dest<u64> = Dest::new("cpu.usage_usec", |s| &mut s.cpu.usage_usec);
const CPU_NR_THROTTLED: Dest<u64> = Dest::new("cpu.nr_throttled", |s| &mut s.cpu.nr_throttled);
const CPU_THROTTLED: Dest<u64> = Dest::new("cpu.throttled_usec", |s| &mut s.cpu.throttled_usec);
const CPU_QUOTA: Dest<u64> = Dest::new("cpu.max_quota_us", |s| &mut s.cpu.max_quota_us);
const CPU_PERIOD: Dest<u64> = Dest::new("cpu.max_period_us", |s| &mut s.cpu.max_period_us);
const CPU_WEIGHT: Dest<u64> = Dest::new("cpu.weight", |s| &mut s.cpu.weight);
const CPU_WEIGHT_NICE: Dest<i64> = Dest::new("cpu.weight_nice", |s| &mut s.cpu.weight_nice);
const MEM_CURRENT: Dest<u64> = Dest::new("memory.current", |s| &mut s.memory.current);
const MEM_MAX: Dest<u64> = Dest::new("memory.max", |s| &mut s.memory.max);
const MEM_HIGH: Dest<u64> = Dest::new("memory.high", |s| &mut s.memory.high);
const MEM_LOW: Dest<u64> = Dest::new("memory.low", |s| &mut s.memory.low);
const MEM_MIN: Dest<u64> = Dest::new("memory.min", |s| &mut s.memory.min);
const PIDS_CURRENT: Dest<u64> = Dest::new("pids.current", |s| &mut s.pids.current);
const PIDS_MAX: Dest<u64> = Dest::new("pids.max", |s| &mut s.pids.max);

/// A file holding one value: its name, its parser and where the value goes.
struct ValueFile<T> {
    file: &'static str,
    parse: fn(&str) -> Option<T>,
    to: Dest<T>,
}

impl<T> ValueFile<T> {
    const fn new(file: &'static str, parse: fn(&str) -> Option<T>, to: Dest<T>) -> Self {
        ValueFile { file, parse, to }
    }

    fn read(&self, dir: &Path, st: &mut CgroupStats, ver: CgroupVersion) {
        let v = read(dir, self.file).and_then(|t| (self.parse)(&t));
        self.to.fill(st, v, ver);
    }
}

/// A `key value` file (`cpu.stat`): the keys read, each with the divisor
/// that converts it to the destination's unit.
struct KeyedFile {
    file: &'static str,
    keys: &'static [(&'static str, u64, Dest<u64>)],
}

impl KeyedFile {
    fn read(&self, dir: &Path, st: &mut CgroupStats, ver: CgroupVersion) {
        if let Some(t) = read(dir, self.file) {
            let m = parse_flat_keyed(&t);
            for (key, div, to) in self.keys {
                to.fill(st, m.get(*key).map(|v| v / div), ver);
            }
        }
    }
}

/// A `key value` file kept whole as a map (`memory.stat`), read unless
/// the map is already filled.
struct MapFile {
    file: &'static str,
    slot: fn(&mut CgroupStats) -> &mut BTreeMap<String, u64>,
}

impl MapFile {
    fn read(&self, dir: &Path, st: &mut CgroupStats, ver: CgroupVersion) {
        if !(self.slot)(st).is_empty() {
            return;
        }
        if let Some(t) = read(dir, self.file) {
            *(self.slot)(st) = parse_flat_keyed(&t);
            st.sources.insert(self.file.into(), ver);
        }
    }
}

/// A number that has no `max` spelling.
fn parse_num<T: std::str::FromStr>(t: &str) -> Option<T> {
    t.trim().parse().ok()
}

/// v2 `cpu.stat`.
const V2_CPU_STAT: KeyedFile = KeyedFile {
    file: "cpu.stat",
    keys: &[
        ("usage_usec", 1, CPU_USAGE),
        ("nr_throttled", 1, CPU_NR_THROTTLED),
        ("throttled_usec", 1, CPU_THROTTLED),
    ],
};

/// v2 files holding one number (`max` reads as unlimited).
const V2_VALUES: [ValueFile<u64>; 8] = [
    ValueFile::new("cpu.weight", parse_num, CPU_WEIGHT),
    ValueFile::new("memory.current", parse_limit, MEM_CURRENT),
    ValueFile::new("memory.max", parse_limit, MEM_MAX),
    ValueFile::new("memory.high", parse_limit, MEM_HIGH),
    ValueFile::new("memory.low", parse_limit, MEM_LOW),
    ValueFile::new("memory.min", parse_limit, MEM_MIN),
    ValueFile::new("pids.current", parse_limit, PIDS_CURRENT),
    ValueFile::new("pids.max", parse_limit, PIDS_MAX),
];

/// v2 `cpu.weight.nice`, the one signed figure.
const V2_WEIGHT_NICE: ValueFile<i64> =
    ValueFile::new("cpu.weight.nice", parse_num, CPU_WEIGHT_NICE);

/// `memory.stat` (v2, and v1 where v2 gave none).
const MEMORY_STAT: MapFile = MapFile {
    file: "memory.stat",
    slot: |s| &mut s.memory.stat,
};

/// v2 `key value` files kept whole.
const V2_MAPS: [MapFile; 2] = [
    MEMORY_STAT,
    MapFile {
        file: "memory.events",
        slot: |s| &mut s.memory.events,
    },
];

/// v1 `cpu.stat` (throttled time in ns).
const V1_CPU_STAT: KeyedFile = KeyedFile {
    file: "cpu.stat",
    keys: &[
        ("nr_throttled", 1, CPU_NR_THROTTLED),
        ("throttled_time", 1000, CPU_THROTTLED),
    ],
};

/// v1 files holding one number, by controller.
const V1_VALUES: [(&str, &[ValueFile<u64>]); 4] = [
    (
        "cpuacct",
        &[ValueFile::new(
            "cpuacct.usage",
            |t| parse_num::<u64>(t).map(|ns| ns / 1000),
            CPU_USAGE,
        )],
    ),
    (
        "cpu",
        &[ValueFile::new(
            "cpu.shares",
            |t| parse_num::<u64>(t).map(weight_from_shares),
            CPU_WEIGHT,
        )],
    ),
    (
        "memory",
        &[
            ValueFile::new("memory.usage_in_bytes", parse_limit, MEM_CURRENT),
            ValueFile::new("memory.limit_in_bytes", v1_mem_limit, MEM_MAX),
        ],
    ),
    (
        "pids",
        &[
            ValueFile::new("pids.current", parse_limit, PIDS_CURRENT),
            ValueFile::new("pids.max", parse_limit, PIDS_MAX),
        ],
    ),
];

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
    V2_CPU_STAT.read(dir, st, V2);
    if let Some(t) = read(dir, "cpu.max") {
        let (quota, period) = parse_cpu_max(&t);
        CPU_QUOTA.fill(st, quota, V2);
        CPU_PERIOD.fill(st, period, V2);
    }
    for f in &V2_VALUES {
        f.read(dir, st, V2);
    }
    V2_WEIGHT_NICE.read(dir, st, V2);
    for f in &V2_MAPS {
        f.read(dir, st, V2);
    }
    st.psi = read_psi(dir, ".pressure");
}

/// v1 `memory.limit_in_bytes` reports "unlimited" as a huge page-aligned
/// value: [`UNLIMITED`].
fn v1_mem_limit(t: &str) -> Option<u64> {
    parse_limit(t).map(|v| if v >= 1u64 << 62 { UNLIMITED } else { v })
}

/// v1 `cpu.shares` (2..=262144, default 1024) mapped onto `cpu.weight`
/// (1..=10000) by the linear formula container runtimes (runc) use.
fn weight_from_shares(shares: u64) -> u64 {
    1 + (shares.clamp(2, 262_144) - 2) * 9999 / 262_142
}

fn read_v1(dir_for: &dyn Fn(&str) -> Option<PathBuf>, st: &mut CgroupStats) {
    use CgroupVersion::V1;
    for (ctrl, files) in &V1_VALUES {
        if let Some(d) = dir_for(ctrl) {
            for f in *files {
                f.read(&d, st, V1);
            }
        }
    }
    if let Some(d) = dir_for("cpu") {
        V1_CPU_STAT.read(&d, st, V1);
        read_v1_quota(&d, st);
    }
    if let Some(d) = dir_for("memory") {
        MEMORY_STAT.read(&d, st, V1);
    }
}

/// v1 `cpu.cfs_quota_us` (-1: unlimited) and `cpu.cfs_period_us`, unless
/// v2's `cpu.max` gave the period.
fn read_v1_quota(dir: &Path, st: &mut CgroupStats) {
    let quota = read(dir, "cpu.cfs_quota_us").and_then(|t| parse_num::<i64>(&t));
    if quota.is_some() && !st.sources.contains_key(CPU_PERIOD.key) {
        st.cpu.max_quota_us = quota.map(|q| u64::try_from(q).unwrap_or(UNLIMITED));
        st.sources.insert(CPU_QUOTA.key.into(), CgroupVersion::V1);
        let period = read(dir, "cpu.cfs_period_us").and_then(|t| parse_num(&t));
        CPU_PERIOD.fill(st, period, CgroupVersion::V1);
    }
}

#[cfg(test)]
mod tests;
