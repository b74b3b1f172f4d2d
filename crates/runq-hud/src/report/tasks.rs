//! Per-task attribution in the report: the Tokio tasks each blocker's
//! findings ran in (by task id, named by their future), and whether the
//! target's task ids could be tracked at all.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use runq_common::text::printable;
use runq_common::units::fmt_ms;

use super::{Blocker, Report};
use crate::classify::task_future;
use crate::detect::Finding;

/// The tasks a blocker's row keeps, most time first.
pub const TOP_TASKS: usize = 5;

/// The blockers (largest first) whose tasks the text report shows.
const SHOWN_ROWS: usize = 10;

/// One task's share of a blocker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRow {
    /// Tokio's task id (`tokio::task::Id`).
    pub id: u64,
    /// The task's future: the future type from debug info, else the
    /// outermost function of the task's own code on its stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub future: Option<String>,
    /// Findings in this task.
    pub count: u64,
    /// Their total, ns.
    pub total_ns: u64,
}

/// Whether findings carry task ids, and why not when they do not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTracking {
    /// Every event carries its worker's current task id.
    pub tracked: bool,
    /// How it is read: `tls` (from the worker's thread-local storage) or
    /// `uprobe` (a uprobe on Tokio's `set_current_task_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// With `uprobe`: how many instances of that function were probed.
    #[serde(default)]
    pub instances: usize,
    /// Why task ids are not tracked (absent when they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The tasks of one blocker row, gathered finding by finding.
#[derive(Debug, Default)]
pub(super) struct TaskTally {
    by_id: BTreeMap<u64, TaskRow>,
}

impl TaskTally {
    /// Counts a finding under its task (one without a task id is not
    /// counted); the task is named from the first of its findings.
    pub(super) fn add(&mut self, f: &Finding) {
        let Some(id) = f.task_id else { return };
        let row = self.by_id.entry(id).or_insert_with(|| TaskRow {
            id,
            future: task_future(&f.stack),
            count: 0,
            total_ns: 0,
        });
        row.count += 1;
        row.total_ns += f.duration_ns;
    }

    /// Gives the row its top tasks and how many tasks there were.
    pub(super) fn finish(self, b: &mut Blocker) {
        b.task_count = self.by_id.len() as u64;
        let mut rows: Vec<TaskRow> = self.by_id.into_values().collect();
        rows.sort_by_key(|t| (std::cmp::Reverse(t.total_ns), t.id));
        rows.truncate(TOP_TASKS);
        b.tasks = rows;
    }
}

/// One task as the text report and the live view show it:
/// `#37 app::serve 12× 240.0ms`.
pub fn task_cell(t: &TaskRow) -> String {
    let future = t.future.as_deref().unwrap_or("[future not on the stack]");
    format!("#{} {future} {}× {}", t.id, t.count, fmt_ms(t.total_ns))
}

/// The top tasks of every blocker that has any, or why there are none.
pub(super) fn render_tasks(out: &mut String, r: &Report) {
    if !r.task_ids.tracked {
        if let Some(why) = &r.task_ids.reason {
            let _ = writeln!(out, "tasks: not tracked ({})", printable(why));
        }
        return;
    }
    let rows: Vec<&Blocker> = r
        .blockers
        .iter()
        .filter(|b| !b.tasks.is_empty())
        .take(SHOWN_ROWS)
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "top tasks per blocker (Tokio task id, the task's future, findings, time):"
    );
    for b in rows {
        let cells: Vec<String> = b.tasks.iter().take(3).map(task_cell).collect();
        let more = b.task_count.saturating_sub(cells.len() as u64);
        let _ = write!(
            out,
            "  {} {}: {}",
            b.category.label(),
            printable(&b.function),
            printable(&cells.join(", "))
        );
        if more > 0 {
            let _ = write!(out, " (+{more} more tasks)");
        }
        let _ = writeln!(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Category;
    use crate::symbols::fixtures::frame;

    fn finding(task_id: Option<u64>, ms: u64) -> Finding {
        Finding {
            category: Category::BlockingCall,
            tid: 1,
            start_ns: 0,
            duration_ns: ms * 1_000_000,
            stack: vec![
                frame("std::thread::sleep"),
                frame("app::load"),
                frame("app::serve::{{closure}}"),
                frame("tokio::runtime::task::core::Core<T,S>::poll"),
            ]
            .into(),
            holder: None,
            task_id,
            call: None,
        }
    }

    #[test]
    fn a_blocker_keeps_its_top_tasks_by_time_named_by_their_future() {
        let fs = [
            finding(Some(7), 10),
            finding(Some(9), 30),
            finding(Some(7), 10),
            finding(None, 50),
        ];
        let rows = super::super::group(&fs, &crate::culprit::AppCode::default());
        let b = &rows[0];
        assert_eq!(b.count, 4, "a finding without a task still counts");
        assert_eq!(b.task_count, 2);
        let ids: Vec<(u64, u64)> = b.tasks.iter().map(|t| (t.id, t.count)).collect();
        assert_eq!(ids, vec![(9, 1), (7, 2)], "most time first");
        assert_eq!(b.tasks[0].future.as_deref(), Some("app::serve"));
        assert_eq!(task_cell(&b.tasks[1]), "#7 app::serve 2× 20.0ms");
    }

    #[test]
    fn at_most_the_top_tasks_are_kept() {
        let fs: Vec<Finding> = (1..=12).map(|id| finding(Some(id), id)).collect();
        let rows = super::super::group(&fs, &crate::culprit::AppCode::default());
        assert_eq!(rows[0].tasks.len(), TOP_TASKS);
        assert_eq!(rows[0].task_count, 12);
        assert_eq!(rows[0].tasks[0].id, 12);
    }
}
