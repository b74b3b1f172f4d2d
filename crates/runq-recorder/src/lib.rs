//! runq's per-task recorder: `bpf/recorder.bpf.c` on the tracepoints
//! `sched/sched_switch`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task` and `sched_process_fork`, filtered in the kernel to
//! the threads [`Recorder::watch`] names (and those they clone), summing
//! per worker what the checks need in maps rather than streaming events.
//! The BTF tracepoints (`tp_btf`) are used where the kernel has BTF (they
//! cost less on every switch), the classic ones elsewhere. Loaded with aya; the programs
//! detach when the [`Recorder`] is dropped.

pub mod decode;
pub mod fidelity;
mod layout;
pub mod sampled;
mod slots;

use aya::maps::{HashMap, MapData, PerCpuArray};
use aya::programs::{BtfTracePoint, TracePoint};
use aya::{Btf, Ebpf, EbpfLoader};
use runq_kernel::task_record::{class_of_group, Recorded, RUNQ_CLASS};
use runq_kernel::tracefs::Tracefs;

use decode::{RawCpuTask, RawHeld, RawMaps, RawOther, RawPair, RawWoke};

/// The compiled object, 8-byte aligned as the ELF parser wants.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/recorder.bpf.o"));

static BTF_OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/recorder-btf.bpf.o"));

/// The kernel's own BTF, which the BTF object's field reads are placed by.
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The tracepoints the recorder runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracepoints {
    /// BTF tracepoints (`tp_btf`, `recorder-btf.bpf.o`): no trace record
    /// is built per event and task fields are read directly; needs the
    /// kernel's BTF and Linux 5.18 or later.
    Btf,
    /// Classic tracepoints (`recorder.bpf.o`): any kernel with tracefs.
    Classic,
}

/// The environment variable that picks the tracepoints (`btf` or
/// `classic`) instead of the default choice: to compare their costs, or
/// to step around a kernel whose BTF tracepoints misbehave.
pub const TRACEPOINTS_ENV: &str = "RUNQ_RECORDER_TRACEPOINTS";

impl Tracepoints {
    /// The tracepoints [`TRACEPOINTS_ENV`] asks for, if it is set (and
    /// not empty).
    pub fn from_env() -> Result<Option<Tracepoints>, RecorderError> {
        match std::env::var(TRACEPOINTS_ENV) {
            Ok(v) if !v.is_empty() => Self::parse(&v).map(Some),
            _ => Ok(None),
        }
    }

    /// `btf` or `classic`.
    fn parse(value: &str) -> Result<Tracepoints, RecorderError> {
        [Tracepoints::Btf, Tracepoints::Classic]
            .into_iter()
            .find(|t| t.name() == value)
            .ok_or_else(|| {
                RecorderError::Setting(format!(
                    "{TRACEPOINTS_ENV}={value:?} is not a kind of tracepoint: use btf or classic, or unset it"
                ))
            })
    }

    /// Their name in `RUNQ_RECORDER_TRACEPOINTS` and in log lines.
    pub fn name(self) -> &'static str {
        match self {
            Tracepoints::Btf => "btf",
            Tracepoints::Classic => "classic",
        }
    }

    /// The object built for these tracepoints.
    pub fn object(self) -> &'static [u8] {
        match self {
            Tracepoints::Btf => &BTF_OBJECT.0,
            Tracepoints::Classic => &OBJECT.0,
        }
    }
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
    /// An environment setting of the recorder's is wrong.
    #[error("{0}")]
    Setting(String),
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

/// An attach error of `tracepoint`'s program.
fn attach_error(tracepoint: &'static str) -> impl Fn(aya::programs::ProgramError) -> RecorderError {
    move |e| RecorderError::Attach {
        tracepoint,
        reason: e.to_string(),
    }
}

/// The loaded, attached programs.
pub struct Recorder {
    ebpf: Ebpf,
    slots: slots::Slots,
    tracepoints: Tracepoints,
    watched: std::collections::HashSet<u32>,
    state: fidelity::FidelityState,
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

    /// The tracepoints [`TRACEPOINTS_ENV`] names, or by default the BTF
    /// ones where the kernel has BTF and they load, the classic ones
    /// otherwise.
    fn load_and_attach() -> Result<Recorder, RecorderError> {
        match Tracepoints::from_env()? {
            Some(only) => Self::start_on(only),
            None => Self::start_on(Tracepoints::Btf).or_else(|e| {
                log::info!(
                    "recorder: the BTF tracepoints did not load ({e}); using the classic ones"
                );
                Self::start_on(Tracepoints::Classic)
            }),
        }
    }

    /// Loads and attaches the programs on `tracepoints`.
    fn start_on(tracepoints: Tracepoints) -> Result<Recorder, RecorderError> {
        let ebpf = match tracepoints {
            Tracepoints::Btf => Self::attach_btf(),
            Tracepoints::Classic => Self::attach_classic(),
        }?;
        Ok(Recorder {
            slots: slots::Slots::map(&ebpf)?,
            ebpf,
            tracepoints,
            watched: Default::default(),
            state: Default::default(),
        })
    }

    /// Loads the BTF object (its reads of task fields placed by the
    /// kernel's BTF) and attaches each program to its BTF tracepoint.
    fn attach_btf() -> Result<Ebpf, RecorderError> {
        if !std::path::Path::new(KERNEL_BTF).exists() {
            return Err(RecorderError::Load(format!("no {KERNEL_BTF}")));
        }
        let btf =
            Btf::from_sys_fs().map_err(|e| RecorderError::Load(format!("{KERNEL_BTF}: {e}")))?;
        let mut ebpf = Self::load(Tracepoints::Btf, Some(&btf))?;
        for (prog, tracepoint) in TRACEPOINTS {
            let tp: &mut BtfTracePoint = Self::program(&mut ebpf, prog, tracepoint)?;
            tp.load(tracepoint, &btf)
                .map_err(attach_error(tracepoint))?;
            tp.attach().map_err(attach_error(tracepoint))?;
        }
        Ok(ebpf)
    }

    /// Loads the classic object and attaches each program to its
    /// tracepoint (mounting tracefs first when it is not).
    fn attach_classic() -> Result<Ebpf, RecorderError> {
        let mut ebpf = Self::load(Tracepoints::Classic, None)?;
        let tracefs = match runq_kernel::tracefs::ensure_mounted()? {
            Tracefs::Mounted(p) | Tracefs::MountedNow(p) => p,
        };
        for (prog, tracepoint) in TRACEPOINTS {
            let prog = layout::classic_program(prog, tracepoint, &tracefs)
                .map_err(|reason| RecorderError::Attach { tracepoint, reason })?;
            let tp: &mut TracePoint = Self::program(&mut ebpf, prog, tracepoint)?;
            tp.load().map_err(attach_error(tracepoint))?;
            tp.attach("sched", tracepoint)
                .map_err(attach_error(tracepoint))?;
        }
        Ok(ebpf)
    }

    /// Loads `tracepoints`' object, its CO-RE reads placed by `btf`.
    fn load(tracepoints: Tracepoints, btf: Option<&Btf>) -> Result<Ebpf, RecorderError> {
        EbpfLoader::new()
            .btf(btf)
            .load(tracepoints.object())
            .map_err(|e| RecorderError::Load(e.to_string()))
    }

    /// Program `prog` of `ebpf`, as the kind `P` of its tracepoint.
    fn program<'a, P>(
        ebpf: &'a mut Ebpf,
        prog: &str,
        tracepoint: &'static str,
    ) -> Result<&'a mut P, RecorderError>
    where
        &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
    {
        ebpf.program_mut(prog)
            .ok_or_else(|| RecorderError::Load(format!("no program {prog} in the object")))?
            .try_into()
            .map_err(attach_error(tracepoint))
    }

    /// The tracepoints this recorder runs on.
    pub fn tracepoints(&self) -> Tracepoints {
        self.tracepoints
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

    /// Watches thread `tid` with class `cls`, afresh.
    fn insert(&mut self, tid: u32, cls: u32) -> Result<(), RecorderError> {
        self.slots.watch(&mut self.ebpf, tid, cls)
    }

    /// Reads every map and sums them per worker.
    pub fn read(&self) -> Result<Recorded, RecorderError> {
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
        let other: PerCpuArray<&MapData, RawOther> =
            PerCpuArray::try_from(self.map("OTHER")?).map_err(Self::map_err("OTHER"))?;
        let other = other.get(&0, 0).map_err(Self::map_err("OTHER"))?;
        let raw = RawMaps {
            tasks: self.slots.tasks(),
            held: all(&held, "HELD")?,
            wakers: all(&wakers, "WAKERS")?,
            other: (0..).zip(other.iter().copied()).collect(),
            lost: sums,
        };
        let mut rec = decode::aggregate(&raw);
        rec.fidelity = self.fidelity_at_end();
        if let Some(hz) = rec.fidelity.as_ref().and_then(|f| f.sample_hz) {
            let samples: HashMap<&MapData, RawCpuTask, RawHeld> =
                HashMap::try_from(self.map("SAMPLES")?).map_err(Self::map_err("SAMPLES"))?;
            let samples = all(&samples, "SAMPLES")?;
            rec.bytes_read +=
                (samples.len() * (size_of::<RawCpuTask>() + size_of::<RawHeld>())) as u64;
            let ctx = sampled::SampleContext {
                tasks: &raw.tasks,
                allowed: self.state.allowed.clone(),
                now_ns: runq_kernel::clock::monotonic_ns(),
                switched_ns: self.state.switched_ns,
                period_ns: 1_000_000_000 / hz.max(1),
            };
            sampled::attribute(&mut rec, &samples, &ctx);
        }
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The committed objects must be built from the committed source and
    /// the tracepoint records it includes (runq-kernel's
    /// `bpf/tracepoints.h`): build.sh records the hash of the two together.
    #[test]
    fn the_object_is_built_from_the_current_source() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf");
        let mut src = std::fs::read(dir.join("recorder.bpf.c")).unwrap();
        src.extend(std::fs::read(dir.join("../../runq-kernel/bpf/tracepoints.h")).unwrap());
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
        for t in [Tracepoints::Btf, Tracepoints::Classic] {
            assert!(t.object().starts_with(b"\x7fELF"), "{t:?}");
        }
    }

    fn spin(d: Duration) {
        let t = Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn the_tracepoints_variable_takes_btf_or_classic_and_names_a_bad_value() {
        assert_eq!(Tracepoints::parse("btf").unwrap(), Tracepoints::Btf);
        assert_eq!(Tracepoints::parse("classic").unwrap(), Tracepoints::Classic);
        let e = Tracepoints::parse("raw").unwrap_err().to_string();
        assert!(
            e.contains("RUNQ_RECORDER_TRACEPOINTS=\"raw\"") && e.contains("btf or classic"),
            "{e}"
        );
    }

    /// As root: the BTF tracepoints are taken where the kernel has BTF.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn the_btf_tracepoints_are_taken_where_the_kernel_has_btf() {
        let rec = Recorder::start().expect("the recorder starts as root");
        if std::path::Path::new(KERNEL_BTF).exists() {
            assert_eq!(rec.tracepoints(), Tracepoints::Btf);
        } else {
            assert_eq!(rec.tracepoints(), Tracepoints::Classic);
        }
    }

    /// As root, on the BTF tracepoints (where the kernel has BTF) and on
    /// the classic ones: see [`names_the_holder_on`].
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn names_the_thread_that_held_a_watched_threads_cpu() {
        if std::path::Path::new(KERNEL_BTF).exists() {
            names_the_holder_on(Tracepoints::Btf);
        }
        names_the_holder_on(Tracepoints::Classic);
    }

    /// Two threads pinned to one CPU, one at nice 19: the recorder names
    /// the other as the holder of its CPU, the thread that woke it and the
    /// CPU it waited on, and a thread the watched one spawns is summed
    /// under it.
    fn names_the_holder_on(tracepoints: Tracepoints) {
        let mut rec = Recorder::start_on(tracepoints).expect("the recorder starts as root");
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
        let me = runq_kernel::clock::gettid();
        rec.watch(low_tid, 0).unwrap();
        // Send once it sleeps in recv, so that this thread's send wakes it.
        let stat = format!("/proc/self/task/{low_tid}/stat");
        let t = Instant::now();
        while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") S "))
            && t.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        go_tx.send(()).unwrap();
        low.join().unwrap();
        hog.join().unwrap();
        let r = rec.read().unwrap();
        let w = r.worker(low_tid).expect("the watched thread is recorded");
        assert_eq!(w.tids.len(), 2, "{tracepoints:?}: {w:?}");
        assert!(w.run_ns > 0 && w.wait_ns > 0, "{tracepoints:?}: {w:?}");
        assert!(
            w.holders.iter().any(|h| h.pid == hog_tid && h.class == 0),
            "{tracepoints:?}: {w:?}"
        );
        assert!(w.held_by_class[0] > 0, "{tracepoints:?}: {w:?}");
        // Woken by this thread's send, on CPU 0's queue (where it waited).
        assert!(
            w.wakeups >= 1 && w.wakers.iter().any(|k| k.pid == me),
            "{tracepoints:?}: {w:?}"
        );
        assert_eq!(w.wait_cpus, [0], "{tracepoints:?}: {w:?}");
    }
}
