//! The text of `--repeat N`'s summary ([`RepeatSummary`], which the
//! document keeps as `repeat_summary`): per group, the median and the
//! range of its work rate and wake p99 across the repeats; per check, how
//! many repeats it held in. Printed once after the repeats (as hyperfine
//! does).

use std::fmt::Write as _;

use crate::results::{CheckTally, RepeatSummary};
use runq_common::table::{Align, Table};
use runq_common::text::printable;
use runq_common::units::{fmt_ns, fmt_rate};

/// The summary as text: a table of groups, then the checks that did not
/// hold in every repeat (or a line saying all did).
pub fn repeat_summary(s: &RepeatSummary) -> String {
    let mut out = format!("\nover {} repeats:\n", s.repeats);
    let mut t = Table::new(&[
        ("group", Align::Left),
        ("work/s median", Align::Right),
        ("range", Align::Left),
        ("wake p99 median", Align::Right),
        ("range", Align::Left),
    ]);
    for g in &s.groups {
        let r = &g.work_rate_per_s;
        let (p99, p99_range) = g.wake_p99_ns.map_or(("-".into(), "-".into()), |w| {
            (
                fmt_ns(w.median),
                format!("{} .. {}", fmt_ns(w.min), fmt_ns(w.max)),
            )
        });
        t.row(vec![
            g.group.clone(),
            fmt_rate(r.median),
            format!("{} .. {}", fmt_rate(r.min), fmt_rate(r.max)),
            p99,
            p99_range,
        ]);
    }
    out.push_str(&t.render(str::to_string));
    let shaky: Vec<&CheckTally> = s.checks.iter().filter(|c| c.passed < c.of).collect();
    if shaky.is_empty() {
        let _ = writeln!(out, "every check held in all {} repeats", s.repeats);
    }
    for c in shaky {
        let _ = writeln!(
            out,
            "{} {} held in {} of {} repeats",
            printable(&c.group),
            printable(&c.check),
            c.passed,
            c.of
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{GroupSpread, Spread};

    #[test]
    fn renders_medians_ranges_and_shaky_checks() {
        let tally = |passed| CheckTally {
            group: "pipes".into(),
            check: "max_gap_ms".into(),
            passed,
            of: 3,
        };
        let mut s = RepeatSummary {
            repeats: 3,
            groups: vec![GroupSpread {
                group: "pipes".into(),
                work_rate_per_s: Spread {
                    median: 200.0,
                    min: 100.0,
                    max: 300.0,
                },
                wake_p99_ns: None,
            }],
            checks: vec![tally(2)],
        };
        let text = repeat_summary(&s);
        assert!(text.contains("over 3 repeats"), "{text}");
        assert!(
            text.contains("pipes max_gap_ms held in 2 of 3 repeats"),
            "{text}"
        );
        s.checks = vec![tally(3)];
        let text = repeat_summary(&s);
        assert!(text.contains("every check held in all 3 repeats"), "{text}");
    }
}
