//! CSV export: one row per group (or thread), one column per exported
//! metric in the snapshot's own units (`run_time_ns`, `rchar`, ...). An
//! unavailable value is an empty cell; a zero is `0`.

use std::io::{self, Write};

use super::{families, series, ExportGroup};
use crate::model::CtprofSnapshot;

/// Quotes a field when it holds a comma, quote or line break (RFC 4180).
pub fn field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// Writes the snapshot as CSV with a header row.
pub fn write_csv(
    snap: &CtprofSnapshot,
    group: &ExportGroup,
    out: &mut dyn Write,
) -> io::Result<()> {
    let fams = families(100);
    let series = series(snap, group, &fams);
    let label_names: Vec<&str> = match series.first() {
        Some(s) => s.labels.iter().map(|(k, _)| *k).collect(),
        None => match group {
            ExportGroup::Thread => vec!["pcomm", "comm", "cgroup", "tgid", "tid"],
            ExportGroup::By(g) => vec![super::axis_label(g.by)],
        },
    };
    let mut line = label_names.join(",");
    line.push_str(",threads");
    for f in &fams {
        line.push(',');
        line.push_str(f.def.name);
    }
    writeln!(out, "{line}")?;
    for s in &series {
        line.clear();
        for (i, (_, v)) in s.labels.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push_str(&field(v));
        }
        line.push_str(&format!(",{}", s.threads));
        for v in &s.values {
            line.push(',');
            if let Some(v) = v {
                line.push_str(&v.to_string());
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
