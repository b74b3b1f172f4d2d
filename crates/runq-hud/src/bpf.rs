//! The BPF side: the committed object (built from bpf/hud.bpf.c by
//! bpf/build.sh), loaded and attached with aya, the worker filter map, and
//! the ring buffer of events.

use aya::maps::{Array, HashMap, MapData, RingBuf};
use aya::programs::perf_event::{perf_sw_ids, PerfEventScope, PerfTypeId, SamplePolicy};
use aya::programs::{PerfEvent, TracePoint, UProbe};
use aya::{Ebpf, EbpfError, EbpfLoader};

use crate::event::config_slot::{
    CFG_COPY_MODE, CFG_EXACT_POLLS, CFG_TARGET_TGID, CFG_TASK_TLS, CFG_THRESHOLD_NS,
};
use crate::event::counter_slot::{CNT_COPIED, CNT_LOST, CNT_NO_RQ_COPY, CNT_POLLS_UNTIMED};
use crate::event::{decode, RawEvent, MAX_FRAMES};
use crate::health::StackSource;
use crate::polls::Site;

/// The compiled object, 8-byte aligned as the ELF parser wants.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

/// Bytes of the C side's `struct offcpu`, an OFFCPU value: eight u64s,
/// a `struct holder` (two u32s and a 16-byte name), a `struct
/// sleep_call` (four 32-bit fields) and the frame-pointer stack.
const OFFCPU_VALUE: usize = 8 * 8 + 24 + 16 + 8 * MAX_FRAMES;

/// Bytes of the C side's `struct stack_copy`, an RQCOPY value: three
/// registers, two u32s and `COPY_ROOM` bytes of stack (nine pages and one
/// more).
const STACK_COPY_VALUE: usize = 3 * 8 + 2 * 4 + 4096 * 10;

static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/hud.bpf.o"));

/// The object's bytes.
pub fn object() -> &'static [u8] {
    &OBJECT.0
}

/// Failures while loading or attaching, with the feature that is missing.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// tracefs is missing and could not be mounted.
    #[error(transparent)]
    Tracefs(#[from] runq_kernel::tracefs::TracefsError),
    /// The object did not load (verifier, BTF, map creation).
    #[error("loading the BPF programs failed: {0} (needs a kernel with BPF ring buffers, 5.8+)")]
    Load(String),
    /// A tracepoint or perf event could not be attached.
    #[error("attaching {what} failed: {reason}")]
    Attach {
        /// Which program.
        what: String,
        /// Why.
        reason: String,
    },
}

/// Loaded and attached programs.
pub struct Probe {
    ebpf: Ebpf,
    events: RingBuf<MapData>,
}

fn attach_err(what: &str) -> impl Fn(aya::programs::ProgramError) -> BpfError + '_ {
    move |e| BpfError::Attach {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

/// Loads an eBPF object, parsing the kernel's BTF once: aya 0.13's
/// `Ebpf::load` parses `/sys/kernel/btf/vmlinux` twice (its loader's
/// constructor parses it, then it passes a second parse), about 0.2 s of
/// CPU each in a release build and 0.4 s in a debug one.
pub(crate) fn load_object(object: &[u8]) -> Result<Ebpf, EbpfError> {
    EbpfLoader::new().load(object)
}

fn load_err(e: impl std::fmt::Display) -> BpfError {
    BpfError::Load(e.to_string())
}

/// Loads and attaches one classic tracepoint program.
fn attach_tracepoint(
    ebpf: &mut Ebpf,
    prog: &str,
    category: &str,
    name: &str,
) -> Result<(), BpfError> {
    let tp: &mut TracePoint = ebpf
        .program_mut(prog)
        .ok_or_else(|| BpfError::Load(format!("no program {prog}")))?
        .try_into()
        .map_err(attach_err(name))?;
    tp.load().map_err(attach_err(name))?;
    tp.attach(category, name).map_err(attach_err(name))?;
    Ok(())
}

impl Probe {
    /// Loads the programs, sets the threshold and stack mode, attaches the
    /// tracepoints (mounting tracefs first if needed; in DWARF mode also
    /// raw_syscalls/sys_exit, where over-threshold sleeps copy their stack) and a cpu-clock
    /// sampler at `frequency` Hz on every online CPU. A thread of
    /// `target_pid` that holds a waiting worker's CPU has its stack sent.
    pub fn attach(
        target_pid: u32,
        threshold_ns: u64,
        frequency: u64,
        source: StackSource,
    ) -> Result<Self, BpfError> {
        runq_kernel::tracefs::ensure_mounted()?;
        let mut ebpf = load_object(object()).map_err(load_err)?;
        {
            let map = ebpf
                .map_mut("CONFIG")
                .ok_or_else(|| BpfError::Load("no CONFIG map".into()))?;
            let mut config: Array<_, u64> = Array::try_from(map).map_err(load_err)?;
            config
                .set(CFG_THRESHOLD_NS, threshold_ns, 0)
                .map_err(load_err)?;
            config
                .set(CFG_COPY_MODE, u64::from(source == StackSource::Dwarf), 0)
                .map_err(load_err)?;
            config
                .set(CFG_TARGET_TGID, u64::from(target_pid), 0)
                .map_err(load_err)?;
        }
        attach_tracepoint(&mut ebpf, "hud_sched_switch", "sched", "sched_switch")?;
        attach_tracepoint(&mut ebpf, "hud_sched_wakeup", "sched", "sched_wakeup")?;
        if source == StackSource::Dwarf {
            attach_tracepoint(&mut ebpf, "hud_sys_exit", "raw_syscalls", "sys_exit")?;
        }
        let sampler: &mut PerfEvent = ebpf
            .program_mut("hud_sample")
            .ok_or_else(|| BpfError::Load("no program hud_sample".into()))?
            .try_into()
            .map_err(attach_err("cpu-clock sampler"))?;
        sampler.load().map_err(attach_err("cpu-clock sampler"))?;
        let cpus = aya::util::online_cpus().map_err(|(what, e)| BpfError::Attach {
            what: "cpu-clock sampler".into(),
            reason: format!("{what}: {e}"),
        })?;
        for cpu in cpus {
            sampler
                .attach(
                    PerfTypeId::Software,
                    perf_sw_ids::PERF_COUNT_SW_CPU_CLOCK as u64,
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Frequency(frequency),
                    false,
                )
                .map_err(attach_err("cpu-clock sampler"))?;
        }
        let ring = ebpf
            .take_map("EVENTS")
            .ok_or_else(|| BpfError::Load("no EVENTS map".into()))?;
        let events = RingBuf::try_from(ring).map_err(|e| BpfError::Load(e.to_string()))?;
        Ok(Probe { ebpf, events })
    }

    /// Exact polls: attaches the poll uprobes (entry and return) to every
    /// instance of Tokio's task poll at `sites` in `exe`, for process
    /// `pid` only. The scheduler programs then count each worker's time
    /// off CPU, which a poll's time on CPU leaves out.
    pub fn time_polls(
        &mut self,
        exe: &std::path::Path,
        sites: &[Site],
        pid: u32,
    ) -> Result<(), BpfError> {
        let what = "the poll uprobes (--exact-polls)";
        // Off-CPU time is counted before the first poll is timed.
        let map = self
            .ebpf
            .map_mut("CONFIG")
            .ok_or_else(|| BpfError::Load("no CONFIG map".into()))?;
        let mut config: Array<_, u64> = Array::try_from(map).map_err(load_err)?;
        config.set(CFG_EXACT_POLLS, 1, 0).map_err(load_err)?;
        // Returns first: a poll entered before its return is probed would
        // stay open for ever.
        for prog in ["hud_poll_exit", "hud_poll_enter"] {
            let probe: &mut UProbe = self
                .ebpf
                .program_mut(prog)
                .ok_or_else(|| BpfError::Load(format!("no program {prog}")))?
                .try_into()
                .map_err(attach_err(what))?;
            probe.load().map_err(attach_err(what))?;
            for site in sites {
                probe
                    .attach(None, site.file_offset, exe, Some(pid as libc::pid_t))
                    .map_err(attach_err(what))?;
            }
        }
        Ok(())
    }

    /// Task ids: attaches the uprobe that keeps each watched thread's
    /// current Tokio task to every instance of Tokio's
    /// `set_current_task_id` at `offsets` in `exe`, for process `pid` only;
    /// events then carry the task being polled.
    pub fn track_tasks(
        &mut self,
        exe: &std::path::Path,
        offsets: &[u64],
        pid: u32,
    ) -> Result<(), BpfError> {
        let what = "the task-id uprobe";
        let probe: &mut UProbe = self
            .ebpf
            .program_mut("hud_task_id")
            .ok_or_else(|| BpfError::Load("no program hud_task_id".into()))?
            .try_into()
            .map_err(attach_err(what))?;
        probe.load().map_err(attach_err(what))?;
        for offset in offsets {
            probe
                .attach(None, *offset, exe, Some(pid as libc::pid_t))
                .map_err(attach_err(what))?;
        }
        Ok(())
    }

    /// Task ids: the programs read each worker's current Tokio task id
    /// from its thread-local storage, `tp_offset` bytes from its thread
    /// pointer.
    pub fn read_task_ids(&mut self, tp_offset: i64) -> Result<(), BpfError> {
        let map = self
            .ebpf
            .map_mut("CONFIG")
            .ok_or_else(|| BpfError::Load("no CONFIG map".into()))?;
        let mut config: Array<_, u64> = Array::try_from(map).map_err(load_err)?;
        config
            .set(CFG_TASK_TLS, tp_offset as u64, 0)
            .map_err(load_err)
    }

    /// Adds threads to the in-kernel filter. What the programs kept of
    /// a thread from an earlier watch (a switch-out, a preempted stack)
    /// is forgotten first: its next switch-in would otherwise measure a
    /// wait or a sleep from a moment the probe did not follow.
    pub fn watch(&mut self, tids: &[u32]) -> Result<(), BpfError> {
        self.forget(tids)?;
        let map = self
            .ebpf
            .map_mut("WORKERS")
            .ok_or_else(|| BpfError::Load("no WORKERS map".into()))?;
        let mut workers: HashMap<_, u32, u8> =
            HashMap::try_from(map).map_err(|e| BpfError::Load(e.to_string()))?;
        for tid in tids {
            workers
                .insert(tid, 1, 0)
                .map_err(|e| BpfError::Load(e.to_string()))?;
        }
        Ok(())
    }

    /// Removes threads from the in-kernel filter, and what the programs
    /// kept of them (an unwatched thread's switch-in is never seen, so its
    /// last switch-out would stay in the maps).
    pub fn unwatch(&mut self, tids: &[u32]) -> Result<(), BpfError> {
        let map = self
            .ebpf
            .map_mut("WORKERS")
            .ok_or_else(|| BpfError::Load("no WORKERS map".into()))?;
        let mut workers: HashMap<_, u32, u8> = HashMap::try_from(map).map_err(load_err)?;
        for tid in tids {
            // A thread that already left the map is fine.
            let _ = workers.remove(tid);
        }
        self.forget(tids)
    }

    /// Deletes the per-thread state of `tids`: the switch-out each one's
    /// next switch-in is measured from (OFFCPU), the stack kept at a
    /// preemption (RQCOPY, whose few entries a thread no longer watched
    /// would otherwise hold for good), its current task (TASKS, which
    /// the uprobe updates only while it is watched), its switch count
    /// (SWITCHES) and exact polls' state (OFFNS, POLLS): no entry is left
    /// for a thread that exited.
    fn forget(&mut self, tids: &[u32]) -> Result<(), BpfError> {
        self.remove_from::<OFFCPU_VALUE>("OFFCPU", tids)?;
        self.remove_from::<8>("TASKS", tids)?;
        self.remove_from::<8>("SWITCHES", tids)?;
        self.remove_from::<{ 3 * 8 }>("OFFNS", tids)?;
        self.remove_from::<{ 9 * 8 }>("POLLS", tids)?;
        self.remove_from::<STACK_COPY_VALUE>("RQCOPY", tids)
    }

    /// Removes `tids` from the hash map `name`, whose values are `N`
    /// bytes (checked against the map's own value size on opening).
    fn remove_from<const N: usize>(&mut self, name: &str, tids: &[u32]) -> Result<(), BpfError> {
        let map = self
            .ebpf
            .map_mut(name)
            .ok_or_else(|| BpfError::Load(format!("no {name} map")))?;
        let mut entries: HashMap<_, u32, [u8; N]> =
            HashMap::try_from(map).map_err(|e| BpfError::Load(format!("{name}: {e}")))?;
        for tid in tids {
            // Most threads have no entry: nothing to forget.
            let _ = entries.remove(tid);
        }
        Ok(())
    }

    /// Every event waiting in the ring buffer.
    pub fn drain(&mut self) -> Vec<RawEvent> {
        let mut out = Vec::new();
        while let Some(item) = self.events.next() {
            if let Some(ev) = decode(&item) {
                out.push(ev);
            }
        }
        out
    }

    fn counter(&mut self, slot: u32) -> u64 {
        self.ebpf
            .map_mut("COUNTERS")
            .and_then(|m| Array::<_, u64>::try_from(m).ok())
            .and_then(|a| a.get(&slot, 0).ok())
            .unwrap_or(0)
    }

    /// Events the kernel could not queue (ring buffer full).
    pub fn lost_events(&mut self) -> u64 {
        self.counter(CNT_LOST)
    }

    /// Bytes of user stack the kernel copied (copy mode).
    pub fn bytes_copied(&mut self) -> u64 {
        self.counter(CNT_COPIED)
    }

    /// Exact polls: long polls left out because the scheduler tracepoints
    /// missed some of their context switches (their time off CPU is not
    /// known).
    pub fn polls_untimed(&mut self) -> u64 {
        self.counter(CNT_POLLS_UNTIMED)
    }

    /// Preemptions whose stack could not be kept for a run-queue wait
    /// (copy mode; those waits carry the frame-pointer stack).
    pub fn preemptions_not_kept(&mut self) -> u64 {
        self.counter(CNT_NO_RQ_COPY)
    }
}

#[cfg(test)]
mod tests {
    use runq_kernel::clock::{gettid, monotonic_ns};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::health::StackSource;

    /// The committed objects must be built from the committed sources and
    /// the tracepoint records they include (runq-kernel's
    /// `bpf/tracepoints.h`): build.sh records the hash of the two together.
    #[test]
    fn objects_are_built_from_the_current_sources() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf");
        let shared = dir.join("../../runq-kernel/bpf/tracepoints.h");
        let shared = std::fs::read(shared).unwrap();
        for (name, object) in [("hud", object()), ("runqwait", crate::hostwait::object())] {
            let mut src = std::fs::read(dir.join(format!("{name}.bpf.c"))).unwrap();
            src.extend_from_slice(&shared);
            let recorded = std::fs::read_to_string(dir.join(format!("{name}.bpf.c.sha256")));
            assert_eq!(
                recorded.unwrap().trim(),
                sha256_hex(&src),
                "bpf/{name}.bpf.o is stale: run crates/runq-hud/bpf/build.sh (needs clang, libbpf-dev)"
            );
            assert!(
                object.starts_with(b"\x7fELF"),
                "bpf/{name}.bpf.o is not an ELF object"
            );
        }
    }

    /// sha256 via the system's sha256sum (coreutils), to avoid a crate.
    fn sha256_hex(data: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum (coreutils)");
        child.stdin.take().unwrap().write_all(data).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string()
    }
    #[test]
    fn map_value_sizes_follow_the_c_source() {
        let src = include_str!("../bpf/hud.bpf.c");
        for line in [
            "#define MAX_FRAMES 127",
            "#define COPY_PAGES 8",
            "#define COPY_MAX (4096 * (COPY_PAGES + 1))",
            "#define COPY_ROOM (COPY_MAX + 4096)",
        ] {
            assert!(src.contains(line), "the C source no longer has {line:?}");
        }
        assert_eq!(OFFCPU_VALUE, 1120);
        assert_eq!(STACK_COPY_VALUE, 32 + 4096 * 10);
    }

    /// A thread watched, left mid-sleep, and watched again: its first
    /// switch-in after the second watch must not measure a sleep or a
    /// wait from the switch-out the first watch saw.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn a_thread_watched_again_measures_nothing_from_before() {
        let mut probe = Probe::attach(
            std::process::id(),
            20_000_000,
            1,
            StackSource::FramePointers,
        )
        .expect("attach");
        let (tid_tx, tid_rx) = mpsc::channel();
        let (start_tx, start_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            start_rx.recv().unwrap();
            // Leaves the CPU while watched: the probe keeps this switch-out.
            std::thread::sleep(Duration::from_millis(150));
            go_rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        probe.watch(&[tid]).unwrap();
        start_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        probe.unwatch(&[tid]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let rewatched = monotonic_ns();
        probe.watch(&[tid]).unwrap();
        go_tx.send(()).unwrap();
        sleeper.join().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let stale: Vec<_> = probe
            .drain()
            .into_iter()
            .filter(|e| e.tid == tid && e.start_ns < rewatched)
            .map(|e| (e.kind, e.duration_ns / 1_000_000))
            .collect();
        assert!(
            stale.is_empty(),
            "intervals from before the watch: {stale:?}"
        );
    }
}
