//! `runq ctprof metric-list`: every metric and derived metric with its
//! tags, section and description.

use std::process::ExitCode;

use runq_common::text::{hanging, wrap, LIST_WIDTH};
use runq_ctprof::derived::CTPROF_DERIVED_METRICS;
use runq_ctprof::registry::CTPROF_METRICS;

/// Arguments of `runq ctprof metric-list`.
#[derive(Debug, clap::Args)]
pub struct MetricListArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Entry {
    name: &'static str,
    kind: &'static str,
    rule: String,
    section: &'static str,
    tags: String,
    description: &'static str,
}

/// `runq ctprof metric-list --json`: every metric under `metrics`.
#[derive(serde::Serialize)]
struct MetricList {
    metrics: Vec<Entry>,
}

impl runq_common::json::JsonDocument for MetricList {
    const TOOL: &'static str = "runq ctprof metric-list";
    const SCHEMA_VERSION: u32 = 1;
}

fn entries() -> Vec<Entry> {
    let mut v: Vec<Entry> = CTPROF_METRICS
        .iter()
        .map(|m| Entry {
            name: m.name,
            kind: "metric",
            rule: m.rule.name().to_string(),
            section: m.section.name(),
            tags: m.tags(),
            description: m.description,
        })
        .collect();
    v.extend(CTPROF_DERIVED_METRICS.iter().map(|d| Entry {
        name: d.name,
        kind: "derived",
        rule: d.formula.to_string(),
        section: d.section.name(),
        tags: if d.is_ratio {
            "[ratio]".into()
        } else {
            String::new()
        },
        description: d.description,
    }));
    v
}

/// Runs `runq ctprof metric-list`.
pub fn execute(args: MetricListArgs) -> anyhow::Result<ExitCode> {
    let list = entries();
    if args.json {
        let doc = MetricList { metrics: list };
        crate::outln!("{}", runq_common::json::to_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    crate::out!("{}", render(&list));
    Ok(ExitCode::SUCCESS)
}

/// The list as text within 100 columns: per section, each metric's name,
/// its reduction rule (or a derived metric's section) and its description
/// with its tags, wrapped under the description's column.
fn render(list: &[Entry]) -> String {
    const RULE_WIDTH: usize = 16;
    let w = list.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let indent = w + 2 + RULE_WIDTH + 2;
    let mut out = String::new();
    let mut section = "";
    for e in list {
        let header = if e.kind == "derived" {
            "derived metrics"
        } else {
            e.section
        };
        if header != section {
            out.push_str(&format!("\n## {header}\n"));
            section = header;
        }
        let rule = if e.kind == "derived" {
            e.section
        } else {
            e.rule.as_str()
        };
        let text = format!("{} {}", e.description, e.tags);
        let lines = wrap(&text, LIST_WIDTH.saturating_sub(indent).max(20));
        let first = format!("{:<w$}  {rule:<RULE_WIDTH$}  {}", e.name, lines[0]);
        out.push_str(&hanging(&first, &lines[1..], indent));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_fits_100_columns_and_keeps_every_metric_and_tag() {
        let list = entries();
        let text = render(&list);
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= LIST_WIDTH, "{widest} columns:\n{text}");
        for e in &list {
            assert!(text.contains(e.name), "{}", e.name);
        }
        assert!(text.contains("[SCHEDSTATS]"), "{text}");
    }
}
