//! The scheduler's state at the moment it fails (ktstr's failure dump):
//! the kernel's sched_ext debug dump (its own at an error exit, read from
//! a tracefs instance watching from before the start) and the scheduler's
//! BPF maps through their BTF (held open from readiness, so they outlive a
//! process that dies), once when sched_ext lets the scheduler go or its
//! process dies, and once earlier when a stall is building: a SysRq-D
//! dump (the host monitor's, every 2 s, or runq's own when none came for
//! half the watchdog's bound, held to 1% of a CPU) listing a task runnable
//! and not run for half the watchdog's bound.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runq_kernel::bpf_maps::{self, HeldMap};
use runq_kernel::sched_ext_dump::{DumpBlock, DumpStream};
use serde::{Deserialize, Serialize};

/// How often the stream is read.
const READ_EVERY: Duration = Duration::from_millis(100);
/// How long the end waits for the kernel's exit dump after sched_ext let
/// the scheduler go (it writes it before the state leaves `enabled`; this
/// covers a reader that polled in between).
const EXIT_DUMP_WAIT: Duration = Duration::from_millis(500);
/// runq's own dumps come at most once per this many times their CPU cost.
const MAX_COST_SHARE: u64 = 100;
/// The most entries shown per map.
const MAX_MAP_ENTRIES: usize = 64;

/// When a dump of the scheduler's state was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DumpMoment {
    /// A task had been runnable and not run for half the watchdog's bound.
    StallBuilding,
    /// sched_ext let the scheduler go (ejected or unregistered).
    LetGo,
    /// Its process died while sched_ext still ran it.
    Died,
}

impl DumpMoment {
    /// The end's moment: sched_ext let the scheduler go (`left`), or its
    /// process died.
    pub(crate) fn from_left(left: bool) -> Self {
        if left {
            DumpMoment::LetGo
        } else {
            DumpMoment::Died
        }
    }

    /// The moment in a few words (`stall building`), also in file names.
    pub fn words(self) -> &'static str {
        match self {
            DumpMoment::StallBuilding => "stall building",
            DumpMoment::LetGo => "let go",
            DumpMoment::Died => "died",
        }
    }
}

/// One dump of the scheduler's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateDump {
    /// When it was taken.
    pub moment: DumpMoment,
    /// ms from the start of the run (0 before it).
    pub at_ms: u64,
    /// The first line of the kernel's dump (what triggered it), when the
    /// kernel wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_trigger: Option<String>,
    /// Lines of the kernel's dump.
    pub kernel_lines: usize,
    /// BPF maps dumped.
    pub maps: usize,
    /// Their entries shown, in all.
    pub map_entries: usize,
    /// Why a part is missing, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The file the dump was written to (by the caller; `None` until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The dump as text: the kernel's lines, then the maps.
    #[serde(skip)]
    pub text: String,
}

/// What the run keeps to dump the scheduler's state.
#[derive(Debug, Default)]
pub(crate) struct StateDumper {
    stream: Option<DumpStream>,
    stream_missing: Option<String>,
    maps: Vec<HeldMap>,
    maps_missing: Vec<String>,
    /// The last exit dump the kernel wrote.
    exit_block: Option<DumpBlock>,
    /// A task runnable this long, unrun, is a stall building, ms.
    stall_ms: u64,
    last_read: Option<Instant>,
    /// When the stream last brought a dump (or runq last asked for one).
    last_dump: Option<Instant>,
    /// Why runq cannot ask the kernel for a dump, once asking failed.
    no_sysrq: Option<String>,
    /// What runq's last own dump cost its thread (the kernel dumps in the
    /// writer's context), ns.
    own_dump_ns: u64,
    dumps: Vec<StateDump>,
}

impl StateDumper {
    /// Starts watching for the kernel's dumps (before the scheduler
    /// starts, so an ejection at start is caught), on a kernel with
    /// sched_ext; `watchdog` is the stall bound (half of it: a stall
    /// building).
    pub fn start(kernel_has_sched_ext: bool, watchdog: Duration) -> Self {
        let (stream, stream_missing) = match kernel_has_sched_ext.then(DumpStream::open) {
            Some(Ok(s)) => (Some(s), None),
            Some(Err(why)) => (None, Some(why)),
            None => (None, Some("this kernel has no sched_ext".into())),
        };
        StateDumper {
            stream,
            stream_missing,
            stall_ms: u64::try_from(watchdog.as_millis() / 2).unwrap_or(u64::MAX),
            ..StateDumper::default()
        }
    }

    /// Holds open the BPF maps of the ready scheduler: those of every
    /// process in its process group `pgid` (a wrapper such as `sh -c`
    /// may have started the process that loaded them).
    pub fn hold_maps(&mut self, pgid: u32) {
        let proc_root = Path::new("/proc");
        for pid in group_members(proc_root, pgid) {
            let (maps, missing) = bpf_maps::hold_maps_of(proc_root, pid);
            for m in maps {
                if !self.maps.iter().any(|h| h.info().id == m.info().id) {
                    self.maps.push(m);
                }
            }
            self.maps_missing.extend(missing);
        }
        if self.maps.is_empty() && self.maps_missing.is_empty() {
            self.maps_missing
                .push(format!("no process of group {pgid} held a BPF map open"));
        }
    }

    /// Reads the kernel's dumps (every 100 ms at most); a SysRq-D dump
    /// listing a stall building is dumped with the maps, once.
    pub fn poll(&mut self, at_ms: u64) {
        if self.last_read.is_some_and(|t| t.elapsed() < READ_EVERY) {
            return;
        }
        self.last_read = Some(Instant::now());
        for block in self.read_blocks() {
            self.last_dump = Some(Instant::now());
            if block.is_exit() {
                self.exit_block = Some(block);
            } else if !self.stall_dumped() && self.lists_a_stall(&block) {
                self.push(DumpMoment::StallBuilding, at_ms, Some(block));
            }
        }
        self.ask_for_a_dump_when_due();
    }

    /// Has the kernel dump its state (SysRq-D, read at the next poll) when
    /// no dump came for half the watchdog's bound (the host monitor's come
    /// every 2 s or more), so that a stall is seen building before the
    /// watchdog's bound; once a stall was dumped, no more.
    fn ask_for_a_dump_when_due(&mut self) {
        // As the host monitor's: at most 1% of a CPU.
        let every = Duration::from_millis(self.stall_ms).max(Duration::from_nanos(
            self.own_dump_ns.saturating_mul(MAX_COST_SHARE),
        ));
        let due = self.last_dump.is_none_or(|t| t.elapsed() >= every);
        if !due || self.stall_dumped() || self.no_sysrq.is_some() {
            return;
        }
        self.last_dump = Some(Instant::now());
        let Some(s) = self.stream.as_mut() else {
            return;
        };
        let t0 = runq_kernel::clock::thread_cpu_ns();
        if let Err(e) = s.trigger() {
            log::info!("scheduler state: no SysRq-D dumps of runq's own: {e}");
            self.no_sysrq = Some(e.to_string());
        }
        self.own_dump_ns = runq_kernel::clock::thread_cpu_ns().saturating_sub(t0);
    }

    /// The dump at the scheduler's end: the kernel's exit dump (waiting a
    /// little for it after an ejection) and the maps.
    pub fn at_end(&mut self, moment: DumpMoment, at_ms: u64) {
        let wait_until = Instant::now() + EXIT_DUMP_WAIT;
        loop {
            for b in self.read_blocks() {
                if b.is_exit() {
                    self.exit_block = Some(b);
                }
            }
            if self.exit_block.is_some() || self.stream.is_none() || Instant::now() >= wait_until {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let block = self.exit_block.take();
        self.push(moment, at_ms, block);
        self.maps.clear();
    }

    /// The dumps taken, for the run's record.
    pub fn dumps(&self) -> Vec<StateDump> {
        self.dumps.clone()
    }

    fn stall_dumped(&self) -> bool {
        self.dumps
            .iter()
            .any(|d| d.moment == DumpMoment::StallBuilding)
    }

    fn lists_a_stall(&self, block: &DumpBlock) -> bool {
        block.parse().is_some_and(|d| {
            d.tasks
                .iter()
                .any(|t| !t.running && t.runnable_ms >= self.stall_ms)
        })
    }

    fn read_blocks(&mut self) -> Vec<DumpBlock> {
        let Some(s) = self.stream.as_mut() else {
            return Vec::new();
        };
        s.read().unwrap_or_else(|e| {
            self.stream_missing = Some(format!("reading the kernel's dumps failed: {e}"));
            self.stream = None;
            Vec::new()
        })
    }

    fn push(&mut self, moment: DumpMoment, at_ms: u64, block: Option<DumpBlock>) {
        let maps: Vec<_> = self.maps.iter().map(|m| m.dump(MAX_MAP_ENTRIES)).collect();
        let mut missing = Vec::new();
        match (&block, &self.stream_missing) {
            (Some(_), _) => {}
            (None, Some(why)) => missing.push(format!("no kernel dump: {why}")),
            (None, None) => missing.push(no_kernel_dump(moment).into()),
        }
        missing.extend(self.maps_missing.iter().map(|m| format!("BPF maps: {m}")));
        let text = dump_text(block.as_ref(), &bpf_maps::render(&maps), &missing);
        self.dumps.push(StateDump {
            moment,
            at_ms,
            kernel_trigger: block.as_ref().and_then(|b| b.lines.first().cloned()),
            kernel_lines: block.as_ref().map_or(0, |b| b.lines.len() + b.cut),
            maps: maps.len(),
            map_entries: maps.iter().map(|m| m.shown).sum(),
            missing,
            file: None,
            text,
        });
    }
}

/// The pids of process group `pgid` (the fifth field of `/proc/PID/stat`,
/// after the command's closing parenthesis).
fn group_members(proc_root: &Path, pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat"))
                .ok()
                .and_then(|stat| pgrp_of(&stat))
                == Some(pgid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The process group in a `/proc/PID/stat` line.
fn pgrp_of(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Why the kernel wrote no dump at `moment`.
fn no_kernel_dump(moment: DumpMoment) -> &'static str {
    match moment {
        DumpMoment::LetGo => {
            "no kernel dump: sched_ext dumps at an error exit only, and this one was not \
             an error (the scheduler unregistered)"
        }
        DumpMoment::Died | DumpMoment::StallBuilding => {
            "no kernel dump: the kernel wrote none at this moment"
        }
    }
}

/// The dump's text: the kernel's lines, the maps, what is missing.
fn dump_text(block: Option<&DumpBlock>, maps: &str, missing: &[String]) -> String {
    let mut out = String::new();
    if let Some(b) = block {
        out.push_str("== the kernel's sched_ext dump ==\n");
        for l in &b.lines {
            let _ = writeln!(out, "{l}");
        }
        if b.cut > 0 {
            let _ = writeln!(out, "... {} more lines", b.cut);
        }
    }
    if !maps.is_empty() {
        let _ = writeln!(out, "== the scheduler's BPF maps ==\n{maps}");
    }
    for m in missing {
        let _ = writeln!(out, "({m})");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(lines: &[&str]) -> DumpBlock {
        DumpBlock {
            lines: lines.iter().map(|l| l.to_string()).collect(),
            cut: 0,
        }
    }

    #[test]
    fn a_task_runnable_past_half_the_watchdog_is_a_stall_building() {
        let d = StateDumper::start(false, Duration::from_secs(2));
        let sysrq = |age: &str| {
            block(&[
                "Debug dump triggered by SysRq-D",
                "CPU 0   : nr_run=2 flags=0x1 cpu_rel=0 pnt_seq=35",
                " *R yes[104] -3000ms",
                &format!("  R stress[105] {age}"),
            ])
        };
        assert!(!d.lists_a_stall(&sysrq("-999ms")));
        assert!(d.lists_a_stall(&sysrq("-1000ms")));
    }

    #[test]
    fn the_process_group_is_read_past_a_command_with_parentheses() {
        let stat = "4242 (sh (x) y) S 4200 4240 4200 0 -1 4194560 113";
        assert_eq!(pgrp_of(stat), Some(4240));
        assert_eq!(pgrp_of("garbage"), None);
        let me = std::process::id();
        let own = pgrp_of(&std::fs::read_to_string("/proc/self/stat").unwrap()).unwrap();
        assert!(group_members(Path::new("/proc"), own).contains(&me));
    }

    #[test]
    fn without_sched_ext_a_dump_says_what_is_missing() {
        let mut d = StateDumper::start(false, Duration::from_secs(2));
        d.at_end(DumpMoment::Died, 1500);
        let dumps = d.dumps();
        assert_eq!(dumps.len(), 1);
        assert_eq!(dumps[0].kernel_lines, 0);
        assert_eq!(
            dumps[0].missing,
            vec!["no kernel dump: this kernel has no sched_ext".to_string()]
        );
        assert!(dumps[0]
            .text
            .contains("(no kernel dump: this kernel has no sched_ext)"));
    }

    #[test]
    fn the_text_puts_the_kernel_first_and_counts_cut_lines() {
        let mut b = block(&[
            "scx_qmap[212] triggered exit kind 1026:",
            "  runnable task stall",
        ]);
        b.cut = 3;
        let text = dump_text(Some(&b), "map 7 bss (array, 1 max): 1 entries\n", &[]);
        assert!(text.starts_with("== the kernel's sched_ext dump ==\nscx_qmap[212] triggered"));
        assert!(text.contains("... 3 more lines\n== the scheduler's BPF maps ==\nmap 7 bss"));
    }
}
