//! The secondary sub-tables: per-cgroup stats, limits, memory.stat,
//! memory.events and pressure (under `--group-by cgroup`), host pressure,
//! smaps_rollup and sched_ext. Each yields `(group, key, unit, value)`
//! readings per snapshot, joined into rows like the metric tables.

use std::collections::BTreeMap;

use crate::compare::{row, Cell, Row, ViewOptions};
use crate::group::{flatten_cgroup, group_threads, GroupBy};
use crate::model::{CgroupStats, CtprofSnapshot, Psi, PsiResource};
use crate::registry::{Section, Unit};

type Readings = BTreeMap<(String, String), (Unit, Cell)>;

fn num(v: Option<u64>) -> Cell {
    v.map_or(Cell::Missing, |v| Cell::Num { value: v as f64 })
}

fn add(r: &mut Readings, group: &str, key: &str, unit: Unit, cell: Cell) {
    let slot = r
        .entry((group.to_string(), key.to_string()))
        .or_insert((unit, Cell::Missing));
    slot.1 = match (&slot.1, cell) {
        (Cell::Num { value: a }, Cell::Num { value: b }) => Cell::Num { value: a + b },
        (Cell::Missing, c) => c,
        (old, _) => old.clone(),
    };
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
            if let Some(l) = line {
                add(
                    r,
                    group,
                    &format!("{name}.{kind}.total"),
                    Unit::Ns,
                    Cell::Num {
                        value: l.total_us as f64 * 1000.0,
                    },
                );
                add(
                    r,
                    group,
                    &format!("{name}.{kind}.avg10"),
                    Unit::Scalar,
                    Cell::Num { value: l.avg10 },
                );
            }
        }
    }
}

fn cgroup_readings(section: Section, r: &mut Readings, group: &str, st: &CgroupStats) {
    match section {
        Section::CgroupStats => {
            add(
                r,
                group,
                "cpu.usage",
                Unit::Ns,
                num(st.cpu.usage_usec.map(|u| u * 1000)),
            );
            add(
                r,
                group,
                "cpu.nr_throttled",
                Unit::Count,
                num(st.cpu.nr_throttled),
            );
            add(
                r,
                group,
                "cpu.throttled",
                Unit::Ns,
                num(st.cpu.throttled_usec.map(|u| u * 1000)),
            );
            add(
                r,
                group,
                "memory.current",
                Unit::Bytes,
                num(st.memory.current),
            );
            add(r, group, "pids.current", Unit::Count, num(st.pids.current));
        }
        Section::CgroupLimits => {
            add(
                r,
                group,
                "cpu.max_quota_us",
                Unit::Scalar,
                num(st.cpu.max_quota_us),
            );
            add(
                r,
                group,
                "cpu.max_period_us",
                Unit::Scalar,
                num(st.cpu.max_period_us),
            );
            add(r, group, "cpu.weight", Unit::Scalar, num(st.cpu.weight));
            add(r, group, "memory.max", Unit::Bytes, num(st.memory.max));
            add(r, group, "memory.high", Unit::Bytes, num(st.memory.high));
            add(r, group, "memory.low", Unit::Bytes, num(st.memory.low));
            add(r, group, "memory.min", Unit::Bytes, num(st.memory.min));
            add(r, group, "pids.max", Unit::Count, num(st.pids.max));
        }
        Section::MemoryStat => {
            for (k, v) in &st.memory.stat {
                // v1 prefixes hierarchical totals with `total_`.
                let base = k.strip_prefix("total_").unwrap_or(k);
                let counted = ["pg", "workingset_", "thp_", "zswp", "hierarchical_"]
                    .iter()
                    .any(|p| base.starts_with(p));
                add(
                    r,
                    group,
                    k,
                    if counted { Unit::Count } else { Unit::Bytes },
                    num(Some(*v)),
                );
            }
        }
        Section::MemoryEvents => {
            for (k, v) in &st.memory.events {
                add(r, group, k, Unit::Count, num(Some(*v)));
            }
        }
        Section::Pressure => psi_readings(r, group, &st.psi),
        _ => {}
    }
}

/// The readings of one section in one snapshot.
fn readings(section: Section, snap: &CtprofSnapshot, opts: &ViewOptions) -> Readings {
    let mut r = Readings::new();
    match section {
        Section::HostPressure => psi_readings(&mut r, "host", &snap.psi),
        Section::SchedExt => {
            if let Some(x) = &snap.sched_ext {
                add(
                    &mut r,
                    "host",
                    "state",
                    Unit::Text,
                    Cell::Text {
                        text: x.state.clone(),
                        scalar: None,
                    },
                );
                add(
                    &mut r,
                    "host",
                    "switch_all",
                    Unit::Scalar,
                    num(Some(x.switch_all)),
                );
                add(
                    &mut r,
                    "host",
                    "nr_rejected",
                    Unit::Count,
                    num(Some(x.nr_rejected)),
                );
                add(
                    &mut r,
                    "host",
                    "enable_seq",
                    Unit::Count,
                    num(Some(x.enable_seq)),
                );
                add(
                    &mut r,
                    "host",
                    "hotplug_seq",
                    Unit::Count,
                    num(Some(x.hotplug_seq)),
                );
            }
        }
        Section::SmapsRollup => {
            for (g, threads) in group_threads(&snap.threads, &opts.grouping) {
                for t in threads.iter().filter(|t| t.tid == t.tgid) {
                    for (k, kb) in &t.smaps_rollup_kb {
                        add(
                            &mut r,
                            &g,
                            k,
                            Unit::Bytes,
                            num(Some(kb.saturating_mul(1024))),
                        );
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

/// Rows of every requested secondary section.
pub fn secondary_rows(
    base: &CtprofSnapshot,
    cand: Option<&CtprofSnapshot>,
    opts: &ViewOptions,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for s in Section::ALL.into_iter().skip(3) {
        if !opts.sections.is_empty() && !opts.sections.contains(&s) {
            continue;
        }
        if s.needs_cgroup_grouping() && opts.grouping.by != GroupBy::Cgroup {
            continue;
        }
        let b = readings(s, base, opts);
        let c = cand.map(|c| readings(s, c, opts));
        let keys: std::collections::BTreeSet<&(String, String)> =
            b.keys().chain(c.iter().flat_map(|c| c.keys())).collect();
        for k in keys {
            let bv = b.get(k);
            let cv = c.as_ref().and_then(|c| c.get(k));
            let unit = bv.or(cv).map_or(Unit::Count, |v| v.0);
            let matched = match (bv.is_some(), cv.is_some(), c.is_some()) {
                (true, true, _) | (true, false, false) => "both",
                (true, false, true) => "baseline-only",
                _ => "candidate-only",
            };
            let cell = |v: Option<&(Unit, Cell)>| v.map_or(Cell::Missing, |v| v.1.clone());
            let ratio = unit == Unit::Scalar && k.1.ends_with("avg10");
            rows.push(row(
                s,
                false,
                &k.0,
                (0, 0),
                &k.1,
                unit,
                ratio,
                cell(bv),
                cell(cv),
                matched,
            ));
        }
    }
    rows
}
