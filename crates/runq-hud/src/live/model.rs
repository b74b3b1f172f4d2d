//! What the live view shows, kept separate from drawing: findings in a
//! sliding time window, aggregated into hotspots and per-worker figures,
//! plus the session's status counters.

use std::collections::{BTreeMap, VecDeque};

use crate::detect::{Category, Finding};
use crate::report::{group, Blocker};

/// How hotspots are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// Largest total blocked time first.
    Total,
    /// Most intervals first.
    Count,
    /// Longest single interval first.
    Max,
}

impl SortBy {
    /// The next order (the `s` key).
    pub fn next(self) -> Self {
        match self {
            SortBy::Total => SortBy::Count,
            SortBy::Count => SortBy::Max,
            SortBy::Max => SortBy::Total,
        }
    }

    /// Its name in the status line.
    pub fn label(self) -> &'static str {
        match self {
            SortBy::Total => "total",
            SortBy::Count => "count",
            SortBy::Max => "max",
        }
    }
}

/// Status of the session, shown in the Status panel.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// Target description, e.g. `pid 42 (svc)`.
    pub target: String,
    /// How the workers were found.
    pub discovery: String,
    /// Threshold, ns.
    pub threshold_ns: u64,
    /// Findings received.
    pub events: u64,
    /// Findings dropped because the screen was behind (bounded channel).
    pub dropped: u64,
    /// Events the kernel could not queue.
    pub lost: u64,
    /// `live`, `replay` or `target exited`.
    pub health: String,
    /// How stacks are taken, and the share cut short when most are.
    pub stacks: String,
    /// Every watched worker, with findings or not.
    pub workers: Vec<u32>,
    /// The program's own code, for naming culprits.
    pub app: crate::culprit::AppCode,
}

/// One worker's row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerRow {
    /// Thread id.
    pub tid: u32,
    /// Findings by category inside the window.
    pub by_category: BTreeMap<Category, u64>,
    /// Blocked time inside the window, ns.
    pub blocked_ns: u64,
}

/// The window of findings and the figures derived from it.
pub struct LiveModel {
    window_ns: u64,
    findings: VecDeque<Finding>,
    /// Status counters.
    pub status: Status,
    /// Newest time seen (CLOCK_MONOTONIC ns), the window's right edge.
    pub now_ns: u64,
}

impl LiveModel {
    /// An empty model keeping `window_ns` of history.
    pub fn new(window_ns: u64, status: Status) -> Self {
        LiveModel {
            window_ns,
            findings: VecDeque::new(),
            status,
            now_ns: 0,
        }
    }

    /// Adds a finding and drops those that left the window.
    pub fn push(&mut self, f: Finding) {
        self.status.events += 1;
        self.now_ns = self.now_ns.max(f.start_ns + f.duration_ns);
        self.findings.push_back(f);
        self.evict();
    }

    /// Moves the window's right edge (time passes without findings).
    pub fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.evict();
    }

    fn evict(&mut self) {
        let oldest = self.now_ns.saturating_sub(self.window_ns);
        while self
            .findings
            .front()
            .is_some_and(|f| f.start_ns + f.duration_ns < oldest)
        {
            self.findings.pop_front();
        }
    }

    /// Findings in the window.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter()
    }

    /// How many findings the window holds (memory stays bounded by it).
    pub fn len(&self) -> usize {
        self.findings.len()
    }

    /// True when the window is empty.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// Hotspots of the window, filtered by `query` (a substring of the
    /// culprit or its location), in `sort` order.
    pub fn hotspots(&self, sort: SortBy, query: &str) -> Vec<Blocker> {
        let all: Vec<Finding> = self.findings.iter().cloned().collect();
        let mut hs: Vec<Blocker> = group(&all, &self.status.app)
            .into_iter()
            .filter(|b| {
                query.is_empty()
                    || b.function.contains(query)
                    || b.location.as_deref().is_some_and(|l| l.contains(query))
            })
            .collect();
        match sort {
            SortBy::Total => hs.sort_by_key(|b| std::cmp::Reverse(b.total_ns)),
            SortBy::Count => hs.sort_by_key(|b| std::cmp::Reverse(b.count)),
            SortBy::Max => hs.sort_by_key(|b| std::cmp::Reverse(b.max_ns)),
        }
        hs
    }

    /// Per-worker figures of the window, by tid.
    pub fn workers(&self) -> Vec<WorkerRow> {
        let mut rows: BTreeMap<u32, WorkerRow> = self
            .status
            .workers
            .iter()
            .map(|&tid| {
                let row = WorkerRow {
                    tid,
                    ..Default::default()
                };
                (tid, row)
            })
            .collect();
        for f in &self.findings {
            let r = rows.entry(f.tid).or_insert_with(|| WorkerRow {
                tid: f.tid,
                ..Default::default()
            });
            *r.by_category.entry(f.category).or_default() += 1;
            r.blocked_ns += f.duration_ns;
        }
        rows.into_values().collect()
    }

    /// Time line of one worker: `buckets` cells across the window, each the
    /// category that blocked it longest in that slice, if any.
    pub fn timeline(&self, tid: u32, buckets: usize) -> Vec<Option<Category>> {
        let buckets = buckets.max(1);
        let start = self.now_ns.saturating_sub(self.window_ns);
        let width = (self.window_ns / buckets as u64).max(1);
        let mut cells: Vec<Option<(Category, u64)>> = vec![None; buckets];
        for f in self.findings.iter().filter(|f| f.tid == tid) {
            let i = ((f.start_ns.saturating_sub(start)) / width) as usize;
            let cell = &mut cells[i.min(buckets - 1)];
            if cell.is_none_or(|(_, d)| f.duration_ns > d) {
                *cell = Some((f.category, f.duration_ns));
            }
        }
        cells.into_iter().map(|c| c.map(|(cat, _)| cat)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::fixtures::frame;

    pub(crate) fn finding(
        tid: u32,
        name: &str,
        cat: Category,
        start_ms: u64,
        dur_ms: u64,
    ) -> Finding {
        Finding {
            category: cat,
            tid,
            start_ns: start_ms * 1_000_000,
            duration_ns: dur_ms * 1_000_000,
            stack: vec![frame("std::thread::sleep"), frame(name)].into(),
            holder: None,
            task_id: None,
            call: None,
        }
    }

    #[test]
    fn window_slides_and_memory_stays_bounded() {
        let mut m = LiveModel::new(1_000_000_000, Status::default());
        for i in 0..10_000u64 {
            m.push(finding(1, "app::a", Category::BlockingCall, i * 10, 6));
        }
        assert!(m.len() <= 102, "only the last second is kept: {}", m.len());
        assert_eq!(m.status.events, 10_000);
        m.advance(200_000_000_000);
        assert!(m.is_empty());
    }

    #[test]
    fn hotspots_sort_and_filter() {
        let mut m = LiveModel::new(60_000_000_000, Status::default());
        m.push(finding(1, "app::long", Category::BlockingCall, 0, 50));
        for i in 0..3 {
            m.push(finding(
                2,
                "app::often",
                Category::BlockingCall,
                100 + i * 10,
                6,
            ));
        }
        assert_eq!(m.hotspots(SortBy::Total, "")[0].function, "app::long");
        assert_eq!(m.hotspots(SortBy::Count, "")[0].function, "app::often");
        assert_eq!(m.hotspots(SortBy::Total, "often").len(), 1);
        assert_eq!(m.workers().len(), 2);
        let line = m.timeline(1, 10);
        assert_eq!(line.iter().filter(|c| c.is_some()).count(), 1);
    }
}
