//! Host-wide capture: list every thread group and thread under `/proc`,
//! read them on a few worker threads, then add per-cgroup stats, host
//! pressure, sched_ext state and the host context.
//!
//! Capture is best-effort: a thread that exits mid-walk or a file the kernel
//! does not provide never fails the snapshot; the summaries count them.

mod caps;
pub mod cgroup_share;
pub mod cgroups;
pub mod tally;
pub mod thread;

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use runq_kernel::taskstats::TaskstatsClient;

use crate::avail::{Capabilities, Reason, Source};
use crate::model::{CtprofSnapshot, ThreadState};
use tally::Tally;
use thread::Worker;

/// What to capture and from where.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// The procfs root (`/proc` live; a temp dir in tests).
    pub proc_root: PathBuf,
    /// The sysfs root (`/sys` live).
    pub sys_root: PathBuf,
    /// Query taskstats over genetlink (needs `CAP_NET_ADMIN`).
    pub taskstats: bool,
    /// Read jemalloc per-thread counters via ptrace (needs ptrace rights).
    pub jemalloc: bool,
    /// Read per-cgroup stats for every cgroup a thread is in.
    pub cgroups: bool,
    /// Worker threads reading `/proc` (0 = one per CPU this process may
    /// run on).
    pub workers: usize,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            taskstats: true,
            jemalloc: true,
            cgroups: true,
            workers: 0,
        }
    }
}

#[cfg(test)]
impl CaptureOptions {
    /// Reads a fake procfs/sysfs tree under `root` with `workers` readers
    /// and nothing that needs privileges (no taskstats, jemalloc, cgroups).
    pub(crate) fn fixture(root: &std::path::Path, workers: usize) -> Self {
        CaptureOptions {
            proc_root: root.to_path_buf(),
            sys_root: root.join("sys"),
            taskstats: false,
            jemalloc: false,
            cgroups: false,
            workers,
        }
    }
}

fn numeric_entries(dir: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            std::str::from_utf8(e.file_name().as_bytes())
                .ok()?
                .parse()
                .ok()
        })
        .collect()
}

/// Lists `(tgid, tid)` of every thread under `proc_root`.
pub fn list_threads(proc_root: &Path) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut tgids = numeric_entries(proc_root);
    tgids.sort_unstable();
    let mut path = proc_root.to_path_buf();
    for tgid in tgids {
        path.push(tgid.to_string());
        path.push("task");
        let mut tids = numeric_entries(&path);
        tids.sort_unstable();
        out.extend(tids.into_iter().map(|tid| (tgid, tid)));
        path.pop();
        path.pop();
    }
    out
}

fn worker_count(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    // One per CPU this process may run on: on a large host the /proc walk
    // is spread over every CPU, as `--workers` documents.
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Captures a snapshot.
pub fn capture(opts: &CaptureOptions) -> CtprofSnapshot {
    let started = Instant::now();
    let mut snap = CtprofSnapshot::new();
    snap.captured_at_unix_ns = runq_kernel::clock::unix_ns();
    let listed = list_threads(&opts.proc_root);
    let jemalloc_host = crate::jemalloc::host_reason(opts.jemalloc, std::env::consts::ARCH);
    // Each process's allocator (its executable, its maps) is inspected
    // beside the per-thread reads.
    let (read, allocators) = std::thread::scope(|s| {
        let detect = jemalloc_host
            .is_none()
            .then(|| s.spawn(|| crate::jemalloc::detect(&opts.proc_root, &listed)));
        let read = read_listed(opts, &listed, true);
        (read, detect.map(|h| h.join().unwrap_or_default()))
    });
    let (mut threads, tally, ts_unavailable) = read;
    let mut probe = tally.probe_summary(listed.len() as u64);
    if let Some(allocators) = allocators {
        probe.jemalloc_processes = crate::jemalloc::fill(&mut threads, &allocators);
    }
    if opts.cgroups {
        snap.cgroup_stats = cgroups::enrich(&threads, &opts.proc_root);
    }
    snap.threads = threads;
    snap.probe_summary = Some(probe);
    snap.parse_summary = Some(tally.parse_summary());
    let mut ts = tally.taskstats_summary();
    ts.unavailable = ts_unavailable;
    ts.delayacct_enabled = runq_kernel::taskstats::delayacct_enabled();
    snap.taskstats_summary = Some(ts);
    snap.psi = runq_kernel::psi::read_host_psi(&opts.proc_root);
    snap.sched_ext = runq_kernel::sched_ext::read_sched_ext(&opts.sys_root);
    snap.host = Some(runq_kernel::host::read_host_context(
        &opts.proc_root,
        &opts.sys_root,
    ));
    fill_capabilities(&mut snap, &opts.proc_root, jemalloc_host);
    snap.capture_duration_ns = started.elapsed().as_nanos() as u64;
    snap
}

/// Reads the listed threads (sorted by tgid, tid, with their process
/// name), with the read counts and why taskstats was not queried; `smaps`
/// says whether leaders' `smaps_rollup` is read.
pub(crate) fn read_listed(
    opts: &CaptureOptions,
    listed: &[(u32, u32)],
    smaps: bool,
) -> (Vec<ThreadState>, Tally, Option<String>) {
    let mut ts_unavailable = None;
    let (mut threads, tally) = capture_threads(opts, listed, smaps, &mut ts_unavailable);
    // In the listing's order already when it was sorted: a sort would
    // move every (large) thread record again.
    if !threads.is_sorted_by_key(|t| (t.tgid, t.tid)) {
        threads.sort_unstable_by_key(|t| (t.tgid, t.tid));
    }
    fill_pcomm(&mut threads, &opts.proc_root);
    (threads, tally, ts_unavailable)
}

/// Consolidates per-thread unavailability into host-wide reasons and
/// probes the host capability line.
fn fill_capabilities(snap: &mut CtprofSnapshot, proc_root: &Path, jemalloc: Option<Reason>) {
    let mut caps = Capabilities::default();
    if let Some(why) = jemalloc {
        caps.unavailable.insert(Source::Jemalloc, why);
    }
    let delayacct_off = std::fs::read_to_string(proc_root.join("sys/kernel/task_delayacct"))
        .is_ok_and(|s| s.trim() == "0");
    if delayacct_off {
        caps.unavailable
            .insert(Source::Delayacct, Reason::DelayacctOff);
    }
    caps::consolidate(snap, &mut caps);
    if let Some(r) = caps.unavailable.get_mut(&Source::Schedstats) {
        if *r == Reason::NoSchedstats {
            *r = caps::schedstats_reason(proc_root);
        }
    }
    caps.host = caps::host_capabilities(proc_root, snap);
    snap.capabilities = Some(caps);
}

fn open_taskstats(opts: &CaptureOptions, why: &mut Option<String>) -> Option<TaskstatsClient> {
    if !opts.taskstats {
        *why = Some("disabled (--no-taskstats)".into());
        return None;
    }
    match TaskstatsClient::open() {
        Ok(c) => Some(c),
        Err(e) => {
            *why = Some(format!("cannot open the TASKSTATS genetlink family: {e}"));
            None
        }
    }
}

/// Where the cgroup v2 hierarchy is mounted: from mountinfo for the live
/// `/proc`, `<sys_root>/fs/cgroup` for a synthetic tree.
fn v2_root(opts: &CaptureOptions) -> Option<PathBuf> {
    if opts.proc_root == Path::new("/proc") {
        runq_kernel::cgroup_stats::CgroupRoots::detect().v2
    } else {
        Some(opts.sys_root.join("fs/cgroup"))
    }
}

/// The most listed threads a worker takes at a time.
const MAX_CHUNK: usize = 256;

/// How many listed threads a worker takes at a time: about eight takes per
/// worker, so that the workers finish together (one process's
/// `smaps_rollup` or a CPU shared with another task does not hold back a
/// fixed share), at most [`MAX_CHUNK`] (at least 16) to keep a process's
/// threads together.
fn chunk_size(listed: usize, workers: usize) -> usize {
    (listed / (workers * 8).max(1)).clamp(16, MAX_CHUNK)
}

/// The next `size` threads of `listed` not yet taken by a worker, with
/// where they start.
fn take_chunk<'a>(
    next: &AtomicUsize,
    size: usize,
    listed: &'a [(u32, u32)],
) -> Option<(usize, &'a [(u32, u32)])> {
    let start = next.fetch_add(size, Ordering::Relaxed);
    (start < listed.len()).then(|| (start, &listed[start..(start + size).min(listed.len())]))
}

/// Reads every listed thread on a few scoped worker threads.
fn capture_threads(
    opts: &CaptureOptions,
    listed: &[(u32, u32)],
    smaps: bool,
    ts_unavailable: &mut Option<String>,
) -> (Vec<ThreadState>, Tally) {
    let n = worker_count(opts.workers).min(listed.len().max(1));
    let root = opts.proc_root.as_os_str().as_bytes();
    let v2_root = v2_root(opts);
    let mut workers: Vec<Worker> = (0..n)
        .map(|_| {
            let mut w = Worker::new(root, open_taskstats(opts, ts_unavailable));
            w.smaps = smaps;
            w.cgroup = cgroup_share::SharedCgroup::new(v2_root.clone());
            w
        })
        .collect();
    if n == 1 {
        // One worker reads on this thread: no reader thread to start (and
        // exit) every interval of a recording.
        let w = &mut workers[0];
        let out = listed
            .iter()
            .filter_map(|&(tgid, tid)| w.capture(tgid, tid))
            .collect();
        return (out, w.tally.clone());
    }
    let next = AtomicUsize::new(0);
    let size = chunk_size(listed.len(), n);
    let mut chunks: Vec<(usize, Vec<ThreadState>)> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|w| {
                let next = &next;
                s.spawn(move || {
                    let mut out = Vec::new();
                    while let Some((start, part)) = take_chunk(next, size, listed) {
                        let read = part.iter().filter_map(|&(tgid, tid)| w.capture(tgid, tid));
                        out.push((start, read.collect::<Vec<_>>()));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut tally = Tally::default();
    for w in &workers {
        tally.merge(&w.tally);
    }
    // Back in the listing's order.
    chunks.sort_unstable_by_key(|(start, _)| *start);
    let mut threads = Vec::with_capacity(chunks.iter().map(|(_, c)| c.len()).sum());
    for (_, c) in chunks {
        threads.extend(c);
    }
    (threads, tally)
}

/// Sets each thread's `pcomm` to its leader's comm.
fn fill_pcomm(threads: &mut [ThreadState], proc_root: &Path) {
    let mut leaders: HashMap<u32, String> = threads
        .iter()
        .filter(|t| t.tid == t.tgid)
        .map(|t| (t.tgid, t.comm.clone()))
        .collect();
    for t in threads.iter_mut() {
        let name = leaders.entry(t.tgid).or_insert_with(|| {
            std::fs::read_to_string(proc_root.join(t.tgid.to_string()).join("comm"))
                .map(|s| s.trim_end_matches('\n').to_string())
                .unwrap_or_default()
        });
        t.pcomm.clone_from(name);
    }
}

#[cfg(test)]
mod tests;
