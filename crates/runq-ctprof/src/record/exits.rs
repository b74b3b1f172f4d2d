//! The exit listener of a recording: a thread that receives taskstats exit
//! notifications and resolves each exited thread's process name and cgroup
//! while the process is (usually) still alive.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use runq_kernel::proc::cgroup_file::parse_v2_path;
use runq_kernel::taskstats::exit::ExitRecord;
use runq_kernel::taskstats::TaskstatsClient;

use crate::model::ExitedTally;
use crate::model::ThreadState;

/// One received exit with its process name and cgroup, when resolvable.
type Resolved = (ExitRecord, Option<(String, String)>);

/// Receives exit notifications on a background thread until dropped.
#[derive(Debug)]
pub struct ExitListener {
    stop: Arc<AtomicBool>,
    records: Arc<Mutex<Vec<Resolved>>>,
    handle: Option<JoinHandle<()>>,
}

fn online_cpus() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            format!("0-{}", n.saturating_sub(1))
        })
}

/// The process name and cgroup of `tgid`, read now.
fn resolve(tgid: u32) -> Option<(String, String)> {
    let comm = std::fs::read_to_string(format!("/proc/{tgid}/comm")).ok()?;
    let cg = std::fs::read(format!("/proc/{tgid}/cgroup")).ok()?;
    let cgroup = parse_v2_path(&cg).map(|p| String::from_utf8_lossy(p).into_owned())?;
    Some((comm.trim_end().to_string(), cgroup))
}

fn listen(mut client: TaskstatsClient, stop: Arc<AtomicBool>, out: Arc<Mutex<Vec<Resolved>>>) {
    let mut batch = Vec::new();
    let mut cache: HashMap<u32, Option<(String, String)>> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        // ENOBUFS (records dropped) and timeouts both just continue.
        let _ = client.recv_exits(Duration::from_millis(100), &mut batch);
        if batch.is_empty() {
            continue;
        }
        if cache.len() > 4096 {
            cache.clear();
        }
        let resolved: Vec<Resolved> = batch
            .drain(..)
            .map(|r| {
                let who = cache
                    .entry(r.tgid)
                    .or_insert_with(|| resolve(r.tgid))
                    .clone();
                (r, who)
            })
            .collect();
        if let Ok(mut v) = out.lock() {
            v.extend(resolved);
        }
    }
}

impl ExitListener {
    /// Opens a taskstats socket, registers it for every online CPU and
    /// starts the receiving thread. The error names why exits cannot be
    /// counted (no root, no taskstats).
    pub fn start() -> Result<Self, String> {
        let mut client = TaskstatsClient::open()
            .map_err(|e| format!("cannot open the TASKSTATS genetlink family: {e}"))?;
        client
            .register_exits(&online_cpus())
            .map_err(|e| format!("exit notifications refused ({e:?}); run as root"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let records = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (stop.clone(), records.clone());
        let handle = std::thread::Builder::new()
            .name("ctprof-exits".into())
            .spawn(move || listen(client, s, r))
            .map_err(|e| format!("cannot start the exit listener: {e}"))?;
        Ok(ExitListener {
            stop,
            records,
            handle: Some(handle),
        })
    }

    /// Takes the exits received so far, tallied per process and cgroup.
    /// `threads` (the latest capture) names processes already gone.
    pub fn drain(&self, threads: &[ThreadState]) -> Vec<ExitedTally> {
        let recs = match self.records.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(_) => return Vec::new(),
        };
        let known: HashMap<u32, (&str, &str)> = threads
            .iter()
            .map(|t| (t.tgid, (t.pcomm.as_str(), t.cgroup.as_str())))
            .collect();
        let mut out: BTreeMap<(u32, String), ExitedTally> = BTreeMap::new();
        for (r, who) in recs {
            let (pcomm, cgroup) = match (&who, known.get(&r.tgid)) {
                (Some((p, c)), _) => (p.clone(), c.clone()),
                (None, Some((p, c))) => (p.to_string(), c.to_string()),
                (None, None) => (r.comm.clone(), String::new()),
            };
            let e = out
                .entry((r.tgid, cgroup.clone()))
                .or_insert_with(|| ExitedTally {
                    tgid: r.tgid,
                    pcomm,
                    cgroup,
                    ..Default::default()
                });
            e.threads += 1;
            e.cpu_ns += r.cpu_ns;
            e.cpu_delay_ns += r.stats.cpu.total_ns;
            e.blkio_delay_ns += r.stats.blkio.total_ns;
        }
        out.into_values().collect()
    }
}

impl Drop for ExitListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
