//! A flight recorder of scheduler events: a tracefs instance of its own
//! (`instances/runq-<pid>-<n>`) with `sched_switch`, `sched_wakeup`,
//! `sched_wakeup_new` and `sched_migrate_task` on, clock `mono`, limited
//! to the CPUs of interest (`tracing_cpumask`) and to a fixed buffer per
//! CPU in overwrite mode: the kernel keeps the newest events, nothing runs
//! in user space while recording, and [`Recorder::stop`] reads the buffer
//! once. The instance is removed when the [`Recorder`] is dropped.

mod event;

pub use event::{parse_line, SchedEvent, Task};

use std::fs;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::guard::{Guard, Undo};
use crate::tracefs::{ensure_mounted, Tracefs, TracefsError};

/// The events recorded.
pub const EVENTS: [&str; 4] = [
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
];

/// Why the recorder could not start or be read.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// tracefs is missing and could not be mounted.
    #[error(transparent)]
    Tracefs(#[from] TracefsError),
    /// A tracefs file could not be written or read.
    #[error("tracefs {}: {source}{}", path.display(), hint(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

fn hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::PermissionDenied => " (tracing needs root)",
        _ => "",
    }
}

/// What the recorder kept.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// The events, oldest first.
    pub events: Vec<SchedEvent>,
    /// Events the kernel wrote during the recording (more than kept when
    /// the buffer wrapped).
    pub written: u64,
    /// The CPUs whose buffer wrapped (each wraps on its own), with the
    /// time of the oldest event each still holds: what ran on such a CPU
    /// before then is unknown.
    pub wrapped_from_ns: std::collections::BTreeMap<u32, u64>,
    /// Whether tracing was already off when [`Recorder::stop`] came: a
    /// [`Recorder::trigger`] froze it (the events end at that moment).
    pub frozen: bool,
}

/// A running recording (see the module doc).
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    /// Turns tracing off and removes the instance if runq dies without
    /// dropping the recorder (SIGKILL, the OOM killer).
    _guard: Option<Guard>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Recorder {
    /// Creates the instance and starts recording the `cpus` (all online
    /// CPUs when empty) into `kib_per_cpu` KiB per CPU.
    pub fn start(cpus: &[u32], kib_per_cpu: u64) -> Result<Recorder, RecorderError> {
        let root = match ensure_mounted()? {
            Tracefs::Mounted(p) | Tracefs::MountedNow(p) => p,
        };
        remove_stale(&root.join("instances"));
        let dir = root.join("instances").join(instance_name());
        fs::create_dir(&dir).map_err(|source| RecorderError::Io {
            path: dir.clone(),
            source,
        })?;
        let _guard = guard_instance(&dir);
        let rec = Recorder { dir, _guard };
        rec.write("tracing_on", "0")?;
        rec.write("trace_clock", "mono")?;
        rec.write("buffer_size_kb", &kib_per_cpu.max(64).to_string())?;
        if !cpus.is_empty() {
            rec.write("tracing_cpumask", &cpumask(cpus))?;
        }
        for e in EVENTS {
            rec.write(&format!("events/sched/{e}/enable"), "1")?;
        }
        rec.write("tracing_on", "1")?;
        Ok(rec)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), RecorderError> {
        let path = self.dir.join(file);
        fs::write(&path, value).map_err(|source| RecorderError::Io { path, source })
    }

    /// `tracing_on` opened for writing: whoever holds it (a worker forked
    /// with it) can freeze the recording at a moment of its choosing by
    /// writing `0`, so that the rest of the run does not overwrite it.
    pub fn trigger(&self) -> Result<fs::File, RecorderError> {
        let path = self.dir.join("tracing_on");
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|source| RecorderError::Io { path, source })
    }

    /// Stops recording and reads what the buffer kept.
    pub fn stop(&self) -> Result<Recording, RecorderError> {
        let on = fs::read_to_string(self.dir.join("tracing_on")).unwrap_or_default();
        self.write("tracing_on", "0")?;
        let path = self.dir.join("trace");
        let file = fs::File::open(&path).map_err(|source| RecorderError::Io {
            path: path.clone(),
            source,
        })?;
        let mut rec = read_trace(io::BufReader::with_capacity(1 << 20, file))
            .map_err(|source| RecorderError::Io { path, source })?;
        rec.wrapped_from_ns = first_event_of(&rec.events, &overrun_cpus(&self.dir));
        rec.frozen = on.trim() == "0";
        Ok(rec)
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        let _ = fs::remove_dir(&self.dir);
    }
}

/// A guard (see [`crate::guard`]) that turns the instance at `dir` off
/// and removes it when runq dies; `None` when it cannot fork (the next
/// runq still removes an instance whose owner is gone, [`remove_stale`]).
pub(crate) fn guard_instance(dir: &Path) -> Option<Guard> {
    Guard::spawn(vec![
        Undo::write(&dir.join("tracing_on"), b"0"),
        Undo::rmdir(dir),
    ])
    .ok()
}

/// A fresh name for a tracefs instance of this process, `runq-<pid>-<n>`
/// ([`remove_stale`] removes it once the process is gone).
pub(crate) fn instance_name() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("runq-{}-{n}", std::process::id())
}

/// Removes the instances of runq processes that are gone (killed before
/// they could remove their own), which would otherwise keep tracing.
pub(crate) fn remove_stale(instances: &Path) {
    for (dir, _) in stale_instances(instances) {
        remove_instance(&dir);
    }
}

/// The tracefs instances (`runq-<pid>-<n>` under `instances`) whose owner
/// process no longer exists, with the owner's pid.
pub fn stale_instances(instances: &Path) -> Vec<(PathBuf, u32)> {
    let Ok(dir) = fs::read_dir(instances) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid = owner_pid(&e.file_name().to_string_lossy())?;
            let gone = !Path::new(&format!("/proc/{pid}")).exists();
            gone.then(|| (e.path(), pid))
        })
        .collect()
}

/// Turns a tracefs instance off and removes it.
pub fn remove_instance(dir: &Path) {
    let _ = fs::write(dir.join("tracing_on"), "0");
    let _ = fs::remove_dir(dir);
}

/// The pid in an instance name `runq-<pid>-<n>`.
fn owner_pid(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix("runq-")?.split_once('-')?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Reads a `trace` file: its events, and the header's
/// `entries-in-buffer/entries-written: K/W`.
pub fn read_trace(input: impl BufRead) -> io::Result<Recording> {
    let mut rec = Recording::default();
    for line in input.lines() {
        let line = line?;
        if let Some(counts) = line.strip_prefix("# entries-in-buffer/entries-written: ") {
            let written = counts.split_whitespace().next().unwrap_or("");
            rec.written = written
                .split('/')
                .nth(1)
                .and_then(|w| w.parse().ok())
                .unwrap_or(0);
            continue;
        }
        if let Some(e) = parse_line(&line) {
            rec.events.push(e);
        }
    }
    rec.events.sort_by_key(SchedEvent::ts_ns);
    Ok(rec)
}

/// The time of each CPU's oldest event in `events` (sorted), for the
/// `cpus` given.
pub fn first_event_of(events: &[SchedEvent], cpus: &[u32]) -> std::collections::BTreeMap<u32, u64> {
    let mut first = std::collections::BTreeMap::new();
    for e in events {
        let cpu = match e {
            SchedEvent::Switch { cpu, .. } | SchedEvent::Wakeup { cpu, .. } => *cpu,
            SchedEvent::Migrate { .. } => continue,
        };
        if cpus.contains(&cpu) {
            first.entry(cpu).or_insert_with(|| e.ts_ns());
        }
    }
    first
}

/// The CPUs of the instance at `dir` whose buffer lost events
/// (`per_cpu/cpuN/stats`: `overrun` above 0).
fn overrun_cpus(dir: &Path) -> Vec<u32> {
    let Ok(list) = fs::read_dir(dir.join("per_cpu")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in list.flatten() {
        let name = e.file_name();
        let Some(cpu) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu")?.parse().ok())
        else {
            continue;
        };
        let stats = fs::read_to_string(e.path().join("stats")).unwrap_or_default();
        let overrun = stats
            .lines()
            .find_map(|l| l.strip_prefix("overrun:"))
            .and_then(|v| v.trim().parse::<u64>().ok());
        if overrun.is_some_and(|n| n > 0) {
            out.push(cpu);
        }
    }
    out
}

/// `tracing_cpumask`'s hex mask of `cpus` (32-bit words, comma-separated,
/// most significant first).
pub fn cpumask(cpus: &[u32]) -> String {
    let top = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; top as usize / 32 + 1];
    for &c in cpus {
        words[c as usize / 32] |= 1 << (c % 32);
    }
    let hex: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    hex.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_instances_are_named_by_their_owner() {
        assert_eq!(owner_pid("runq-123-0"), Some(123));
        assert_eq!(owner_pid("runq-123"), None);
        assert_eq!(owner_pid("other-123-0"), None);
    }

    #[test]
    fn masks_and_headers() {
        assert_eq!(cpumask(&[0, 1]), "00000003");
        assert_eq!(cpumask(&[33]), "00000002,00000000");
        let text = "# entries-in-buffer/entries-written: 2/2   #P:2\n\
            a-1 [000] d..2. 2.000001: sched_wakeup: comm=b pid=2 prio=120 target_cpu=000\n\
            a-1 [001] d..2. 1.000001: sched_wakeup: comm=b pid=2 prio=120 target_cpu=001\n";
        let rec = read_trace(text.as_bytes()).unwrap();
        assert_eq!(rec.written, 2);
        assert_eq!(rec.events.len(), 2);
        assert_eq!(rec.events[0].ts_ns(), 1_000_001_000, "sorted by time");
        let first = first_event_of(&rec.events, &[0, 1]);
        assert_eq!(first.get(&1), Some(&1_000_001_000));
        assert_eq!(first.get(&0), Some(&2_000_001_000));
    }

    /// As root: a recording sees this thread being switched and woken.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn records_switches_of_this_thread() {
        // A dead runq's instance (no pid is above 2^22) is removed.
        let root = crate::tracefs::find().expect("tracefs mounted as root");
        let stale = root.join("instances").join("runq-4194305-0");
        fs::create_dir(&stale).unwrap();
        let rec = Recorder::start(&[], 256).expect("tracefs instance as root");
        assert!(!stale.exists(), "the stale instance is removed");
        let dir = rec.dir().to_path_buf();
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let got = rec.stop().unwrap();
        assert!(!got.frozen, "nothing froze it");
        drop(rec);
        assert!(!dir.exists(), "the instance is removed");
        let me = i32::try_from(std::process::id()).unwrap();
        let tid = unsafe { libc::gettid() };
        let mine = got.events.iter().filter(|e| match e {
            SchedEvent::Switch { prev, .. } => prev.pid == tid || prev.pid == me,
            _ => false,
        });
        assert!(mine.count() >= 10, "{} events", got.events.len());
    }

    /// As root: `0` written through the trigger stops the recording there;
    /// the events after it are not kept, and the recording says so.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn the_trigger_freezes_the_recording() {
        use std::io::Write as _;
        let rec = Recorder::start(&[], 256).expect("tracefs instance as root");
        std::thread::sleep(std::time::Duration::from_millis(5));
        rec.trigger().unwrap().write_all(b"0").unwrap();
        let frozen_at = crate::clock::monotonic_ns();
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let got = rec.stop().unwrap();
        assert!(got.frozen);
        let last = got.events.last().map_or(0, SchedEvent::ts_ns);
        assert!(
            last <= frozen_at,
            "no event after the freeze: {last} > {frozen_at}"
        );
    }
}
