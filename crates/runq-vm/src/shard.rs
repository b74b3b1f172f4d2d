//! `--vm-matrix --shard K/N`: the matrix as a list of cells and the
//! deterministic part of it that shard K of N runs, so that N CI jobs
//! cover the whole matrix, each cell exactly once.
//!
//! A cell is one run in a VM: (scenario, topology[, kernel][, scheduler]),
//! named by a stable id string, `scenario/topology[/kernel][@scheduler]`.
//! Shard K of N takes the cells whose position in the list sorted by id,
//! counted from 0, is K-1 modulo N. The selection depends only on the set of ids and on N: the same in
//! every job whatever the order the cells were found in, disjoint between
//! shards, complete over them, and balanced (shards differ by at most one
//! cell). A hash of the id would keep a cell's shard when others are added,
//! but leaves small matrices unbalanced (5 cells over 4 shards could give
//! one shard 3); the shards of one merge come from one matrix anyway.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The most shards a matrix may be split into.
pub const MAX_SHARDS: u32 = 1000;

/// Shard `index` of `count` (1-based, as CI systems number their jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 1 to `count`.
    pub index: u32,
    /// How many shards the matrix is split into.
    pub count: u32,
}

impl Shard {
    /// The whole matrix: shard 1 of 1.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Parses `K/N` (e.g. `2/4`); the error is one line for `--shard`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = |why: &str| format!("--shard {text}: {why}; give K/N, e.g. --shard 2/4");
        let (k, n) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| bad("expected shard K of N as K/N"))?;
        let num = |s: &str, what: &str| {
            s.trim().parse::<u32>().map_err(|e| match e.kind() {
                std::num::IntErrorKind::PosOverflow => bad(&format!("{what} {s:?} is too large")),
                _ => bad(&format!("{what} {s:?} is not a whole number")),
            })
        };
        let (index, count) = (num(k, "K")?, num(n, "N")?);
        if count == 0 || count > MAX_SHARDS {
            return Err(bad(&format!("N must be 1 to {MAX_SHARDS}")));
        }
        if index == 0 || index > count {
            return Err(bad(&format!("K counts from 1 to N ({count})")));
        }
        Ok(Shard { index, count })
    }

    /// Whether the cell at `position` of the id-sorted list is this
    /// shard's.
    pub fn holds(&self, position: usize) -> bool {
        position % self.count as usize == (self.index - 1) as usize
    }

    /// The ids of this shard's cells among `ids` (any order, duplicates
    /// counted once), sorted.
    pub fn select<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let mut sorted: Vec<&str> = ids.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        sorted
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.holds(*i))
            .map(|(_, id)| id)
            .collect()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// One VM run of a matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// The scenario's name.
    pub scenario: String,
    /// The topology preset, in its normal spelling (`Topology`'s Display).
    pub topology: String,
    /// The kernel, when the matrix has a kernel axis.
    pub kernel: Option<String>,
    /// The scheduler's label, when the matrix has a scheduler axis
    /// (`kernel` for the kernel's own).
    pub scheduler: Option<String>,
}

impl Cell {
    /// The cell's stable id: `scenario/topology[/kernel][@scheduler]`.
    pub fn id(&self) -> String {
        let mut id = format!("{}/{}", self.scenario, self.topology);
        if let Some(k) = &self.kernel {
            id.push('/');
            id.push_str(k);
        }
        if let Some(s) = &self.scheduler {
            id.push('@');
            id.push_str(s);
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// `n` cells: scenarios × topologies, some with a kernel.
    fn ids(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                Cell {
                    scenario: format!("s{}", i % 3),
                    topology: format!("{}n{}c1t", 1 + i % 2, 1 + i / 6),
                    kernel: (i % 4 == 0).then(|| format!("6.{i}")),
                    scheduler: (i % 5 == 0).then(|| format!("scx_{i}")),
                }
                .id()
            })
            .collect()
    }

    /// A permutation of `v` chosen by `seed` (xorshift; no rand crate).
    fn shuffled(v: &[String], mut seed: u64) -> Vec<String> {
        let mut out = v.to_vec();
        for i in (1..out.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            out.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        out
    }

    #[test]
    fn shards_are_disjoint_complete_balanced_and_stable() {
        for cells in [0, 1, 2, 5, 7, 13, 24] {
            let all = ids(cells);
            assert_eq!(all.len(), cells);
            for count in 1..=8 {
                let mut owner: BTreeMap<String, u32> = BTreeMap::new();
                let mut sizes = Vec::new();
                for index in 1..=count {
                    let shard = Shard { index, count };
                    let picked: Vec<String> = shard
                        .select(all.iter().map(String::as_str))
                        .into_iter()
                        .map(String::from)
                        .collect();
                    for seed in [1, 7, 99, 12345] {
                        let other = shuffled(&all, seed);
                        let again = shard.select(other.iter().map(String::as_str));
                        assert_eq!(again, picked, "{shard} of {cells} cells, order {seed}");
                    }
                    sizes.push(picked.len());
                    for id in picked {
                        let before = owner.insert(id.clone(), index);
                        assert_eq!(
                            before, None,
                            "{id} in shards {before:?} and {index}/{count}"
                        );
                    }
                }
                assert_eq!(owner.len(), cells, "every cell in some shard of {count}");
                let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                assert!(hi.unwrap() - lo.unwrap() <= 1, "balanced: {sizes:?}");
            }
        }
    }

    #[test]
    fn a_cell_listed_twice_is_selected_once() {
        let all = ["a/1n2c1t", "b/1n2c1t", "a/1n2c1t"];
        assert_eq!(
            Shard::WHOLE.select(all),
            vec!["a/1n2c1t", "b/1n2c1t"],
            "one shard of one holds each cell once"
        );
    }

    #[test]
    fn the_selection_is_by_sorted_id() {
        let all = ["c/x", "a/x", "d/x", "b/x"];
        assert_eq!(Shard { index: 1, count: 2 }.select(all), ["a/x", "c/x"]);
        assert_eq!(Shard { index: 2, count: 2 }.select(all), ["b/x", "d/x"]);
        assert!(Shard { index: 5, count: 5 }.select(all).is_empty());
    }

    #[test]
    fn cell_ids() {
        let mut c = Cell {
            scenario: "steady".into(),
            topology: "2n2c2t".into(),
            kernel: None,
            scheduler: None,
        };
        assert_eq!(c.id(), "steady/2n2c2t");
        c.kernel = Some("6.12".into());
        assert_eq!(c.id(), "steady/2n2c2t/6.12");
        c.scheduler = Some("scx_simple".into());
        assert_eq!(c.id(), "steady/2n2c2t/6.12@scx_simple");
        c.kernel = None;
        assert_eq!(c.id(), "steady/2n2c2t@scx_simple");
    }

    #[test]
    fn shard_values() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard::parse("1/1"), Ok(Shard::WHOLE));
        for (text, says) in [
            ("0/3", "K counts from 1"),
            ("4/3", "K counts from 1 to N (3)"),
            ("x", "K/N"),
            ("1/0", "N must be"),
            ("1/x", "N \"x\" is not a whole number"),
            ("-1/3", "K \"-1\""),
            ("", "K/N"),
        ] {
            let e = Shard::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(e.starts_with(&format!("--shard {text}:")), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
