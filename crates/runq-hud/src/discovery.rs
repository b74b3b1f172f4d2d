//! Finding the target process and its Tokio worker threads.
//!
//! A worker is a thread that runs a runtime's task loop, whatever its
//! name: an explicit name prefix (`--workers`) is taken as given;
//! otherwise the session samples every thread for a moment and keeps
//! those whose own stacks ran a runtime's task loop (see [`by_stacks`]).
//! Names decide only when stacks cannot: a stripped executable, or no
//! stack in a loop; then Tokio's default thread names
//! (`tokio-runtime-worker`, seen truncated as `tokio-runtime-w`, and
//! `tokio-rt-worker`, which Tokio's blocking-pool threads carry too), or
//! the largest group of threads named `{name}-{N}`. Threads that appear
//! later are watched when they match the method that found the first
//! ones; each event's stack still says whether its thread was a worker
//! then (see [`crate::roles`]).

use std::collections::BTreeMap;
use std::path::Path;

use runq_kernel::proc::tasks;

use crate::classify::Flavor;

/// Comm prefixes of Tokio's worker threads.
pub const TOKIO_PREFIXES: [&str; 2] = ["tokio-runtime-w", "tokio-rt-worker"];

/// A thread of the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Thread id.
    pub tid: u32,
    /// Its comm (thread name, at most 15 bytes).
    pub comm: String,
}

/// Errors in finding the target.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DiscoveryError {
    /// No process has that name.
    #[error("no running process is named {0:?} (matched on comm and executable name); check `ps -e`, or pass --pid")]
    NotFound(String),
    /// Several processes have that name.
    #[error("{name:?} matches several processes ({candidates}); pass --pid")]
    Ambiguous {
        /// The name.
        name: String,
        /// `pid comm` of each candidate.
        candidates: String,
    },
    /// The pid does not exist.
    #[error("no process with pid {0}")]
    NoSuchPid(u32),
    /// No thread looks like a runtime worker.
    #[error("found no worker threads in process {0}: no tokio-runtime-worker / tokio-rt-worker threads, no stack in a Tokio runtime's loop and no group of threads sharing a name; pass --workers PREFIX (thread names: ps -T -p {0})")]
    NoWorkers(u32),
    /// No thread looks like a runtime worker, and the executable has no
    /// symbols to tell them by their stacks.
    #[error("found no worker threads in process {pid}: {exe} is stripped (no symbol table, no debug info), so its stacks cannot show Tokio's loops; pass --debug-file with its debug info (objcopy --only-keep-debug) or an unstripped copy, or name the workers with --workers PREFIX (its threads: {names})")]
    NoWorkersStripped {
        /// The target.
        pid: u32,
        /// Its executable.
        exe: String,
        /// Its thread names, with counts.
        names: String,
    },
    /// `--workers PREFIX` matched no thread.
    #[error("no thread of process {pid} has a name starting with {prefix:?} (its threads: {names}); check the prefix, or leave --workers out to find the workers by their stacks")]
    NoMatch {
        /// The target.
        pid: u32,
        /// The prefix given.
        prefix: String,
        /// Its thread names, with counts.
        names: String,
    },
}

/// Every process (but this one) whose comm or executable name is
/// `name`, by pid, with its comm.
pub fn processes_named(proc_root: &Path, name: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    for pid in tasks::pids(proc_root).unwrap_or_default() {
        if pid == me {
            continue;
        }
        let dir = proc_root.join(pid.to_string());
        let comm = tasks::read_comm(&dir);
        let exe = std::fs::read_link(dir.join("exe"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
        if comm.as_deref() == Some(name) || exe.as_deref() == Some(name) {
            found.push((pid, comm.unwrap_or_default()));
        }
    }
    found.sort();
    found
}

/// Processes whose comm or executable basename is `name` (not this one).
pub fn find_process(proc_root: &Path, name: &str) -> Result<u32, DiscoveryError> {
    let found = processes_named(proc_root, name);
    match found.len() {
        0 => Err(DiscoveryError::NotFound(name.to_string())),
        1 => Ok(found[0].0),
        _ => Err(DiscoveryError::Ambiguous {
            name: name.to_string(),
            candidates: found
                .iter()
                .map(|(p, c)| format!("{p} {c}"))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Every thread of `pid`.
pub fn threads(proc_root: &Path, pid: u32) -> Result<Vec<Thread>, DiscoveryError> {
    let tids = tasks::tids(proc_root, pid).map_err(|_| DiscoveryError::NoSuchPid(pid))?;
    let dir = proc_root.join(pid.to_string()).join("task");
    Ok(tids
        .into_iter()
        .map(|tid| Thread {
            tid,
            comm: tasks::read_comm(&dir.join(tid.to_string())).unwrap_or_default(),
        })
        .collect())
}

/// The threads' names with their counts, most frequent first
/// (`orders-rt ×6, main, ledger-audit`).
pub fn name_summary(threads: &[Thread]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in threads {
        *counts.entry(t.comm.as_str()).or_default() += 1;
    }
    let mut v: Vec<(&str, usize)> = counts.into_iter().collect();
    v.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    v.iter()
        .map(|(name, n)| match n {
            1 => (*name).to_string(),
            n => format!("{name} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the workers were chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `--worker-prefix`.
    ExplicitPrefix(String),
    /// Tokio's default thread names.
    TokioDefaults,
    /// Threads seen in Tokio's worker loop; their names.
    Stacks(Vec<String>),
    /// The largest `{name}-{N}` group.
    LargestGroup(String),
    /// The largest group of threads of the same name (a runtime named
    /// without a number, its blocking pool included).
    SameName(String),
}

impl Method {
    /// True when the method took the workers by their names, not by what
    /// their stacks showed: a thread it watched whose stacks never show
    /// a role is taken for a worker.
    pub fn by_names(&self) -> bool {
        !matches!(self, Method::Stacks(_))
    }

    /// True when a thread named `comm` belongs to the workers this method
    /// found (new threads of a growing runtime).
    pub fn matches(&self, comm: &str) -> bool {
        match self {
            Method::ExplicitPrefix(p) => comm.starts_with(p.as_str()),
            Method::TokioDefaults => TOKIO_PREFIXES.iter().any(|p| comm.starts_with(p)),
            Method::Stacks(names) => names.iter().any(|n| n == comm),
            Method::LargestGroup(name) => group_name(comm) == Some(name.as_str()),
            Method::SameName(name) => comm == name,
        }
    }
}

/// `name` of a `{name}-{N}` thread name.
fn group_name(comm: &str) -> Option<&str> {
    let (name, n) = comm.rsplit_once('-')?;
    (!name.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

/// The group a thread's name puts it in: `name` of `{name}-{N}`, else
/// the whole name (a runtime's threads named alike).
pub fn group_key(comm: &str) -> &str {
    group_name(comm).unwrap_or(comm)
}

/// What sampling saw of one thread's stacks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopHits {
    /// Stacks through a runtime's task loop (any flavor).
    pub worker: u32,
    /// Stacks through the blocking pool's loop.
    pub pool: u32,
    /// Stacks through neither (a plain thread's, or one cut short).
    pub other: u32,
    /// The flavor of the last task loop seen.
    pub flavor: Option<Flavor>,
}

impl LoopHits {
    /// The thread ran a runtime's task loop, on at least a fifth of its
    /// stacks that showed no pool loop: a plain thread (one holding a
    /// mutex a worker waits for, say) was seen, now and then, credited
    /// with a worker's loop, while a worker's own stacks show its loop
    /// most of the time (when parked, and under most task code).
    fn ran_a_worker_loop(&self) -> bool {
        self.worker > 0 && self.worker * 4 >= self.other
    }
}

/// Step 3: the threads whose own sampled stacks ran a runtime's task
/// loop (a multi-thread worker's, a `current_thread` runtime's `block_on`,
/// a `LocalSet`'s), whatever else they ran: after `block_in_place` a
/// worker's thread serves the blocking pool for a while, and a pool thread
/// takes over the worker's core (see [`LoopHits::ran_a_worker_loop`]).
pub fn by_stacks(threads: &[Thread], hits: &BTreeMap<u32, LoopHits>) -> Option<(Method, Vec<u32>)> {
    let workers: Vec<&Thread> = threads
        .iter()
        .filter(|t| hits.get(&t.tid).is_some_and(LoopHits::ran_a_worker_loop))
        .collect();
    if workers.is_empty() {
        return None;
    }
    let mut names: Vec<String> = workers.iter().map(|t| t.comm.clone()).collect();
    names.sort();
    names.dedup();
    let tids = workers.iter().map(|t| t.tid).collect();
    Some((Method::Stacks(names), tids))
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Method::ExplicitPrefix(p) => write!(f, "explicit prefix {p:?}"),
            Method::TokioDefaults => f.write_str("Tokio default thread names"),
            Method::Stacks(names) => {
                write!(
                    f,
                    "stacks in a Tokio runtime's task loop ({})",
                    names.join(", ")
                )
            }
            Method::LargestGroup(p) => write!(f, "largest {p}-N thread group"),
            Method::SameName(p) => write!(f, "largest group of threads named {p}"),
        }
    }
}

/// The threads a method selects.
pub fn members(threads: &[Thread], method: &Method) -> Vec<u32> {
    threads
        .iter()
        .filter(|t| method.matches(&t.comm))
        .map(|t| t.tid)
        .collect()
}

/// Steps 1 and 2: the workers by name (an explicit prefix, or Tokio's
/// defaults).
pub fn by_name(threads: &[Thread], prefix: Option<&str>) -> Option<(Method, Vec<u32>)> {
    let method = match prefix {
        Some(p) => Method::ExplicitPrefix(p.to_string()),
        None => Method::TokioDefaults,
    };
    let tids = members(threads, &method);
    (!tids.is_empty()).then_some((method, tids))
}

/// Step 4: the largest group of at least two `{name}-{N}` threads.
pub fn largest_group(threads: &[Thread]) -> Option<(Method, Vec<u32>)> {
    let mut groups: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for t in threads {
        if let Some(name) = group_name(&t.comm) {
            groups.entry(name).or_default().push(t.tid);
        }
    }
    let numbered = groups
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .max_by_key(|(_, v)| v.len());
    if let Some((name, tids)) = numbered {
        return Some((Method::LargestGroup(name.to_string()), tids));
    }
    same_name(threads)
}

/// The largest group of at least two threads of one name, other than the
/// process's main thread's.
fn same_name(threads: &[Thread]) -> Option<(Method, Vec<u32>)> {
    let main = threads.first().map(|t| t.comm.as_str());
    let mut groups: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for t in threads
        .iter()
        .skip(1)
        .filter(|t| Some(t.comm.as_str()) != main)
    {
        groups.entry(t.comm.as_str()).or_default().push(t.tid);
    }
    let (name, tids) = groups
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .max_by_key(|(_, v)| v.len())?;
    Some((Method::SameName(name.to_string()), tids))
}

/// Chooses the worker threads by name alone (steps 1, 2 and 4; the
/// session inserts step 3, which needs the probe).
pub fn select_workers(threads: &[Thread], prefix: Option<&str>) -> Option<(Method, Vec<u32>)> {
    if prefix.is_some() {
        return by_name(threads, prefix);
    }
    by_name(threads, None).or_else(|| largest_group(threads))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(tid: u32, comm: &str) -> Thread {
        Thread {
            tid,
            comm: comm.into(),
        }
    }

    #[test]
    fn tokio_defaults_win_over_groups() {
        let ts = [
            t(1, "svc"),
            t(2, "tokio-runtime-w"),
            t(3, "tokio-runtime-w"),
            t(4, "io-0"),
            t(5, "io-1"),
            t(6, "io-2"),
        ];
        let (m, tids) = select_workers(&ts, None).unwrap();
        assert_eq!((m, tids), (Method::TokioDefaults, vec![2, 3]));
    }

    #[test]
    fn explicit_prefix_and_largest_group() {
        let ts = [
            t(1, "svc"),
            t(2, "rt-0"),
            t(3, "rt-1"),
            t(4, "io-0"),
            t(5, "io-1"),
            t(6, "io-2"),
        ];
        assert_eq!(select_workers(&ts, Some("rt-")).unwrap().1, vec![2, 3]);
        let (m, tids) = select_workers(&ts, None).unwrap();
        assert_eq!(m, Method::LargestGroup("io".into()));
        assert_eq!(tids, vec![4, 5, 6]);
        assert!(select_workers(&[t(1, "svc")], None).is_none());
        // A runtime named without a number: the largest same-name group.
        let plain = [
            t(1, "svc"),
            t(2, "orders-rt"),
            t(3, "orders-rt"),
            t(4, "audit"),
        ];
        let (m, tids) = select_workers(&plain, None).unwrap();
        assert_eq!(
            (m.to_string(), tids),
            (
                "largest group of threads named orders-rt".into(),
                vec![2, 3]
            )
        );
        assert_eq!(name_summary(&plain), "orders-rt ×2, audit, svc");
        assert!(select_workers(&ts, Some("nope")).is_none());
    }

    #[test]
    fn stacks_pick_the_runtime_among_other_pools() {
        let ts = [
            t(1, "svc"),
            t(2, "svc"),
            t(3, "svc"),
            t(4, "io-0"),
            t(5, "io-1"),
            t(6, "io-2"),
            t(7, "io-3"),
            t(8, "main"),
        ];
        let hit = |worker, pool| LoopHits {
            worker,
            pool,
            ..Default::default()
        };
        let hits = BTreeMap::from([
            (1, hit(3, 0)),
            (2, hit(1, 0)),
            (3, hit(0, 4)), // the blocking pool, under the workers' name
            (4, hit(0, 0)),
        ]);
        assert!(select_workers(&ts, None).unwrap().0 == Method::LargestGroup("io".into()));
        let (m, tids) = by_stacks(&ts, &hits).unwrap();
        assert_eq!(m, Method::Stacks(vec!["svc".into()]));
        assert_eq!(tids, vec![1, 2]);
        assert!(m.matches("svc") && !m.matches("io-0"));
        assert!(by_stacks(&ts, &BTreeMap::new()).is_none());
        // A worker that ran block_in_place served the pool for a while.
        let moved = BTreeMap::from([(1, hit(3, 0)), (2, hit(1, 5))]);
        assert_eq!(by_stacks(&ts, &moved).unwrap().1, vec![1, 2]);
        // A plain thread seen once with a worker's loop among a dozen of
        // its own stacks is no worker; a worker with a few stacks cut
        // short is one.
        let plain = LoopHits {
            worker: 1,
            other: 12,
            ..Default::default()
        };
        let cut = LoopHits {
            worker: 9,
            other: 3,
            ..Default::default()
        };
        let mixed = BTreeMap::from([(1, cut), (4, plain)]);
        assert_eq!(by_stacks(&ts, &mixed).unwrap().1, vec![1]);
    }

    #[test]
    fn a_group_keeps_its_name_as_it_grows() {
        let m = Method::LargestGroup("io".into());
        assert!(m.matches("io-17") && !m.matches("db-1") && !m.matches("io"));
        let ts = [t(1, "io-0"), t(2, "db-0"), t(3, "io-5")];
        assert_eq!(members(&ts, &m), vec![1, 3]);
    }

    #[test]
    fn finds_processes_in_a_synthetic_proc() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, comm) in [(10, "svc"), (11, "other"), (12, "dup"), (13, "dup")] {
            let d = dir.path().join(pid.to_string());
            std::fs::create_dir_all(d.join("task").join(pid.to_string())).unwrap();
            std::fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
            std::fs::write(
                d.join("task").join(pid.to_string()).join("comm"),
                format!("{comm}\n"),
            )
            .unwrap();
        }
        assert_eq!(find_process(dir.path(), "svc"), Ok(10));
        assert!(matches!(
            find_process(dir.path(), "nope"),
            Err(DiscoveryError::NotFound(_))
        ));
        let err = find_process(dir.path(), "dup").unwrap_err().to_string();
        assert!(err.contains("12 dup") && err.contains("13 dup"), "{err}");
        assert_eq!(threads(dir.path(), 10).unwrap(), vec![t(10, "svc")]);
        assert_eq!(threads(dir.path(), 99), Err(DiscoveryError::NoSuchPid(99)));
    }
}
