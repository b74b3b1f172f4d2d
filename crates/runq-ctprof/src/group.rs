//! Grouping threads: by process name, cgroup, or thread name with the
//! token normalization that folds thread pools into one bucket, plus
//! glob-based cgroup path flattening.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::ThreadState;

/// The grouping axis (`--group-by`: `pcomm`, `cgroup`, `comm`,
/// `comm-exact`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupBy {
    /// Process name.
    Pcomm,
    /// cgroup v2 path.
    Cgroup,
    /// Thread name, normalized unless disabled.
    Comm,
    /// Literal thread name.
    CommExact,
}

impl GroupBy {
    /// The `--group-by` spelling.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Pcomm => "pcomm",
            GroupBy::Cgroup => "cgroup",
            GroupBy::Comm => "comm",
            GroupBy::CommExact => "comm-exact",
        }
    }
}

/// Replaces every run of digits with `{N}`: `tokio-worker-3` ->
/// `tokio-worker-{N}`, `kworker/0:1H-events_highpri` ->
/// `kworker/{N}:{N}H-events_highpri`.
pub fn normalize_thread_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str("{N}");
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// An invalid `--cgroup-flatten` pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --cgroup-flatten glob {pattern:?}: {reason}")]
pub struct GlobError {
    /// The pattern.
    pub pattern: String,
    /// What is wrong.
    pub reason: &'static str,
}

/// A validated path glob: `*` and `?` match within one path segment,
/// `[abc]` / `[!a-z]` match one character of a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
}

impl Glob {
    /// Validates a pattern.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let err = |reason| GlobError {
            pattern: pattern.to_string(),
            reason,
        };
        if pattern.is_empty() {
            return Err(err("empty pattern"));
        }
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if c == '[' {
                let mut closed = false;
                for (n, d) in chars.by_ref().enumerate() {
                    if d == ']' && n > 0 {
                        closed = true;
                        break;
                    }
                    if d == '/' {
                        return Err(err("`/` inside a [...] class"));
                    }
                }
                if !closed {
                    return Err(err("unclosed `[` character class"));
                }
            } else if c == ']' {
                return Err(err("`]` without a matching `[`"));
            }
        }
        Ok(Glob {
            pattern: pattern.to_string(),
        })
    }

    /// The pattern text.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Length of the longest prefix of `path` (ending at a segment boundary)
    /// that the glob matches, if any.
    pub fn match_prefix(&self, path: &str) -> Option<usize> {
        let p: Vec<char> = self.pattern.chars().collect();
        let s: Vec<char> = path.chars().collect();
        (0..=s.len())
            .rev()
            .filter(|&end| end == s.len() || s[end] == '/')
            .find(|&end| glob_match(&p, &s[..end]))
            .map(|end| s[..end].iter().map(|c| c.len_utf8()).sum())
    }
}

fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = p.get(1) == Some(&'!');
    if negate {
        i += 1;
    }
    let mut hit = false;
    let start = i;
    while i < p.len() && (p[i] != ']' || i == start) {
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            hit |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    (i < p.len()).then_some((hit != negate, i + 1))
}

fn glob_match(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len())
            .take_while(|&k| k == 0 || s[k - 1] != '/')
            .any(|k| glob_match(&p[1..], &s[k..])),
        Some('?') => s.first().is_some_and(|&c| c != '/') && glob_match(&p[1..], &s[1..]),
        Some('[') => match (s.first(), class_match(p, *s.first().unwrap_or(&'\0'))) {
            (Some(&c), Some((true, used))) if c != '/' => glob_match(&p[used..], &s[1..]),
            _ => false,
        },
        Some(&c) => s.first() == Some(&c) && glob_match(&p[1..], &s[1..]),
    }
}

/// Rewrites a cgroup path with the first matching glob: the matched prefix
/// becomes the pattern text, the rest is kept.
pub fn flatten_cgroup(path: &str, globs: &[Glob]) -> String {
    for g in globs {
        if let Some(n) = g.match_prefix(path) {
            return format!("{}{}", g.as_str(), &path[n..]);
        }
    }
    path.to_string()
}

/// Grouping settings.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// The axis.
    pub by: GroupBy,
    /// Apply thread-name normalization under `Comm`.
    pub normalize: bool,
    /// cgroup flattening globs.
    pub flatten: Vec<Glob>,
}

impl Default for Grouping {
    fn default() -> Self {
        Grouping {
            by: GroupBy::Pcomm,
            normalize: true,
            flatten: Vec::new(),
        }
    }
}

/// The row names of `--group-by comm`, decided over every snapshot of a
/// view: a normalized pattern (`worker-{N}`) whose threads all carry one
/// literal name, in every snapshot, keeps that literal name; otherwise the
/// pattern names the row. Deciding over both sides of a compare puts
/// `worker-3` (baseline) and `worker-7` (candidate) on one row, and keeps a
/// pool's row name when it grows from one thread to two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommNames {
    by_literal: HashMap<String, String>,
}

impl CommNames {
    /// Decides the names over every thread of every snapshot given.
    pub fn decide<'a>(sides: impl IntoIterator<Item = &'a [ThreadState]>) -> CommNames {
        let mut seen = CommNameSet::default();
        for threads in sides {
            seen.observe(threads);
        }
        seen.decide()
    }

    /// The row name of a thread name (its pattern when not decided here).
    pub fn key(&self, comm: &str) -> String {
        self.by_literal
            .get(comm)
            .cloned()
            .unwrap_or_else(|| normalize_thread_name(comm))
    }
}

/// The thread names of snapshots met one at a time (the snapshots of two
/// directories), from which [`CommNames`] are decided once all are seen.
#[derive(Debug, Default)]
pub struct CommNameSet {
    literals: HashMap<String, BTreeSet<String>>,
}

impl CommNameSet {
    /// Adds one snapshot's thread names.
    pub fn observe(&mut self, threads: &[ThreadState]) {
        for t in threads {
            let names = self
                .literals
                .entry(normalize_thread_name(&t.comm))
                .or_default();
            if !names.contains(&t.comm) {
                names.insert(t.comm.clone());
            }
        }
    }

    /// The row names: a pattern met under one literal name keeps it.
    pub fn decide(&self) -> CommNames {
        let mut by_literal = HashMap::new();
        for (pattern, names) in &self.literals {
            let one = names.len() == 1;
            for n in names {
                let key = if one { n.clone() } else { pattern.clone() };
                by_literal.insert(n.clone(), key);
            }
        }
        CommNames { by_literal }
    }
}

/// The row names a view over `sides` needs: `Some` under `--group-by comm`
/// with normalization, `None` for the other axes.
pub fn view_names<'a>(
    g: &Grouping,
    sides: impl IntoIterator<Item = &'a [ThreadState]>,
) -> Option<CommNames> {
    (g.by == GroupBy::Comm && g.normalize).then(|| CommNames::decide(sides))
}

/// Groups threads; under normalized `--group-by comm` the row names come
/// from `names` (decided over every snapshot of the view).
pub fn group_threads_named<'a>(
    threads: &'a [ThreadState],
    g: &Grouping,
    names: Option<&CommNames>,
) -> BTreeMap<String, Vec<&'a ThreadState>> {
    let mut out: BTreeMap<String, Vec<&ThreadState>> = BTreeMap::new();
    for t in threads {
        let key = match g.by {
            GroupBy::Pcomm => t.pcomm.clone(),
            GroupBy::Cgroup => flatten_cgroup(&t.cgroup, &g.flatten),
            GroupBy::CommExact => t.comm.clone(),
            GroupBy::Comm if g.normalize => match names {
                Some(n) => n.key(&t.comm),
                None => normalize_thread_name(&t.comm),
            },
            GroupBy::Comm => t.comm.clone(),
        };
        out.entry(key).or_default().push(t);
    }
    out
}

#[cfg(test)]
mod tests;
