//! Text rendering of compare / show views: auto-scaled units (SI for ns
//! and counts, spelled as in every runq report: `µs`; USER_HZ ticks; IEC
//! for bytes), aligned columns, colors only when asked (the caller
//! decides: TTY and no `NO_COLOR`).

use crate::registry::{Section, Unit};
use crate::view::{Cell, Matched, Row, View};
use runq_common::table::{Align, Table};
use runq_common::units::fmt_scaled;

fn cell_text(c: &Cell, unit: Unit) -> String {
    match c {
        Cell::Num { value } => fmt_scaled(*value, unit),
        Cell::Range { min, max } if min == max => fmt_scaled(*min as f64, unit),
        Cell::Range { min, max } => format!(
            "[{}, {}]",
            fmt_scaled(*min as f64, unit),
            fmt_scaled(*max as f64, unit)
        ),
        Cell::Text { text, .. } => text.clone(),
        Cell::Missing => "-".to_string(),
    }
}

/// A layout column `--columns` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The group name, with `[only-baseline]`-style marks.
    Group,
    /// Thread counts (`baseline/candidate` when comparing).
    Threads,
    /// The metric name.
    Metric,
    /// The baseline value.
    Baseline,
    /// The candidate value.
    Candidate,
    /// Candidate minus baseline.
    Delta,
    /// The change in percent.
    Pct,
    /// An arrow for the direction of the change.
    Arrow,
    /// The single value of `show`.
    Value,
}

impl Column {
    /// The header (and `--columns` spelling).
    pub fn name(self) -> &'static str {
        match self {
            Column::Group => "group",
            Column::Threads => "threads",
            Column::Metric => "metric",
            Column::Baseline => "baseline",
            Column::Candidate => "candidate",
            Column::Delta => "delta",
            Column::Pct => "%",
            Column::Arrow => "arrow",
            Column::Value => "value",
        }
    }

    /// Names are left-aligned, numbers right-aligned.
    fn align(self) -> Align {
        match self {
            Column::Group | Column::Threads | Column::Metric => Align::Left,
            _ => Align::Right,
        }
    }
}

/// The columns of `compare` unless `--columns` says otherwise.
const COMPARE_COLUMNS: [Column; 7] = [
    Column::Group,
    Column::Threads,
    Column::Metric,
    Column::Baseline,
    Column::Candidate,
    Column::Delta,
    Column::Pct,
];

/// The columns of `show` unless `--columns` says otherwise.
const SHOW_COLUMNS: [Column; 4] = [
    Column::Group,
    Column::Threads,
    Column::Metric,
    Column::Value,
];

fn column_value(r: &Row, col: Column) -> String {
    match col {
        Column::Group => match (r.matched, &r.incomparable) {
            (Matched::Both, None) => r.group.clone(),
            (Matched::Both, Some(why)) => format!("{} [{why}]", r.group),
            (m, _) => format!("{} [{}]", r.group, m.name()),
        },
        Column::Threads if r.threads == (0, 0) => String::new(),
        Column::Threads if r.threads.1 == 0 && r.matched == Matched::Both => {
            r.threads.0.to_string()
        }
        Column::Threads => format!("{}/{}", r.threads.0, r.threads.1),
        Column::Metric => match crate::registry::metric(&r.metric) {
            Some(m) if m.is_dead => format!("{} [dead]", r.metric),
            _ => r.metric.clone(),
        },
        Column::Baseline | Column::Value => cell_text(&r.baseline, r.unit),
        Column::Candidate => cell_text(&r.candidate, r.unit),
        Column::Delta => match (r.delta, r.text_delta) {
            (Some(d), _) => {
                let s = fmt_scaled(d, r.unit);
                let noise = if r.noise.is_some_and(|n| n.within) {
                    " ~"
                } else {
                    ""
                };
                if d > 0.0 {
                    format!("+{s}{noise}")
                } else {
                    format!("{s}{noise}")
                }
            }
            (None, Some(t)) => t.name().to_string(),
            _ => "-".into(),
        },
        Column::Pct if r.is_ratio => String::new(),
        Column::Pct => r.pct.map_or("-".into(), |p| format!("{p:+.1}%")),
        Column::Arrow => match r.delta {
            Some(d) if d > 0.0 => "↑".into(),
            Some(d) if d < 0.0 => "↓".into(),
            _ => String::new(),
        },
    }
}

fn table(out: &mut String, title: &str, rows: &[&Row], cols: &[Column], color: Option<u8>) {
    if rows.is_empty() {
        return;
    }
    out.push_str(&format!("## {title}\n"));
    let head: Vec<(&str, Align)> = cols.iter().map(|c| (c.name(), c.align())).collect();
    let mut t = Table::new(&head);
    for r in rows {
        t.row(cols.iter().map(|&c| column_value(r, c)).collect());
    }
    out.push_str(&t.render_styled(str::to_string, |l| match color {
        Some(code) => format!("\x1b[{code}m{l}\x1b[0m"),
        None => l.to_string(),
    }));
    out.push('\n');
}

/// Keys shown in a compare even when both sides agree.
const SUMMARY_KEYS: [&str; 7] = [
    "hostname",
    "kernel_release",
    "arch",
    "cpu_model",
    "online_cpus",
    "mem_total",
    "user_hz",
];

/// The host context: every key for show; for compare the summary keys
/// and every key that differs (marked `*`), then how many more agree.
fn host_table(out: &mut String, view: &View, compare: bool) {
    if view.host.is_empty() {
        return;
    }
    let shown: Vec<&crate::view::HostRow> = view
        .host
        .iter()
        .filter(|h| !compare || h.differs || SUMMARY_KEYS.contains(&h.key.as_str()))
        .collect();
    let v = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".into());
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|h| match compare {
            true => vec![
                h.key.clone(),
                if h.differs { "*" } else { "" }.into(),
                v(&h.baseline),
                v(&h.candidate),
            ],
            false => vec![h.key.clone(), v(&h.baseline)],
        })
        .collect();
    let head: &[&str] = if compare {
        &["key", "differs", "baseline", "candidate"]
    } else {
        &["key", "value"]
    };
    out.push_str("## Host context\n");
    let head: Vec<(&str, Align)> = head.iter().map(|h| (*h, Align::Left)).collect();
    let mut t = Table::new(&head);
    for r in rows {
        t.row(r);
    }
    out.push_str(&t.render(str::to_string));
    let same = view.host.len() - shown.len();
    if same > 0 {
        out.push_str(&format!(
            "({same} more keys, equal on both sides; --json lists every key)\n"
        ));
    }
    out.push('\n');
}

/// One line per side naming the sources shown as `-` and why.
fn unavailable_note(out: &mut String, view: &View) {
    for (side, caps) in &view.capabilities {
        if caps.unavailable.is_empty() {
            continue;
        }
        let parts: Vec<String> = caps
            .unavailable
            .iter()
            .map(|(s, r)| format!("{}: {}", s.name(), r.describe()))
            .collect();
        out.push_str(&format!(
            "{side}: `-` = unavailable: {}\n",
            parts.join("; ")
        ));
    }
    if view
        .capabilities
        .values()
        .any(|c| !c.unavailable.is_empty())
    {
        out.push('\n');
    }
}

/// Renders a view as text tables. `columns` empty means the default set.
pub fn render(view: &View, compare: bool, columns: &[Column], color: bool) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = render_to(view, compare, columns, color, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn more_rows(out: &mut String, n: usize) {
    if n > 0 {
        out.push_str(&format!(
            "... {n} more rows (--limit N to see more, --limit 0 for all)\n\n"
        ));
    }
}

/// Renders a view table by table into `w` (nothing larger than one table
/// is held in memory).
pub fn render_to(
    view: &View,
    compare: bool,
    columns: &[Column],
    color: bool,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let cols: &[Column] = match (columns.is_empty(), compare) {
        (false, _) => columns,
        (true, true) => &COMPARE_COLUMNS,
        (true, false) => &SHOW_COLUMNS,
    };
    let mut out = String::new();
    let mut wrote = false;
    let mut flush = |out: &mut String, w: &mut dyn std::io::Write| {
        wrote |= !out.is_empty();
        let r = w.write_all(out.as_bytes());
        out.clear();
        r
    };
    if view.baseline_host_missing || view.candidate_host_missing {
        out.push_str("(host context unavailable)\n\n");
    }
    host_table(&mut out, view, compare);
    unavailable_note(&mut out, view);
    let primary: Vec<&Row> = view
        .rows
        .iter()
        .filter(|r| !r.derived && matches!(r.section, Section::Primary | Section::TaskstatsDelay))
        .collect();
    let title = format!("Per-thread metrics by {}", view.group_by.name());
    table(&mut out, &title, &primary, cols, None);
    more_rows(&mut out, view.omitted_rows.0);
    flush(&mut out, w)?;
    let derived: Vec<&Row> = view.rows.iter().filter(|r| r.derived).collect();
    table(
        &mut out,
        "Derived metrics",
        &derived,
        cols,
        color.then_some(34),
    );
    more_rows(&mut out, view.omitted_rows.1);
    flush(&mut out, w)?;
    for s in Section::ALL.into_iter().skip(3) {
        let rows: Vec<&Row> = view.rows.iter().filter(|r| r.section == s).collect();
        table(&mut out, s.name(), &rows, cols, None);
        more_rows(
            &mut out,
            view.omitted_section_rows
                .get(s.name())
                .copied()
                .unwrap_or(0),
        );
        flush(&mut out, w)?;
    }
    exited_table(&mut out, view);
    if let Some((a, b)) = view.samples {
        out.push_str(&format!(
            "Values are medians over {a} baseline and {b} candidate snapshots; \
             ~ marks a change within the noise (the sides' min-max ranges overlap, \
             or the change is within one side's range).\n"
        ));
    }
    flush(&mut out, w)?;
    if !wrote {
        w.write_all(b"(no rows)\n")?;
    }
    Ok(())
}

/// The exited-thread tally of a recorded snapshot.
fn exited_table(out: &mut String, view: &View) {
    if view.exited.is_empty() {
        return;
    }
    out.push_str("## Threads exited since the previous capture\n");
    let mut t = Table::new(&[
        ("pcomm", Align::Left),
        ("tgid", Align::Right),
        ("threads", Align::Right),
        ("cpu", Align::Right),
        ("cpu_delay", Align::Right),
        ("cgroup", Align::Left),
    ]);
    for e in &view.exited {
        t.row(vec![
            e.pcomm.clone(),
            e.tgid.to_string(),
            e.threads.to_string(),
            fmt_scaled(e.cpu_ns as f64, Unit::Ns),
            fmt_scaled(e.cpu_delay_ns as f64, Unit::Ns),
            if e.cgroup.is_empty() {
                "(process gone)".to_string()
            } else {
                e.cgroup.clone()
            },
        ]);
    }
    out.push_str(&t.render(str::to_string));
    out.push('\n');
}
