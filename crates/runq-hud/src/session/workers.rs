//! Choosing the workers: by an explicit prefix, by their own stacks
//! (which needs the probe), and only when stacks cannot tell (a stripped
//! executable, no stack in a loop) by Tokio's default names or as the
//! largest thread group.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{HudError, Options};
use crate::bpf::Probe;
use crate::classify::Flavor;
use crate::detect::roles::Role;
use crate::discovery::{
    by_name, by_stacks, group_key, largest_group, name_summary, DiscoveryError, LoopHits, Method,
    Thread,
};
use crate::event::{Kind, RawEvent};
use crate::prep::StackPrep;
use crate::stacks::Stacks;

/// How long every thread is sampled, at a time, when the workers must be
/// found by their stacks.
const DISCOVERY_SAMPLING: Duration = Duration::from_millis(500);

/// How long discovery keeps sampling a target whose threads have shown no
/// worker loop yet: a target starved on a busy host runs too little in one
/// [`DISCOVERY_SAMPLING`] to be sampled at all.
const DISCOVERY_LIMIT: Duration = Duration::from_secs(5);

/// How much longer discovery samples, once it has found workers, while a
/// group of threads sharing a name has shown no stack at all: an idle
/// runtime's workers sleep in their park until work comes, and would be
/// left out of a session that began with the first slice to find any.
const DISCOVERY_SETTLE: Duration = Duration::from_secs(2);

/// Step 3 of discovery: watches every thread of `all`, in slices of
/// [`DISCOVERY_SAMPLING`] up to `limit`, until stacks show a runtime's
/// task loop (and, for up to [`DISCOVERY_SETTLE`] more, until every group
/// of same-named threads has been seen), and keeps those threads; the
/// others leave the filter.
fn discover_by_stacks(
    all: &[Thread],
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
    limit: Duration,
) -> Result<Option<Found>, HudError> {
    let every: Vec<u32> = all.iter().map(|t| t.tid).collect();
    probe.watch(&every)?;
    let started = std::time::Instant::now();
    let mut found_at: Option<Instant> = None;
    let mut hits = BTreeMap::new();
    let found = loop {
        std::thread::sleep(DISCOVERY_SAMPLING);
        add_hits(&mut hits, sample_slice(probe, prep, stacks));
        let found = by_stacks(all, &hits);
        let silent = found.as_ref().map(|(m, _)| silent_groups(all, &hits, m));
        log::debug!(
            "hud discovery: {:.1} s sampled, {} of {} threads seen, workers so far: {}",
            started.elapsed().as_secs_f64(),
            hits.len(),
            all.len(),
            found.as_ref().map_or("none".into(), |(m, _)| m.to_string()),
        );
        if found.is_some() && found_at.is_none() {
            found_at = Some(Instant::now());
        }
        let settled = match (&silent, found_at) {
            (Some(silent), Some(at)) => silent.is_empty() || at.elapsed() >= DISCOVERY_SETTLE,
            _ => false,
        };
        if settled || (found.is_none() && started.elapsed() >= limit) {
            if let Some(silent) = silent.filter(|s| !s.is_empty()) {
                log::info!("hud discovery: no stack seen of threads {}; left out (name them with --workers if they are workers)", silent.join(", "));
            }
            break found;
        }
    };
    let keep = found.as_ref().map_or(&[][..], |(_, tids)| tids.as_slice());
    let others: Vec<u32> = every.into_iter().filter(|t| !keep.contains(t)).collect();
    probe.unwatch(&others)?;
    Ok(found.map(|(method, tids)| {
        let flavors = tids
            .iter()
            .filter_map(|t| Some((*t, hits.get(t)?.flavor?)))
            .collect();
        Found {
            method,
            tids,
            flavors,
        }
    }))
}

/// Takes one slice's events through unwinding, and counts each thread's
/// stacks in a runtime's loop.
fn sample_slice(
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
) -> BTreeMap<u32, LoopHits> {
    let mut events = probe.drain();
    for ev in &mut events {
        prep.prepare(ev);
        stacks.cut_unmapped(ev);
    }
    stacks.prefetch(events.iter().flat_map(|e| &e.stack));
    loop_hits(&events, stacks)
}

/// The names of the groups of two or more threads, outside the workers
/// found so far, of which sampling has seen no stack: an idle runtime's
/// workers look like this, while a busy thread of any kind is seen.
fn silent_groups(all: &[Thread], hits: &BTreeMap<u32, LoopHits>, found: &Method) -> Vec<String> {
    let mut groups: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    for t in all.iter().filter(|t| !found.matches(&t.comm)) {
        let g = groups.entry(group_key(&t.comm)).or_default();
        g.0 += 1;
        g.1 |= hits.contains_key(&t.tid);
    }
    groups
        .into_iter()
        .filter(|(_, (n, seen))| *n >= 2 && !seen)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Adds one slice's loop hits to the totals.
fn add_hits(total: &mut BTreeMap<u32, LoopHits>, slice: BTreeMap<u32, LoopHits>) {
    for (tid, h) in slice {
        let t = total.entry(tid).or_default();
        t.worker += h.worker;
        t.pool += h.pool;
        t.other += h.other;
        t.flavor = h.flavor.or(t.flavor);
    }
}

/// Per thread, how many of its own stacks ran a runtime's task loop or
/// the pool's loop. A holder's record carries another thread's stack
/// (the one that held a waiting thread's CPU), so it credits no one.
fn loop_hits(events: &[RawEvent], stacks: &mut Stacks) -> BTreeMap<u32, LoopHits> {
    let mut hits: BTreeMap<u32, LoopHits> = BTreeMap::new();
    for ev in events.iter().filter(|e| e.kind != Kind::Holder) {
        let role = stacks.summary(&ev.stack).role();
        let h = hits.entry(ev.tid).or_default();
        match role {
            Some(Role::Pool) => h.pool += 1,
            Some(Role::Worker(flavor)) => {
                h.worker += 1;
                h.flavor = Some(flavor);
            }
            None => h.other += 1,
        }
    }
    hits
}

/// The workers discovery chose.
pub(super) struct Found {
    /// How they were chosen.
    pub(super) method: Method,
    /// Their threads.
    pub(super) tids: Vec<u32>,
    /// For those found by their stacks: the flavor of the loop each ran.
    pub(super) flavors: BTreeMap<u32, Flavor>,
}

impl Found {
    fn by_name((method, tids): (Method, Vec<u32>)) -> Self {
        Found {
            method,
            tids,
            flavors: BTreeMap::new(),
        }
    }
}

/// Chooses the workers: by an explicit prefix, by their stacks (when the
/// executable has symbols to show Tokio's loops), else by Tokio's
/// default names or as the largest thread group.
pub(super) fn discover(
    opts: &Options,
    all: &[Thread],
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
) -> Result<Found, HudError> {
    let stripped = stacks.symbols().executable_stripped();
    log::info!(
        "hud discovery: {} threads in {}: {}",
        all.len(),
        opts.pid,
        name_summary(all)
    );
    let found = choose(opts, all, probe, prep, stacks, stripped);
    if let Ok(f) = &found {
        log::info!(
            "hud discovery: chose {} threads, by {}",
            f.tids.len(),
            f.method
        );
    }
    found
}

/// [`discover`]'s choice. A thread's name never makes it a worker while
/// its stacks can say: Tokio's blocking-pool threads carry the default
/// worker name, and actix-web's workers carry names of their own.
fn choose(
    opts: &Options,
    all: &[Thread],
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
    stripped: bool,
) -> Result<Found, HudError> {
    let names = || name_summary(all);
    if let Some(prefix) = &opts.worker_prefix {
        return by_name(all, Some(prefix))
            .map(Found::by_name)
            .ok_or_else(|| {
                DiscoveryError::NoMatch {
                    pid: opts.pid,
                    prefix: prefix.clone(),
                    names: names(),
                }
                .into()
            });
    }
    let by_stacks = match stripped {
        true => {
            log::info!("hud discovery: the executable is stripped: workers by their names only");
            None
        }
        false => discover_by_stacks(all, probe, prep, stacks, DISCOVERY_LIMIT)?,
    };
    if let Some(found) = by_stacks {
        return Ok(found);
    }
    if !stripped {
        log::info!("hud discovery: no stack showed a runtime's loop; trying thread names");
    }
    if let Some(found) = by_name(all, None).or_else(|| largest_group(all)) {
        return Ok(Found::by_name(found));
    }
    Err(match stripped {
        true => DiscoveryError::NoWorkersStripped {
            pid: opts.pid,
            exe: crate::symbols::maps::exe_path(&opts.proc_root, opts.pid)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            names: names(),
        },
        false => DiscoveryError::NoWorkers(opts.pid),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::silent_groups;
    use crate::discovery::{LoopHits, Method, Thread};

    fn thread(tid: u32, comm: &str) -> Thread {
        Thread {
            tid,
            comm: comm.into(),
        }
    }

    #[test]
    fn an_unseen_group_of_threads_is_silent_and_a_lone_or_seen_one_is_not() {
        let all = [
            thread(1, "gateway"),
            thread(2, "gw-rt"),
            thread(3, "gw-rt"),
            thread(4, "audit-0"),
            thread(5, "audit-1"),
            thread(6, "pool-0"),
            thread(7, "pool-1"),
            thread(8, "signal"),
        ];
        let mut hits = BTreeMap::new();
        hits.insert(
            2,
            LoopHits {
                worker: 3,
                ..Default::default()
            },
        );
        hits.insert(
            7,
            LoopHits {
                other: 1,
                ..Default::default()
            },
        );
        let found = Method::Stacks(vec!["gw-rt".into()]);
        // gw-rt is found; pool has one thread seen; gateway and signal are
        // alone; audit-0 and audit-1 were never seen.
        assert_eq!(silent_groups(&all, &hits, &found), ["audit"]);
        hits.insert(5, LoopHits::default());
        assert!(silent_groups(&all, &hits, &found).is_empty());
    }
}
