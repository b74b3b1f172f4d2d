//! sched_ext's debug dump (kernels 6.12+): on `SysRq-D` the kernel walks
//! each CPU's run queue under its lock and writes, line by line, to the
//! `sched_ext_dump` trace event: per CPU `CPU N : nr_run=...`, then each
//! runnable task under the BPF scheduler with how long it has been
//! runnable and the dispatch queue (DSQ) it sits on. runq reads it from a
//! tracefs instance of its own, so the dispatch queues' depths can be
//! sampled on kernels that expose no counter for them.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

mod stream;

pub use stream::{DumpBlock, DumpStream};

/// The id of the global DSQ (`SCX_DSQ_GLOBAL`).
pub const DSQ_GLOBAL: u64 = (1 << 63) | 1;
/// The id of every CPU's local DSQ (`SCX_DSQ_LOCAL`).
pub const DSQ_LOCAL: u64 = (1 << 63) | 2;

/// One runnable task in a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpTask {
    /// The CPU whose run queue lists it.
    pub cpu: u32,
    /// Its pid.
    pub pid: i64,
    /// Its command name.
    pub comm: String,
    /// Whether it was the CPU's current task (`*`).
    pub running: bool,
    /// How long it had been runnable, ms.
    pub runnable_ms: u64,
    /// The DSQ it sat on; `None` (`(n/a)`) for one on no DSQ: running,
    /// or held in the BPF scheduler's own structures.
    pub dsq: Option<u64>,
}

/// One dump: each CPU's `nr_run` and the runnable tasks listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScxDump {
    /// Each listed CPU's count of runnable sched_ext tasks (`nr_run`).
    pub nr_run: Vec<(u32, u32)>,
    /// The runnable tasks, in the dump's order.
    pub tasks: Vec<DumpTask>,
}

impl ScxDump {
    /// The tasks queued on each DSQ (the running ones not counted): per
    /// CPU for the local DSQs (`(Some(cpu), DSQ_LOCAL)`), across CPUs for
    /// the others (`(None, id)`).
    pub fn depths(&self) -> BTreeMap<(Option<u32>, u64), u32> {
        let mut out = BTreeMap::new();
        for t in self.tasks.iter().filter(|t| !t.running) {
            let Some(id) = t.dsq else { continue };
            let cpu = (id == DSQ_LOCAL).then_some(t.cpu);
            *out.entry((cpu, id)).or_insert(0) += 1;
        }
        out
    }

    /// The waiting tasks on no DSQ: the BPF scheduler holds them.
    pub fn held(&self) -> impl Iterator<Item = &DumpTask> {
        self.tasks.iter().filter(|t| !t.running && t.dsq.is_none())
    }
}

/// The last dump in a trace's text (lines `... sched_ext_dump: LINE`);
/// `None` when it holds none.
pub fn parse_dump(trace: &str) -> Option<ScxDump> {
    parse_payloads(trace.lines().filter_map(payload_of))
}

/// The last dump in the event's lines (the text after `sched_ext_dump: `).
fn parse_payloads<'a>(payloads: impl Iterator<Item = &'a str>) -> Option<ScxDump> {
    let mut dump: Option<ScxDump> = None;
    let mut cpu = None;
    for payload in payloads {
        if starts_a_dump(payload) {
            dump = Some(ScxDump::default());
            cpu = None;
            continue;
        }
        let Some(d) = dump.as_mut() else { continue };
        if let Some((n, nr_run)) = parse_cpu_line(payload) {
            d.nr_run.push((n, nr_run));
            cpu = Some(n);
        } else if let Some(c) = cpu {
            if let Some(task) = parse_task_line(payload, c) {
                d.tasks.push(task);
            } else if let Some(id) = payload.trim_start().strip_prefix("sticky/holding_cpu=") {
                if let Some(t) = d.tasks.last_mut() {
                    t.dsq = parse_dsq_id(id);
                }
            }
        }
    }
    dump
}

/// The event's text in one line of a trace (`... sched_ext_dump: TEXT`).
fn payload_of(line: &str) -> Option<&str> {
    line.split_once("sched_ext_dump: ").map(|(_, p)| p)
}

/// Whether a dump's line is its first: SysRq-D's (`Debug dump triggered
/// by SysRq-D`) or an exit's (`comm[pid] triggered exit kind N:`).
fn starts_a_dump(payload: &str) -> bool {
    payload.starts_with("Debug dump triggered by") || payload.contains("triggered exit kind")
}

/// `CPU 0   : nr_run=1 flags=0x1 ...` → (0, 1).
fn parse_cpu_line(payload: &str) -> Option<(u32, u32)> {
    let (cpu, rest) = payload.strip_prefix("CPU ")?.split_once(':')?;
    let nr_run = rest.trim_start().strip_prefix("nr_run=")?;
    let nr_run = nr_run.split_whitespace().next()?.parse().ok()?;
    Some((cpu.trim().parse().ok()?, nr_run))
}

/// ` *R yes[104] -27ms` (marker, state, comm[pid], runnable since).
fn parse_task_line(payload: &str, cpu: u32) -> Option<DumpTask> {
    let mut chars = payload.chars();
    if chars.next()? != ' ' {
        return None;
    }
    let marker = chars.next()?;
    let state = chars.next()?;
    let rest = chars.as_str().strip_prefix(' ')?;
    if !matches!(marker, '*' | ' ') || !state.is_ascii_alphabetic() {
        return None;
    }
    let (name, age) = rest.rsplit_once(' ')?;
    let ms: i64 = age.strip_suffix("ms")?.parse().ok()?;
    let (comm, pid) = name.strip_suffix(']')?.rsplit_once('[')?;
    Some(DumpTask {
        cpu,
        pid: pid.parse().ok()?,
        comm: comm.to_string(),
        running: marker == '*',
        runnable_ms: ms.unsigned_abs(),
        dsq: None,
    })
}

/// `-1/-1 dsq_id=0x8000000000000002 dsq_vtime=...` → the id; `None` for
/// `(n/a)`.
fn parse_dsq_id(rest: &str) -> Option<u64> {
    let id = rest.split_once("dsq_id=")?.1.split_whitespace().next()?;
    u64::from_str_radix(id.strip_prefix("0x")?, 16).ok()
}

/// A tracefs instance of runq's own with `sched_ext_dump` on, and the
/// sysrq trigger that makes the kernel dump. Dropping it turns the event
/// off and removes the instance.
#[derive(Debug)]
pub struct DumpReader {
    instance: PathBuf,
    sysrq: File,
    buf: String,
    /// Removes the instance if runq dies without dropping the reader.
    _guard: Option<crate::guard::Guard>,
}

impl DumpReader {
    /// Sets up the instance under tracefs (mounting it when it may); the
    /// error is why the dump cannot be had, as a sentence.
    pub fn open() -> Result<DumpReader, String> {
        let sysrq = open_sysrq()?;
        let (instance, guard) = open_instance()?;
        Ok(DumpReader {
            _guard: guard,
            instance,
            sysrq,
            buf: String::new(),
        })
    }

    /// Makes the kernel dump (SysRq-D) and reads it; `None` when the
    /// kernel wrote none (no BPF scheduler enabled).
    pub fn dump(&mut self) -> io::Result<Option<ScxDump>> {
        let trace = self.instance.join("trace");
        File::create(&trace)?; // truncating `trace` empties the buffer
        self.sysrq.write_all(b"D")?;
        self.buf.clear();
        File::open(&trace)?.read_to_string(&mut self.buf)?;
        Ok(parse_dump(&self.buf))
    }
}

impl Drop for DumpReader {
    fn drop(&mut self) {
        close_instance(&self.instance);
    }
}

/// The event's `enable` file in `instance`.
fn enable_path(instance: &Path) -> PathBuf {
    instance.join("events/sched_ext/sched_ext_dump/enable")
}

/// A new tracefs instance of runq's own (mounting tracefs when it may)
/// with `sched_ext_dump` on, and the guard that removes it if runq dies;
/// the error is why the dump cannot be had, as a sentence.
fn open_instance() -> Result<(PathBuf, Option<crate::guard::Guard>), String> {
    let root = match crate::tracefs::ensure_mounted().map_err(|e| e.to_string())? {
        crate::tracefs::Tracefs::Mounted(p) | crate::tracefs::Tracefs::MountedNow(p) => p,
    };
    if !root.join("events/sched_ext/sched_ext_dump").is_dir() {
        return Err("this kernel has no sched_ext_dump trace event \
                    (events/sched_ext/sched_ext_dump, 6.12 and later)"
            .into());
    }
    let instances = root.join("instances");
    crate::sched_trace::remove_stale(&instances);
    let instance = instances.join(crate::sched_trace::instance_name());
    std::fs::create_dir(&instance)
        .map_err(|e| format!("a tracefs instance at {}: {e}", instance.display()))?;
    let guard = crate::sched_trace::guard_instance(&instance);
    if let Err(e) = std::fs::write(enable_path(&instance), "1") {
        close_instance(&instance);
        return Err(format!(
            "turning on sched_ext_dump in {}: {e}",
            instance.display()
        ));
    }
    Ok((instance, guard))
}

/// Turns the event off and removes the instance.
fn close_instance(instance: &Path) {
    let _ = std::fs::write(enable_path(instance), "0");
    let _ = std::fs::remove_dir(instance);
}

/// `/proc/sysrq-trigger`, open for writing.
fn open_sysrq() -> Result<File, String> {
    OpenOptions::new()
        .write(true)
        .open("/proc/sysrq-trigger")
        .map_err(|e| format!("/proc/sysrq-trigger: {e} (the dump needs root)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real 6.12 guest's dump under scx_simple with four `yes` hogs.
    const SIMPLE: &str = include_str!("../tests/fixtures/sched_ext_dump/6.12-simple-sysrq-d");

    #[test]
    fn a_6_12_dump_lists_each_cpu_and_its_runnable_tasks() {
        let d = parse_dump(SIMPLE).expect("a dump");
        assert_eq!(d.nr_run, vec![(0, 1), (1, 1), (2, 1), (3, 2)]);
        let running: Vec<(u32, i64)> = d
            .tasks
            .iter()
            .filter(|t| t.running)
            .map(|t| (t.cpu, t.pid))
            .collect();
        assert_eq!(running, vec![(0, 104), (1, 101), (2, 103), (3, 88)]);
        let waiting: Vec<&DumpTask> = d.tasks.iter().filter(|t| !t.running).collect();
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        let w = waiting[0];
        assert_eq!(
            (w.cpu, w.pid, w.comm.as_str(), w.runnable_ms),
            (3, 102, "yes", 7)
        );
        // scx_simple's shared DSQ is its own, id 0.
        assert_eq!(w.dsq, Some(0), "{w:?}");
        assert_eq!(d.depths(), BTreeMap::from([((None, 0), 1)]));
        assert_eq!(d.held().count(), 0);
    }

    #[test]
    fn depths_count_queued_tasks_per_local_dsq_and_per_other_dsq() {
        let line = |p: &str| format!("<...>-88 [003] d..2. 24.4: sched_ext_dump: {p}\n");
        let mut t = line("Debug dump triggered by SysRq-D");
        t += &line("CPU 0   : nr_run=3 flags=0x1 cpu_rel=0 pnt_seq=35");
        for (task, dsq) in [
            (" *R a b[10] -3ms", "(n/a)"),
            ("  R c[11] -40ms", "0x8000000000000002"),
            ("  R d[12] -1ms", "0x8000000000000001"),
        ] {
            t += &line(task);
            t += &line(&format!(
                "      sticky/holding_cpu=-1/-1 dsq_id={dsq} dsq_vtime=1"
            ));
        }
        t += &line("CPU 1   : nr_run=2 flags=0x1 cpu_rel=0 pnt_seq=1");
        t += &line("  R e[13] +0ms");
        t += &line("      sticky/holding_cpu=-1/-1 dsq_id=0x8000000000000002 dsq_vtime=1");
        t += &line("  R f[14] -5000ms");
        t += &line("      sticky/holding_cpu=-1/-1 dsq_id=0x0 dsq_vtime=1");
        let d = parse_dump(&t).unwrap();
        assert_eq!(d.tasks[0].comm, "a b");
        let want = BTreeMap::from([
            ((None, 0), 1),
            ((None, DSQ_GLOBAL), 1),
            ((Some(0), DSQ_LOCAL), 1),
            ((Some(1), DSQ_LOCAL), 1),
        ]);
        assert_eq!(d.depths(), want);
        assert_eq!(d.tasks[4].runnable_ms, 5000);
        assert_eq!(d.held().count(), 0);
    }

    #[test]
    fn text_without_a_dump_gives_none_and_a_later_dump_replaces_an_earlier() {
        assert_eq!(parse_dump(""), None);
        assert_eq!(parse_dump("# tracer: nop\n"), None);
        let two = format!("{SIMPLE}x: sched_ext_dump: Debug dump triggered by SysRq-D\n");
        assert_eq!(parse_dump(&two), Some(ScxDump::default()));
    }

    #[test]
    fn malformed_task_lines_are_skipped() {
        assert_eq!(parse_task_line("CPU states", 0), None);
        assert_eq!(parse_task_line(" *R yes[x] -1ms", 0), None);
        assert_eq!(parse_task_line(" *R yes[1] -1s", 0), None);
        assert_eq!(parse_task_line(" ?R yes[1] -1ms", 0), None);
        assert_eq!(parse_dsq_id("-1/-1 dsq_id=(n/a) dsq_vtime=0"), None);
        assert_eq!(parse_cpu_line("CPU states"), None);
    }
}
