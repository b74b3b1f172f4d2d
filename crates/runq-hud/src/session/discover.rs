//! Choosing the workers: by name, by their own stacks (step 3, which
//! needs the probe), or as the largest thread group.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{HudError, Options};
use crate::bpf::Probe;
use crate::discovery::{
    by_name, by_stacks, largest_group, name_summary, DiscoveryError, LoopHits, Method, Thread,
};
use crate::event::{Kind, RawEvent};
use crate::prep::StackPrep;
use crate::roles::Role;
use crate::stacks::Stacks;

/// How long every thread is sampled, at a time, when the workers must be
/// found by their stacks.
const DISCOVERY_SAMPLING: Duration = Duration::from_millis(500);

/// How long discovery keeps sampling a target whose threads have shown no
/// worker loop yet: a target starved on a busy host runs too little in one
/// [`DISCOVERY_SAMPLING`] to be sampled at all.
const DISCOVERY_LIMIT: Duration = Duration::from_secs(5);

/// Step 3 of discovery: watches every thread of `all`, in slices of
/// [`DISCOVERY_SAMPLING`] up to `limit`, until stacks show a runtime's
/// task loop, and keeps those threads; the others leave the filter.
fn discover_by_stacks(
    all: &[Thread],
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
    limit: Duration,
) -> Result<Option<(Method, Vec<u32>)>, HudError> {
    let every: Vec<u32> = all.iter().map(|t| t.tid).collect();
    probe.watch(&every)?;
    let started = std::time::Instant::now();
    let mut hits = BTreeMap::new();
    let found = loop {
        std::thread::sleep(DISCOVERY_SAMPLING);
        let mut events = probe.drain();
        for ev in &mut events {
            prep.prepare(ev);
        }
        stacks.prefetch(events.iter().flat_map(|e| &e.stack));
        add_hits(&mut hits, loop_hits(&events, stacks));
        let found = by_stacks(all, &hits);
        if found.is_some() || started.elapsed() >= limit {
            break found;
        }
    };
    let keep = found.as_ref().map_or(&[][..], |(_, tids)| tids.as_slice());
    let others: Vec<u32> = every.into_iter().filter(|t| !keep.contains(t)).collect();
    probe.unwatch(&others)?;
    Ok(found)
}

/// Adds one slice's loop hits to the totals.
fn add_hits(total: &mut BTreeMap<u32, LoopHits>, slice: BTreeMap<u32, LoopHits>) {
    for (tid, h) in slice {
        let t = total.entry(tid).or_default();
        t.worker += h.worker;
        t.pool += h.pool;
        t.other += h.other;
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
            Some(Role::Worker(_)) => h.worker += 1,
            None => h.other += 1,
        }
    }
    hits
}

/// Chooses the workers: by name, by their stacks (when the executable
/// has symbols to show Tokio's loops), or as the largest thread group.
pub(super) fn discover(
    opts: &Options,
    all: &[Thread],
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
) -> Result<(Method, Vec<u32>), HudError> {
    let names = || name_summary(all);
    let stripped = stacks.symbols().executable_stripped();
    if let Some(found) = by_name(all, opts.worker_prefix.as_deref()) {
        if opts.worker_prefix.is_some() || stripped {
            return Ok(found);
        }
        return other_runtimes(found, all, probe, prep, stacks);
    }
    if let Some(prefix) = &opts.worker_prefix {
        let (pid, prefix) = (opts.pid, prefix.clone());
        return Err(DiscoveryError::NoMatch {
            pid,
            prefix,
            names: names(),
        }
        .into());
    }
    let by_stacks = match stripped {
        true => None,
        false => discover_by_stacks(all, probe, prep, stacks, DISCOVERY_LIMIT)?,
    };
    if let Some(found) = by_stacks.or_else(|| largest_group(all)) {
        return Ok(found);
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

/// Tokio's default names found the multi-thread workers; one slice of
/// sampling looks among the other threads for other runtimes (a
/// `current_thread` runtime's `block_on`, a `LocalSet`) and adds them.
fn other_runtimes(
    (method, mut tids): (Method, Vec<u32>),
    all: &[Thread],
    probe: &mut Probe,
    prep: &mut StackPrep,
    stacks: &mut Stacks,
) -> Result<(Method, Vec<u32>), HudError> {
    let others: Vec<Thread> = all
        .iter()
        .filter(|t| !method.matches(&t.comm))
        .cloned()
        .collect();
    if others.is_empty() {
        return Ok((method, tids));
    }
    let Some((Method::Stacks(names), more)) =
        discover_by_stacks(&others, probe, prep, stacks, DISCOVERY_SAMPLING)?
    else {
        return Ok((method, tids));
    };
    tids.extend(more);
    Ok((Method::TokioDefaultsAnd(names), tids))
}
