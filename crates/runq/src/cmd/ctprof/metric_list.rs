//! `runq ctprof metric-list`: every metric and derived metric with its
//! tags, section and description.

use std::process::ExitCode;

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
        let doc = crate::json::listing("runq ctprof metric-list", "metrics", &list);
        super::emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let w = list
        .iter()
        .map(|e| e.name.len() + e.tags.len() + 1)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let mut section = "";
    for e in &list {
        let header = if e.kind == "derived" {
            "derived metrics"
        } else {
            e.section
        };
        if header != section {
            out.push_str(&format!("\n## {header}\n"));
            section = header;
        }
        let name = format!("{} {}", e.name, e.tags);
        out.push_str(&format!(
            "{name:<w$}  {:<16}  {}\n",
            if e.kind == "derived" {
                e.section
            } else {
                e.rule.as_str()
            },
            e.description
        ));
    }
    super::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
