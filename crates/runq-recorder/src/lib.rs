//! runq's per-task recorder: `bpf/recorder.bpf.c` on the classic
//! tracepoints `sched/sched_switch`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task` and `sched_process_fork`, filtered in the kernel to
//! the threads [`Recorder::watch`] names (and those they clone), summing
//! per worker what the checks need in maps rather than streaming events.
//! Loaded with aya; the programs detach when the [`Recorder`] is dropped.

pub mod decode;

use aya::maps::{HashMap, MapData, PerCpuArray};
use aya::programs::TracePoint;
use aya::{Ebpf, EbpfLoader};
use runq_kernel::task_record::{class_of_group, Recorded, RUNQ_CLASS};

use decode::{RawCpuTask, RawHeld, RawMaps, RawPair, RawTask, RawWoke};

/// The compiled object, 8-byte aligned as the ELF parser wants.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/recorder.bpf.o"));

/// The object's bytes.
pub fn object() -> &'static [u8] {
    &OBJECT.0
}

/// The tracepoints the recorder attaches to, with their programs.
pub const TRACEPOINTS: [(&str, &str); 5] = [
    ("recorder_switch", "sched_switch"),
    ("recorder_wakeup", "sched_wakeup"),
    ("recorder_wakeup_new", "sched_wakeup_new"),
    ("recorder_migrate", "sched_migrate_task"),
    ("recorder_fork", "sched_process_fork"),
];

/// Why the recorder could not start or be read.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// This process may not load BPF programs.
    #[error("the recorder needs CAP_BPF and CAP_PERFMON to load its BPF programs: run as root")]
    NotPermitted,
    /// The object did not load (verifier, map creation).
    #[error("loading the recorder's BPF programs failed: {0}")]
    Load(String),
    /// tracefs is missing and could not be mounted.
    #[error(transparent)]
    Tracefs(#[from] runq_kernel::tracefs::TracefsError),
    /// A tracepoint could not be attached.
    #[error("attaching the recorder to the tracepoint sched/{tracepoint} failed: {reason} (is it in /sys/kernel/tracing/events/sched?)")]
    Attach {
        /// Which tracepoint.
        tracepoint: &'static str,
        /// Why.
        reason: String,
    },
    /// A map could not be read or written.
    #[error("the recorder's BPF map {map}: {reason}")]
    Map {
        /// Which map.
        map: &'static str,
        /// Why.
        reason: String,
    },
}

/// The loaded, attached programs.
pub struct Recorder {
    ebpf: Ebpf,
    watched: std::collections::HashSet<u32>,
}

impl Recorder {
    /// Loads the programs and attaches them (mounting tracefs first when
    /// it is not). Nothing is recorded until a thread is watched.
    pub fn start() -> Result<Recorder, RecorderError> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        Self::load_and_attach().map_err(|e| match e {
            RecorderError::Load(_) | RecorderError::Attach { .. } if !root => {
                RecorderError::NotPermitted
            }
            e => e,
        })
    }

    fn load_and_attach() -> Result<Recorder, RecorderError> {
        let mut ebpf = EbpfLoader::new()
            .load(object())
            .map_err(|e| RecorderError::Load(e.to_string()))?;
        runq_kernel::tracefs::ensure_mounted()?;
        for (prog, tracepoint) in TRACEPOINTS {
            let attach_err = |e: aya::programs::ProgramError| RecorderError::Attach {
                tracepoint,
                reason: e.to_string(),
            };
            let tp: &mut TracePoint = ebpf
                .program_mut(prog)
                .ok_or_else(|| RecorderError::Load(format!("no program {prog} in the object")))?
                .try_into()
                .map_err(attach_err)?;
            tp.load().map_err(attach_err)?;
            tp.attach("sched", tracepoint).map_err(attach_err)?;
        }
        Ok(Recorder {
            ebpf,
            watched: Default::default(),
        })
    }

    fn map_err(map: &'static str) -> impl Fn(aya::maps::MapError) -> RecorderError {
        move |e| RecorderError::Map {
            map,
            reason: e.to_string(),
        }
    }

    fn map(&self, name: &'static str) -> Result<&aya::maps::Map, RecorderError> {
        self.ebpf.map(name).ok_or(RecorderError::Map {
            map: name,
            reason: "not in the object".into(),
        })
    }

    /// Records thread `tid` as a worker of group `group` (and every thread or
    /// process it clones from now on, under it). Watching it again keeps
    /// what was recorded.
    pub fn watch(&mut self, tid: u32, group: usize) -> Result<(), RecorderError> {
        if !self.watched.insert(tid) {
            return Ok(());
        }
        self.insert(tid, class_of_group(group))
    }

    /// Marks this process's threads as runq's own (and every thread or
    /// process they start from now on, a worker until [`Recorder::watch`]
    /// names it): the time they hold a worker's CPU is runq's, not load
    /// outside the run. They get no record of their own.
    pub fn watch_own_threads(&mut self) -> Result<(), RecorderError> {
        let own = std::fs::read_dir("/proc/self/task").map_err(|e| RecorderError::Map {
            map: "TASKS",
            reason: format!("listing /proc/self/task: {e}"),
        })?;
        for tid in own
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
        {
            self.insert(tid, RUNQ_CLASS)?;
        }
        Ok(())
    }

    /// Puts thread `tid` in TASKS with class `cls`, afresh.
    fn insert(&mut self, tid: u32, cls: u32) -> Result<(), RecorderError> {
        let map = self.ebpf.map_mut("TASKS").ok_or(RecorderError::Map {
            map: "TASKS",
            reason: "not in the object".into(),
        })?;
        let mut tasks: HashMap<_, u32, RawTask> =
            HashMap::try_from(map).map_err(Self::map_err("TASKS"))?;
        let fresh = RawTask {
            worker: tid,
            cls,
            ..RawTask::default()
        };
        tasks.insert(tid, fresh, 0).map_err(Self::map_err("TASKS"))
    }

    /// Reads every map and sums them per worker.
    pub fn read(&self) -> Result<Recorded, RecorderError> {
        let tasks: HashMap<&MapData, u32, RawTask> =
            HashMap::try_from(self.map("TASKS")?).map_err(Self::map_err("TASKS"))?;
        fn all<K: aya::Pod, V: aya::Pod>(
            m: &HashMap<&MapData, K, V>,
            name: &'static str,
        ) -> Result<Vec<(K, V)>, RecorderError> {
            m.iter()
                .collect::<Result<_, _>>()
                .map_err(Recorder::map_err(name))
        }
        let held: HashMap<&MapData, RawCpuTask, RawHeld> =
            HashMap::try_from(self.map("HELD")?).map_err(Self::map_err("HELD"))?;
        let wakers: HashMap<&MapData, RawPair, RawWoke> =
            HashMap::try_from(self.map("WAKERS")?).map_err(Self::map_err("WAKERS"))?;
        let lost: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(self.map("LOST")?).map_err(Self::map_err("LOST"))?;
        let mut sums = [0u64; 2];
        for (i, sum) in sums.iter_mut().enumerate() {
            let per_cpu = lost.get(&(i as u32), 0).map_err(Self::map_err("LOST"))?;
            *sum = per_cpu.iter().sum();
        }
        let raw = RawMaps {
            tasks: tasks
                .iter()
                .collect::<Result<_, _>>()
                .map_err(Self::map_err("TASKS"))?,
            held: all(&held, "HELD")?,
            wakers: all(&wakers, "WAKERS")?,
            lost: sums,
        };
        Ok(decode::aggregate(&raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The committed object must be built from the committed source.
    #[test]
    fn the_object_is_built_from_the_current_source() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf");
        let src = std::fs::read(dir.join("recorder.bpf.c")).unwrap();
        let recorded = std::fs::read_to_string(dir.join("recorder.bpf.c.sha256")).unwrap();
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum (coreutils)");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &src).unwrap();
        let out = child.wait_with_output().unwrap();
        let hash = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            recorded.trim(),
            hash.split_whitespace().next().unwrap_or(""),
            "bpf/recorder.bpf.o is stale: run crates/runq-recorder/bpf/build.sh (needs clang, libbpf-dev)"
        );
        assert!(object().starts_with(b"\x7fELF"));
    }

    fn spin(d: Duration) {
        let t = Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    /// As root: two threads pinned to one CPU, one at nice 19: the
    /// recorder names the other as the holder of its CPU, and a thread
    /// the watched one spawns is summed under it.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn names_the_thread_that_held_a_watched_threads_cpu() {
        let mut rec = Recorder::start().expect("the recorder starts as root");
        let pin = || {
            // SAFETY: a zeroed cpu_set_t is valid; CPU 0 exists.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
            }
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let hog = std::thread::spawn(move || {
            pin();
            tx.send(runq_kernel::clock::gettid()).unwrap();
            spin(Duration::from_millis(600));
        });
        let hog_tid = rx.recv().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let low = std::thread::spawn(move || {
            pin();
            // SAFETY: setpriority on this thread.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
            tx.send(runq_kernel::clock::gettid()).unwrap();
            go_rx.recv().unwrap();
            std::thread::spawn(|| spin(Duration::from_millis(100)))
                .join()
                .unwrap();
            spin(Duration::from_millis(300));
        });
        let low_tid = rx.recv().unwrap();
        rec.watch(low_tid, 0).unwrap();
        go_tx.send(()).unwrap();
        low.join().unwrap();
        hog.join().unwrap();
        let r = rec.read().unwrap();
        let w = r.worker(low_tid).expect("the watched thread is recorded");
        assert_eq!(w.tids.len(), 2, "{w:?}");
        assert!(w.run_ns > 0 && w.wait_ns > 0, "{w:?}");
        assert!(
            w.holders.iter().any(|h| h.pid == hog_tid && h.class == 0),
            "{w:?}"
        );
        assert!(w.held_by_class[0] > 0, "{w:?}");
    }
}
