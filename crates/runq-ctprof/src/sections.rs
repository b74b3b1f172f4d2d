//! The secondary sub-tables: per-cgroup stats, limits, memory.stat,
//! memory.events and pressure (under `--group-by cgroup`), host pressure,
//! smaps_rollup and sched_ext. Each yields `(group, key, unit, value)`
//! readings per snapshot, joined into rows like the metric tables.

use std::collections::BTreeMap;

use crate::avail::{Reason, Source};
use crate::group::{flatten_cgroup, group_threads_named, CommNames, GroupBy};
use crate::model::{CgroupStats, CtprofSnapshot, Psi, PsiResource};
use crate::registry::{Section, Unit};
use crate::view::{Cell, Matched, Row, RowSpec, ViewOptions};

type Readings = BTreeMap<(String, String), (Unit, Cell)>;

/// How readings of several cgroups that flatten onto one row combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Counters and usage: the sum.
    Sum,
    /// Limits and weights: `[min, max]` (one value when they agree).
    Range,
    /// Pressure averages (percent of time): the largest, so three pods
    /// stalled 40% of the time read 40%, not 120%.
    Max,
}

fn num(v: Option<u64>) -> Cell {
    v.map_or(Cell::Missing, |v| Cell::Num { value: v as f64 })
}

/// A limit's cell: "unlimited" spelled out (a `max` file), apart from a
/// limit that could not be read (missing).
fn limit(v: Option<u64>) -> Cell {
    match v {
        Some(runq_kernel::cgroup_stats::UNLIMITED) => Cell::Text {
            text: "unlimited".into(),
            scalar: None,
        },
        v => num(v),
    }
}

fn as_i64(v: f64) -> i64 {
    // `as` saturates: u64::MAX-like "unlimited" values stay the largest.
    v as i64
}

/// Combines an existing reading with a new one by `rule`.
pub fn merge(rule: Merge, old: &Cell, new: Cell) -> Cell {
    match (rule, old, new) {
        (_, Cell::Missing, c) => c,
        (_, old, Cell::Missing) => old.clone(),
        (Merge::Sum, Cell::Num { value: a }, Cell::Num { value: b }) => Cell::Num { value: a + b },
        (Merge::Max, Cell::Num { value: a }, Cell::Num { value: b }) => {
            Cell::Num { value: a.max(b) }
        }
        (Merge::Range, Cell::Num { value: a }, Cell::Num { value: b }) if *a == b => old.clone(),
        (Merge::Range, Cell::Num { value: a }, Cell::Num { value: b }) => Cell::Range {
            min: as_i64(a.min(b)),
            max: as_i64(a.max(b)),
        },
        (Merge::Range, Cell::Range { min, max }, Cell::Num { value }) => Cell::Range {
            min: (*min).min(as_i64(value)),
            max: (*max).max(as_i64(value)),
        },
        (_, old, _) => old.clone(),
    }
}

fn add(r: &mut Readings, group: &str, key: &str, unit: Unit, rule: Merge, cell: Cell) {
    let slot = r
        .entry((group.to_string(), key.to_string()))
        .or_insert((unit, Cell::Missing));
    slot.1 = merge(rule, &slot.1, cell);
}

fn psi_readings(r: &mut Readings, group: &str, psi: &Psi) {
    let res: [(&str, &Option<PsiResource>); 4] = [
        ("cpu", &psi.cpu),
        ("memory", &psi.memory),
        ("io", &psi.io),
        ("irq", &psi.irq),
    ];
    for (name, p) in res {
        let Some(p) = p else { continue };
        for (kind, line) in [("some", p.some), ("full", p.full)] {
            let Some(l) = line else { continue };
            let total = Cell::Num {
                value: l.total_us as f64 * 1000.0,
            };
            add(
                r,
                group,
                &format!("{name}.{kind}.total"),
                Unit::Ns,
                Merge::Sum,
                total,
            );
            for (avg, v) in [("avg10", l.avg10), ("avg60", l.avg60), ("avg300", l.avg300)] {
                let key = format!("{name}.{kind}.{avg}");
                add(
                    r,
                    group,
                    &key,
                    Unit::Scalar,
                    Merge::Max,
                    Cell::Num { value: v },
                );
            }
        }
    }
}

fn cgroup_readings(section: Section, r: &mut Readings, group: &str, st: &CgroupStats) {
    let us = |v: Option<u64>| num(v.map(|u| u.saturating_mul(1000)));
    let (rule, values): (Merge, Vec<(&str, Unit, Cell)>) = match section {
        Section::CgroupStats => (
            Merge::Sum,
            vec![
                ("cpu.usage", Unit::Ns, us(st.cpu.usage_usec)),
                ("cpu.nr_throttled", Unit::Count, num(st.cpu.nr_throttled)),
                ("cpu.throttled", Unit::Ns, us(st.cpu.throttled_usec)),
                ("memory.current", Unit::Bytes, num(st.memory.current)),
                ("pids.current", Unit::Count, num(st.pids.current)),
            ],
        ),
        Section::CgroupLimits => (
            Merge::Range,
            vec![
                ("cpu.max_quota_us", Unit::Scalar, limit(st.cpu.max_quota_us)),
                ("cpu.max_period_us", Unit::Scalar, num(st.cpu.max_period_us)),
                ("cpu.weight", Unit::Scalar, num(st.cpu.weight)),
                ("memory.max", Unit::Bytes, limit(st.memory.max)),
                ("memory.high", Unit::Bytes, limit(st.memory.high)),
                ("memory.low", Unit::Bytes, limit(st.memory.low)),
                ("memory.min", Unit::Bytes, limit(st.memory.min)),
                ("pids.max", Unit::Count, limit(st.pids.max)),
            ],
        ),
        Section::MemoryStat => (
            Merge::Sum,
            st.memory
                .stat
                .iter()
                .map(|(k, v)| (k.as_str(), memory_stat_unit(k), memory_stat_cell(k, *v)))
                .collect(),
        ),
        Section::MemoryEvents => (
            Merge::Sum,
            st.memory
                .events
                .iter()
                .map(|(k, v)| (k.as_str(), Unit::Count, num(Some(*v))))
                .collect(),
        ),
        Section::Pressure => return psi_readings(r, group, &st.psi),
        _ => return,
    };
    for (key, unit, cell) in values {
        add(r, group, key, unit, rule, cell);
    }
}

/// v1's `hierarchical_memory_limit` and `hierarchical_memsw_limit`: byte
/// limits, not counters.
fn is_v1_stat_limit(k: &str) -> bool {
    k.starts_with("hierarchical_") && k.ends_with("_limit")
}

/// A memory.stat value's cell: v1's limits read "unlimited" when they are
/// (the kernel writes its page-aligned maximum, 9223372036854771712).
fn memory_stat_cell(k: &str, v: u64) -> Cell {
    if is_v1_stat_limit(k) && v >= 1u64 << 62 {
        return limit(Some(runq_kernel::cgroup_stats::UNLIMITED));
    }
    num(Some(v))
}

/// memory.stat keys that count events or pages rather than bytes.
fn memory_stat_unit(k: &str) -> Unit {
    if is_v1_stat_limit(k) {
        return Unit::Bytes;
    }
    // v1 prefixes hierarchical totals with `total_`.
    let base = k.strip_prefix("total_").unwrap_or(k);
    let counted = ["pg", "workingset_", "thp_", "zswp", "hierarchical_"]
        .iter()
        .any(|p| base.starts_with(p));
    if counted {
        Unit::Count
    } else {
        Unit::Bytes
    }
}

fn sched_ext_readings(r: &mut Readings, x: &crate::model::SchedExtSysfs) {
    let text = Cell::Text {
        text: x.state.clone(),
        scalar: None,
    };
    add(r, "host", "state", Unit::Text, Merge::Sum, text);
    for (key, unit, v) in [
        ("switch_all", Unit::Scalar, x.switch_all),
        ("nr_rejected", Unit::Count, x.nr_rejected),
        ("enable_seq", Unit::Count, x.enable_seq),
        ("hotplug_seq", Unit::Count, x.hotplug_seq),
    ] {
        add(r, "host", key, unit, Merge::Sum, num(Some(v)));
    }
}

/// The readings of one section in one snapshot.
fn readings(
    section: Section,
    snap: &CtprofSnapshot,
    opts: &ViewOptions,
    names: Option<&CommNames>,
) -> Readings {
    let mut r = Readings::new();
    match section {
        Section::HostPressure => psi_readings(&mut r, "host", &snap.psi),
        Section::SchedExt => {
            if let Some(x) = &snap.sched_ext {
                sched_ext_readings(&mut r, x);
            }
        }
        Section::SmapsRollup => {
            for (g, threads) in group_threads_named(&snap.threads, &opts.grouping, names) {
                for t in threads.iter().filter(|t| t.tid == t.tgid) {
                    for (k, kb) in &t.smaps_rollup_kb {
                        let bytes = num(Some(kb.saturating_mul(1024)));
                        add(&mut r, &g, k, Unit::Bytes, Merge::Sum, bytes);
                    }
                }
            }
        }
        s if s.needs_cgroup_grouping() => {
            for (path, st) in &snap.cgroup_stats {
                cgroup_readings(s, &mut r, &flatten_cgroup(path, &opts.grouping.flatten), st);
            }
        }
        _ => {}
    }
    r
}

/// Groups whose every process leader's smaps_rollup could not be read,
/// with the reason (a non-root capture cannot read root's processes).
fn smaps_unread(
    snap: &CtprofSnapshot,
    opts: &ViewOptions,
    names: Option<&CommNames>,
) -> BTreeMap<String, Reason> {
    let mut out = BTreeMap::new();
    for (g, threads) in group_threads_named(&snap.threads, &opts.grouping, names) {
        let mut leaders = threads.iter().filter(|t| t.tid == t.tgid).peekable();
        let Some(first) = leaders.peek() else {
            continue;
        };
        let Some(&why) = first.unavailable.get(&Source::SmapsRollup) else {
            continue;
        };
        if leaders.all(|t| t.unavailable.contains_key(&Source::SmapsRollup)) {
            out.insert(g, why);
        }
    }
    out
}

/// One side's readings of a section and the groups it could not read.
struct SideReadings {
    values: Readings,
    unread: BTreeMap<String, Reason>,
}

fn side_readings(
    s: Section,
    snap: &CtprofSnapshot,
    opts: &ViewOptions,
    names: Option<&CommNames>,
) -> SideReadings {
    SideReadings {
        values: readings(s, snap, opts, names),
        unread: match s {
            Section::SmapsRollup => smaps_unread(snap, opts, names),
            _ => BTreeMap::new(),
        },
    }
}

/// Joins one section's readings of both sides into rows. A group present
/// on one side only because the other could not read it is flagged
/// incomparable rather than unmatched.
fn join(s: Section, b: &SideReadings, c: Option<&SideReadings>, rows: &mut Vec<Row>) {
    let keys: std::collections::BTreeSet<&(String, String)> = b
        .values
        .keys()
        .chain(c.iter().flat_map(|c| c.values.keys()))
        .collect();
    let mut keys: Vec<_> = keys.into_iter().collect();
    // PSI windows in time order: avg10, avg60, avg300.
    keys.sort_by_cached_key(|k| {
        let order =
            k.1.replace(".avg10", ".avg010")
                .replace(".avg60", ".avg060");
        (k.0.clone(), order)
    });
    for k in keys {
        let bv = b.values.get(k);
        let cv = c.and_then(|c| c.values.get(k));
        let unit = bv.or(cv).map_or(Unit::Count, |v| v.0);
        let unread = |side: Option<&SideReadings>| side.and_then(|x| x.unread.get(&k.0)).copied();
        let mut matched = Matched::of(bv.is_some(), cv.is_some(), c.is_some());
        let mut why = match matched {
            Matched::Both => None,
            Matched::BaselineOnly => unread(c).map(|r| (r, "candidate")),
            Matched::CandidateOnly => unread(Some(b)).map(|r| (r, "baseline")),
        };
        if why.is_some() {
            matched = Matched::Both;
        }
        let cell = |v: Option<&(Unit, Cell)>| v.map_or(Cell::Missing, |v| v.1.clone());
        let ratio = unit == Unit::Scalar && k.1.contains(".avg");
        let spec = RowSpec {
            section: s,
            derived: false,
            group: &k.0,
            threads: (0, 0),
            metric: &k.1,
            unit,
            is_ratio: ratio,
            matched,
        };
        let mut r = spec.row(cell(bv), cell(cv));
        r.incomparable = why
            .take()
            .map(|(r, side)| format!("smaps_rollup {} in {side}", r.name()));
        rows.push(r);
    }
}

/// Rows of every requested secondary section, with `--limit` applied to
/// each section as to the metric tables (`--metrics` picks rows of the
/// primary and derived tables only: the secondary ones keep their fixed
/// shape); also how many rows the limit left out, by section name.
pub fn secondary_rows(
    base: &CtprofSnapshot,
    cand: Option<&CtprofSnapshot>,
    opts: &ViewOptions,
    names: Option<&CommNames>,
) -> (Vec<Row>, BTreeMap<&'static str, usize>) {
    let mut rows = Vec::new();
    let mut omitted = BTreeMap::new();
    for s in Section::ALL.into_iter().skip(3) {
        if !opts.sections.is_empty() && !opts.sections.contains(&s) {
            continue;
        }
        if s.needs_cgroup_grouping() && opts.grouping.by != GroupBy::Cgroup {
            continue;
        }
        let b = side_readings(s, base, opts, names);
        let c = cand.map(|c| side_readings(s, c, opts, names));
        let mut section = Vec::new();
        join(s, &b, c.as_ref(), &mut section);
        // Flagged rows after the comparable ones, order otherwise kept.
        section.sort_by_key(|r| r.incomparable.is_some());
        if let Some(limit) = opts.limit.filter(|l| *l > 0 && section.len() > *l) {
            omitted.insert(s.name(), section.len() - limit);
            section.truncate(limit);
        }
        rows.extend(section);
    }
    (rows, omitted)
}

#[cfg(test)]
mod tests;
