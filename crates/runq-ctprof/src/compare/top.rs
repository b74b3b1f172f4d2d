//! Bounded row selection: keeps the first `limit` rows of the final order
//! while rows stream in, so a grouping with a million (group, metric) rows
//! never holds them all, and counts the rows left out.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::{cmp_opt, Row};

/// The order of rows: by `--sort-by` group key, else by absolute delta
/// (value for show); rows without a number last; ties keep arrival order.
pub struct RowOrder<'a> {
    /// Per-group key and direction from `--sort-by`.
    pub order: Option<(&'a BTreeMap<String, Option<f64>>, bool)>,
    /// Show (sort by value) rather than compare (by |delta|).
    pub show: bool,
}

impl RowOrder<'_> {
    /// Compares two rows (without the arrival tie-break).
    pub fn cmp(&self, a: &Row, b: &Row) -> Ordering {
        let key = |r: &Row| {
            if self.show {
                r.baseline.scalar()
            } else {
                r.delta.map(f64::abs)
            }
        };
        // Rows whose sides cannot be compared go after every other row.
        let flagged = a.incomparable.is_some().cmp(&b.incomparable.is_some());
        flagged.then_with(|| self.cmp_key(a, b, key))
    }

    fn cmp_key(&self, a: &Row, b: &Row, key: impl Fn(&Row) -> Option<f64>) -> Ordering {
        match self.order {
            None => cmp_opt(key(a), key(b), true),
            Some((order, desc)) => {
                let (x, y) = (
                    order.get(&a.group).copied().flatten(),
                    order.get(&b.group).copied().flatten(),
                );
                cmp_opt(x, y, desc).then_with(|| a.group.cmp(&b.group))
            }
        }
    }
}

/// Rows kept so far, each with its arrival number.
pub struct TopRows<'a> {
    rows: Vec<(usize, Row)>,
    limit: Option<usize>,
    seen: usize,
    order: &'a RowOrder<'a>,
}

impl<'a> TopRows<'a> {
    /// An empty selection of at most `limit` rows (`None`: all).
    pub fn new(limit: Option<usize>, order: &'a RowOrder<'a>) -> Self {
        TopRows {
            rows: Vec::new(),
            limit,
            seen: 0,
            order,
        }
    }

    fn cmp(&self, a: &(usize, Row), b: &(usize, Row)) -> Ordering {
        self.order.cmp(&a.1, &b.1).then(a.0.cmp(&b.0))
    }

    /// Adds a row; compacts to the best `limit` once twice that many wait.
    pub fn push(&mut self, row: Row) {
        self.rows.push((self.seen, row));
        self.seen += 1;
        if let Some(n) = self.limit {
            if self.rows.len() >= 2 * n.max(512) {
                self.compact(n);
            }
        }
    }

    fn compact(&mut self, n: usize) {
        if self.rows.len() <= n {
            return;
        }
        let mut rows = std::mem::take(&mut self.rows);
        if n > 0 {
            rows.select_nth_unstable_by(n - 1, |a, b| self.cmp(a, b));
        }
        rows.truncate(n);
        self.rows = rows;
    }

    /// The kept rows in order, and how many were left out.
    pub fn finish(mut self) -> (Vec<Row>, usize) {
        if let Some(n) = self.limit {
            self.compact(n);
        }
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_by(|a, b| self.cmp(a, b));
        let omitted = self.seen - rows.len();
        (rows.into_iter().map(|r| r.1).collect(), omitted)
    }
}
