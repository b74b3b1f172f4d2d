//! The text of `runq compare` ([`Comparison`]): the header, one row per
//! group and figure, why rows are inconclusive, and the tally. The saved
//! files' names (groups, hosts, kernels) are printed through
//! [`printable`].

use std::fmt::Write;

use runq_common::table::{Align, Table};
use runq_common::text::printable;

use crate::compare::{Comparison, Row, Unit, METHOD};

/// A value with its unit, short; `-` for none.
pub fn value_text(v: Option<f64>, unit: Unit) -> String {
    v.map_or_else(|| "-".into(), |v| runq_common::units::fmt_short(v, unit))
}

/// A change in percent with its sign (`+4.2%`); `-` for none.
pub fn pct_text(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:+.1}%"))
}

/// A row's 95% interval of the change, in percent.
pub fn ci_text(r: &Row) -> String {
    r.ci_pct.map_or_else(
        || "-".into(),
        |[lo, hi]| format!("[{}, {}]", pct_text(Some(lo)), pct_text(Some(hi))),
    )
}

/// Why rows are inconclusive: each distinct reason with the rows it
/// covers (`PipeIo work_rate, PipeIo wake_p99`, or a count past three).
fn inconclusive_reasons(rows: &[Row]) -> Vec<(String, String)> {
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for r in rows {
        let Some(reason) = r
            .reason
            .as_ref()
            .filter(|_| r.verdict.word() == "inconclusive")
        else {
            continue;
        };
        let name = format!("{} {}", printable(&r.group), r.figure);
        match by_reason.iter_mut().find(|(k, _)| k == reason) {
            Some((_, names)) => names.push(name),
            None => by_reason.push((reason.clone(), vec![name])),
        }
    }
    by_reason
        .into_iter()
        .map(|(reason, names)| {
            let rows = if names.len() > 3 {
                format!("{} rows", names.len())
            } else {
                names.join(", ")
            };
            (reason, rows)
        })
        .collect()
}

/// The comparison as text: the header lines, the table, why rows are
/// inconclusive, and the tally.
pub fn comparison(rep: &Comparison) -> String {
    let mut out = String::new();
    let reps = rep.rows.first().map_or([0, 0], |r| r.repeats);
    let _ = writeln!(
        out,
        "A {} ({} repeats) vs B {} ({} repeats); threshold {}%",
        printable(&rep.a),
        reps[0],
        printable(&rep.b),
        reps[1],
        rep.threshold_pct
    );
    let _ = writeln!(out, "interval: {METHOD}");
    for n in &rep.notes {
        let _ = writeln!(out, "note: {}", printable(n));
    }
    for m in &rep.mismatches {
        let _ = writeln!(out, "NOT COMPARABLE: {}", printable(m));
    }
    let mut t = Table::new(&[
        ("group", Align::Left),
        ("figure", Align::Left),
        ("A median", Align::Right),
        ("B median", Align::Right),
        ("diff", Align::Right),
        ("95% CI of diff", Align::Left),
        ("verdict", Align::Left),
    ]);
    for r in &rep.rows {
        t.row(vec![
            r.group.clone(),
            r.figure.to_string(),
            value_text(r.median_a, r.unit),
            value_text(r.median_b, r.unit),
            pct_text(r.diff_pct),
            ci_text(r),
            r.verdict.word().to_string(),
        ]);
    }
    out.push_str(&t.render(str::to_string));
    for (reason, rows) in inconclusive_reasons(&rep.rows) {
        let _ = writeln!(out, "inconclusive ({rows}): {}", printable(&reason));
    }
    let _ = writeln!(
        out,
        "{} regressed, {} improved, {} figures compared",
        rep.regressed,
        rep.improved,
        rep.rows.len()
    );
    out
}
