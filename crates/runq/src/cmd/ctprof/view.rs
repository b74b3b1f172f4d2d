//! Flags shared by `compare` and `show`, and their validation.

use std::path::Path;

use runq_common::closest;
use runq_ctprof::derived::CTPROF_DERIVED_METRICS;
use runq_ctprof::group::{Glob, GroupBy, Grouping};
use runq_ctprof::registry::{Section, CTPROF_METRICS};
use runq_ctprof::render::Column;

use super::flags::{ColumnFlag, GroupByFlag, SectionFlag};
use runq_ctprof::view::ViewOptions;
use runq_ctprof::CtprofSnapshot;

use crate::exit;

/// Rows per table unless `--limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 100;

/// Grouping, filtering and output flags.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// Group threads by process name, cgroup path, thread name (pools
    /// collapsed: tokio-worker-{N}) or literal thread name.
    #[arg(long, value_name = "AXIS", value_enum, default_value_t = GroupByFlag::Pcomm)]
    pub group_by: GroupByFlag,
    /// With `--group-by comm`: keep literal thread names.
    #[arg(long)]
    pub no_thread_normalize: bool,
    /// Collapse cgroup paths matching GLOB to the pattern (repeatable),
    /// e.g. '/system.slice/*.scope'.
    #[arg(long = "cgroup-flatten", value_name = "GLOB")]
    pub cgroup_flatten: Vec<String>,
    /// Sub-tables to render (comma-separated; default: all).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub sections: Vec<SectionFlag>,
    /// Metric rows to keep (comma-separated names from `metric-list`).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub metrics: Vec<String>,
    /// Order groups by a metric (derived ones too): NAME[:asc|:desc].
    #[arg(long, value_name = "METRIC[:asc|desc]")]
    pub sort_by: Option<String>,
    /// Columns to print (comma-separated; default: group .. % for
    /// compare, group, threads, metric, value for show).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub columns: Vec<ColumnFlag>,
    /// Keep at most N rows per table (default 100; 0 = all). A line says
    /// how many rows were left out.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
    /// Print the rows as JSON.
    #[arg(long)]
    pub json: bool,
}

fn all_metric_names() -> impl Iterator<Item = &'static str> {
    CTPROF_METRICS
        .iter()
        .map(|m| m.name)
        .chain(CTPROF_DERIVED_METRICS.iter().map(|d| d.name))
}

fn check_metric(name: &str) -> anyhow::Result<()> {
    if all_metric_names().any(|m| m == name) {
        return Ok(());
    }
    if let Some(metric) = runq_ctprof::registry::metric_for_kernel_name(name) {
        return Err(exit::usage(format!(
            "unknown metric {name:?}: the kernel's {name} is ctprof's {metric:?} (`runq ctprof metric-list` lists them all)"
        )));
    }
    let hint = match closest(name, all_metric_names(), name.len() / 3 + 1) {
        Some(nearest) => format!("did you mean {nearest:?}? "),
        None => String::new(),
    };
    Err(exit::usage(format!(
        "unknown metric {name:?}: {hint}(`runq ctprof metric-list` lists them all)"
    )))
}

impl ViewArgs {
    /// Validates the flags into view options.
    pub fn options(&self) -> anyhow::Result<ViewOptions> {
        let by = match self.group_by.axis() {
            GroupBy::Comm if self.no_thread_normalize => GroupBy::CommExact,
            by => by,
        };
        let flatten = self
            .cgroup_flatten
            .iter()
            .map(|g| Glob::new(g).map_err(anyhow::Error::from))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let sections: Vec<Section> = self.sections.iter().map(|s| s.section()).collect();
        for s in &sections {
            if s.needs_cgroup_grouping() && by != GroupBy::Cgroup {
                crate::errln!(
                    "runq: warning: section {} needs --group-by cgroup; it renders no rows",
                    s.name()
                );
            }
        }
        for m in &self.metrics {
            check_metric(m)?;
        }
        let sort_by = match &self.sort_by {
            None => None,
            Some(s) => {
                let (name, dir) = s.split_once(':').unwrap_or((s, "desc"));
                check_metric(name)?;
                let desc = match dir {
                    "desc" => true,
                    "asc" => false,
                    d => {
                        return Err(exit::usage(format!(
                            "--sort-by {s}: direction {d:?} must be asc or desc"
                        )))
                    }
                };
                Some((name.to_string(), desc))
            }
        };
        Ok(ViewOptions {
            grouping: Grouping {
                by,
                normalize: !self.no_thread_normalize,
                flatten,
            },
            sections,
            metrics: self.metrics.clone(),
            sort_by,
            limit: (self.limit > 0).then_some(self.limit),
        })
    }
}

/// Loads a snapshot argument: a file, or `DIR@first`, `DIR@last`,
/// `DIR@TIME` of a recording directory. Any failure is a usage error
/// naming the file.
pub fn load(path: &Path) -> anyhow::Result<CtprofSnapshot> {
    let text = path.to_string_lossy();
    let file = match text.rsplit_once('@') {
        Some((dir, sel)) if Path::new(dir).is_dir() => {
            runq_ctprof::record::select(Path::new(dir), sel).map_err(exit::usage)?
        }
        _ if path.is_dir() => {
            return Err(exit::usage(format!(
                "{}: a directory; pick a snapshot with {0}@first, {0}@last or {0}@TIME (or compare two directories by their medians)",
                path.display()
            )))
        }
        _ => path.to_path_buf(),
    };
    runq_ctprof::load(&file).map_err(exit::user_input)
}

/// Prints a view as JSON (`--json`) or as text tables; `compare` selects
/// the baseline/candidate layout.
pub fn print_view(
    view: &runq_ctprof::view::View,
    compare: bool,
    args: &ViewArgs,
) -> anyhow::Result<()> {
    use runq_common::json::to_pretty;
    use runq_ctprof::view::{CompareDocument, ShowDocument};
    use std::io::Write;
    let mut out = std::io::BufWriter::new(runq_common::output::Stdout::new());
    let result = if args.json {
        let text = if compare {
            to_pretty(&CompareDocument(view))
        } else {
            to_pretty(&ShowDocument(view))
        };
        text.map_err(std::io::Error::from)
            .and_then(|t| writeln!(out, "{t}"))
    } else {
        let color = crate::style::color_enabled();
        let columns: Vec<Column> = args.columns.iter().map(|c| c.column()).collect();
        runq_ctprof::render::render_to(view, compare, &columns, color, &mut out)
    };
    Ok(result.and_then(|_| out.flush())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_metric() {
        let e = check_metric("run_tme_ns").unwrap_err().to_string();
        assert!(e.contains("did you mean \"run_time_ns\""), "{e}");
        assert!(check_metric("avg_slice_ns").is_ok());
    }
}
