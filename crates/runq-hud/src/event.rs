//! Events from the BPF ring buffer. The record's fixed part is
//! [`EventHeader`], a `#[repr(C)]` mirror of `struct event` in
//! bpf/hud.bpf.c whose offsets are asserted at compile time here and by
//! `_Static_assert`s there; the kinds, flags and map slots are named once
//! per side and a test checks the two sides agree. In copy mode the
//! header is followed by the copied user stack.

use std::mem::{offset_of, size_of};

/// Frames a frame-pointer stack can hold (MAX_FRAMES in the C source).
pub const MAX_FRAMES: usize = 127;

/// The fixed header of a record, field for field as the C side writes it
/// (decoded by offset from the byte buffer, never by casting it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EventHeader {
    /// `enum event_kind`.
    pub kind: u32,
    /// The worker thread.
    pub tid: u32,
    /// Start of the interval or the sample time, ns.
    pub start_ns: u64,
    /// Length of the interval, ns.
    pub duration_ns: u64,
    /// Task state at switch-out.
    pub state: u64,
    /// CPU of the record.
    pub cpu: u32,
    /// Frames of the frame-pointer stack.
    pub frames: u32,
    /// Copied instruction pointer.
    pub ip: u64,
    /// Copied stack pointer.
    pub sp: u64,
    /// Copied frame pointer register.
    pub bp: u64,
    /// Bytes of copied stack after the record.
    pub stack_len: u32,
    /// `enum event_flags`.
    pub flags: u32,
    /// The worker's switch-outs so far.
    pub switches: u64,
    /// The task that ran before the worker got its CPU back.
    pub holder_tid: u32,
    /// That task's process.
    pub holder_tgid: u32,
    /// That task's name.
    pub holder_comm: [u8; 16],
    /// The Tokio task the worker was polling (0: none, or not tracked).
    pub task_id: u64,
    /// Blocked: the system call it slept in (-1: none).
    pub syscall: i32,
    /// Blocked: that call's descriptor (-1: none).
    pub fd: i32,
    /// Blocked: the descriptor's inode type bits (`i_mode >> 12`).
    pub fd_type: u32,
    /// Blocked, on a socket: its family and type (`family << 16 | type`).
    pub sock: u32,
}

const HEADER_SIZE: usize = size_of::<EventHeader>();
/// Size of the fixed part of one record: the header and the
/// frame-pointer stack.
pub const EVENT_SIZE: usize = HEADER_SIZE + 8 * MAX_FRAMES;

// The offsets `_Static_assert`ed in bpf/hud.bpf.c.
const _: () = {
    assert!(offset_of!(EventHeader, tid) == 4);
    assert!(offset_of!(EventHeader, start_ns) == 8);
    assert!(offset_of!(EventHeader, duration_ns) == 16);
    assert!(offset_of!(EventHeader, state) == 24);
    assert!(offset_of!(EventHeader, cpu) == 32);
    assert!(offset_of!(EventHeader, frames) == 36);
    assert!(offset_of!(EventHeader, ip) == 40);
    assert!(offset_of!(EventHeader, sp) == 48);
    assert!(offset_of!(EventHeader, bp) == 56);
    assert!(offset_of!(EventHeader, stack_len) == 64);
    assert!(offset_of!(EventHeader, flags) == 68);
    assert!(offset_of!(EventHeader, switches) == 72);
    assert!(offset_of!(EventHeader, holder_tid) == 80);
    assert!(offset_of!(EventHeader, holder_tgid) == 84);
    assert!(offset_of!(EventHeader, holder_comm) == 88);
    assert!(offset_of!(EventHeader, task_id) == 104);
    assert!(offset_of!(EventHeader, syscall) == 112);
    assert!(offset_of!(EventHeader, fd) == 116);
    assert!(offset_of!(EventHeader, fd_type) == 120);
    assert!(offset_of!(EventHeader, sock) == 124);
    assert!(HEADER_SIZE == 128);
};

/// `enum event_kind` of the C source.
pub mod kind {
    /// Asleep longer than the threshold.
    pub const EV_BLOCKED: u32 = 1;
    /// Runnable, waiting for a CPU longer than the threshold.
    pub const EV_RUNQ: u32 = 2;
    /// A cpu-clock sample.
    pub const EV_SAMPLE: u32 = 3;
    /// The stack of the target's thread that held a waiting worker's CPU.
    pub const EV_HOLDER: u32 = 4;
    /// Exact polls: one poll ran on CPU longer than the threshold.
    pub const EV_POLL: u32 = 5;
}

/// `enum event_flags` of the C source.
pub mod flag {
    /// The frame-pointer walk filled MAX_FRAMES.
    pub const F_TRUNCATED: u32 = 1;
    /// No part of the user stack could be copied.
    pub const F_COPY_FAILED: u32 = 2;
    /// The user registers could not be read.
    pub const F_NO_REGS: u32 = 4;
}

/// Slots of the C side's CONFIG array (`enum config_slot`).
pub mod config_slot {
    /// The threshold, ns.
    pub const CFG_THRESHOLD_NS: u32 = 0;
    /// 1 to copy stacks, 0 for frame pointers.
    pub const CFG_COPY_MODE: u32 = 1;
    /// The target's pid (a CPU holder in it gets its own stack).
    pub const CFG_TARGET_TGID: u32 = 2;
    /// 1 when the poll uprobes are attached.
    pub const CFG_EXACT_POLLS: u32 = 3;
    /// The current task id's offset from the thread pointer (0: not read
    /// from thread-local storage).
    pub const CFG_TASK_TLS: u32 = 4;
}

/// Slots of the C side's COUNTERS array (`enum counter_slot`).
pub mod counter_slot {
    /// Events dropped (ring buffer full).
    pub const CNT_LOST: u32 = 0;
    /// Bytes of user stack copied.
    pub const CNT_COPIED: u32 = 1;
    /// Preemptions whose stack found no room to be kept.
    pub const CNT_NO_RQ_COPY: u32 = 2;
    /// Exact polls: long polls left out because the tracepoints missed
    /// some of their context switches.
    pub const CNT_POLLS_UNTIMED: u32 = 3;
}

use flag::{F_COPY_FAILED, F_NO_REGS, F_TRUNCATED};

use crate::sleep_call::SleepCall;

/// What the kernel saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// A worker slept (S or D) longer than the threshold.
    Blocked,
    /// A worker was runnable but waited for a CPU longer than the threshold.
    RunQueue,
    /// A cpu-clock sample of a running worker.
    #[default]
    Sample,
    /// The stack of the target's own thread that held the CPU a worker
    /// waited for (`tid` is the waiting worker's).
    Holder,
    /// Exact polls: one poll of a task ran on CPU longer than the
    /// threshold (`duration_ns` is its time on CPU).
    Poll,
}

/// Exact polls: what the uprobes saw of one long poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PollSpan {
    /// From the poll's entry to its return, ns (its time on CPU, the
    /// event's duration, plus the worker's time off CPU inside it).
    pub wall_ns: u64,
    /// The entry address of the instance of Tokio's `raw::poll` that ran
    /// (one instance per future type).
    pub fn_ip: u64,
}

/// The task that ran on the CPU just before a waiting worker got it back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Holder {
    /// Its thread id.
    pub tid: u32,
    /// Its process id.
    pub tgid: u32,
    /// Its thread name.
    pub comm: String,
}

/// The user registers and the top of the user stack, copied by the kernel
/// for unwinding in user space.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackCopy {
    /// Instruction pointer.
    pub ip: u64,
    /// Stack pointer: the address of `bytes[0]`.
    pub sp: u64,
    /// Frame pointer register (rbp), which CFI may use as a base.
    pub bp: u64,
    /// Stack memory from `sp` upwards (empty when the copy failed).
    pub bytes: Vec<u8>,
}

impl StackCopy {
    /// The 8-byte word at `addr`, if the copy covers it.
    pub fn word_at(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        u64_at(&self.bytes, off)
    }
}

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawEvent {
    /// What happened.
    pub kind: Kind,
    /// The worker thread.
    pub tid: u32,
    /// Start of the interval (or the sample time), CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// Length of the interval (0 for samples).
    pub duration_ns: u64,
    /// Task state at switch-out (0 = preempted while runnable).
    pub state: u64,
    /// CPU the event was recorded on.
    pub cpu: u32,
    /// User stack, innermost frame first (instruction pointer, then return
    /// addresses): the kernel's frame-pointer walk, or after [`unwind`]ing
    /// a copy, the unwinder's.
    ///
    /// [`unwind`]: crate::unwind
    pub stack: Vec<u64>,
    /// The frame-pointer walk filled all [`MAX_FRAMES`].
    pub truncated: bool,
    /// The stack was cut short by a limit rather than its end: the
    /// unwinder ran past the copied bytes (set by [`crate::prep`]), or the
    /// kernel's walk filled its frame limit.
    pub cut_short: bool,
    /// Copy mode: registers and stack bytes to unwind.
    pub copy: Option<StackCopy>,
    /// Copy mode: the kernel could not copy the stack or read the registers.
    pub copy_failed: bool,
    /// How often the worker had left the CPU when the event was recorded.
    pub switches: u64,
    /// Run-queue waits and holder stacks: what held the CPU.
    pub holder: Option<Holder>,
    /// Exact polls: the poll's wall time and instance.
    pub poll: Option<PollSpan>,
    /// The Tokio task the worker was polling (for a long poll, the task
    /// it polled), when task ids are tracked.
    pub task_id: Option<u64>,
    /// Blocked: the system call it slept in, when it slept in one.
    pub call: Option<SleepCall>,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Reads one header field of a record by its offset in [`EventHeader`].
macro_rules! field {
    (u32, $b:expr, $f:ident) => {
        u32_at($b, offset_of!(EventHeader, $f))
    };
    (u64, $b:expr, $f:ident) => {
        u64_at($b, offset_of!(EventHeader, $f))
    };
}

/// The copied registers and stack bytes of a copy-mode record.
fn decode_copy(b: &[u8], flags: u32) -> Option<StackCopy> {
    let len = field!(u32, b, stack_len)? as usize;
    if len == 0 && flags & (F_COPY_FAILED | F_NO_REGS) == 0 {
        return None;
    }
    // A record cut short keeps what arrived; unwinding stops where it ends.
    let end = b.len().min(EVENT_SIZE + len);
    let bytes = b[EVENT_SIZE..end].to_vec();
    Some(StackCopy {
        ip: field!(u64, b, ip)?,
        sp: field!(u64, b, sp)?,
        bp: field!(u64, b, bp)?,
        bytes,
    })
}

/// The CPU's holder of a run-queue wait or holder record (tid 0: none).
fn decode_holder(b: &[u8]) -> Option<Holder> {
    let tid = field!(u32, b, holder_tid)?;
    if tid == 0 {
        return None;
    }
    let at = offset_of!(EventHeader, holder_comm);
    let comm = b.get(at..at + 16)?;
    let comm = &comm[..comm.iter().position(|c| *c == 0).unwrap_or(16)];
    Some(Holder {
        tid,
        tgid: field!(u32, b, holder_tgid)?,
        comm: String::from_utf8_lossy(comm).into_owned(),
    })
}

/// Decodes one record; `None` for a short buffer or an unknown kind.
pub fn decode(b: &[u8]) -> Option<RawEvent> {
    if b.len() < EVENT_SIZE {
        return None;
    }
    let kind = match field!(u32, b, kind)? {
        kind::EV_BLOCKED => Kind::Blocked,
        kind::EV_RUNQ => Kind::RunQueue,
        kind::EV_SAMPLE => Kind::Sample,
        kind::EV_HOLDER => Kind::Holder,
        kind::EV_POLL => Kind::Poll,
        _ => return None,
    };
    let poll = (kind == Kind::Poll)
        .then(|| {
            Some(PollSpan {
                wall_ns: field!(u64, b, state)?,
                fn_ip: field!(u64, b, ip)?,
            })
        })
        .flatten();
    let frames = (field!(u32, b, frames)? as usize).min(MAX_FRAMES);
    let flags = field!(u32, b, flags)?;
    let stack = (0..frames)
        .filter_map(|i| u64_at(b, HEADER_SIZE + 8 * i))
        .filter(|a| *a != 0)
        .collect();
    Some(RawEvent {
        kind,
        tid: field!(u32, b, tid)?,
        start_ns: field!(u64, b, start_ns)?,
        duration_ns: field!(u64, b, duration_ns)?,
        state: field!(u64, b, state)?,
        cpu: field!(u32, b, cpu)?,
        stack,
        truncated: flags & F_TRUNCATED != 0,
        cut_short: flags & F_TRUNCATED != 0,
        copy: decode_copy(b, flags),
        copy_failed: flags & (F_COPY_FAILED | F_NO_REGS) != 0,
        switches: field!(u64, b, switches)?,
        holder: decode_holder(b),
        poll,
        task_id: field!(u64, b, task_id).filter(|id| *id != 0),
        call: (kind == Kind::Blocked).then(|| decode_call(b)).flatten(),
    })
}

/// The system call of a blocked record.
fn decode_call(b: &[u8]) -> Option<SleepCall> {
    let int = |v: u32| i32::from_ne_bytes(v.to_ne_bytes());
    SleepCall::from_record(
        int(field!(u32, b, syscall)?),
        int(field!(u32, b, fd)?),
        field!(u32, b, fd_type)?,
        field!(u32, b, sock)?,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record as the kernel writes it.
    pub(crate) fn record(kind: u32, frames: u32, stack: &[u64]) -> Vec<u8> {
        let mut b = vec![0u8; EVENT_SIZE];
        b[0..4].copy_from_slice(&kind.to_ne_bytes());
        b[4..8].copy_from_slice(&42u32.to_ne_bytes());
        b[8..16].copy_from_slice(&1000u64.to_ne_bytes());
        b[16..24].copy_from_slice(&7_000_000u64.to_ne_bytes());
        b[24..32].copy_from_slice(&1u64.to_ne_bytes());
        b[32..36].copy_from_slice(&1u32.to_ne_bytes());
        b[36..40].copy_from_slice(&frames.to_ne_bytes());
        b[72..80].copy_from_slice(&5u64.to_ne_bytes());
        // No system call, no descriptor.
        b[112..120].copy_from_slice(&[0xff; 8]);
        for (i, a) in stack.iter().enumerate() {
            b[HEADER_SIZE + 8 * i..HEADER_SIZE + 8 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        b
    }

    /// A copy-mode record with registers and stack bytes.
    pub(crate) fn copy_record(ip: u64, sp: u64, bp: u64, bytes: &[u8], flags: u32) -> Vec<u8> {
        let mut b = record(3, 0, &[]);
        b[40..48].copy_from_slice(&ip.to_ne_bytes());
        b[48..56].copy_from_slice(&sp.to_ne_bytes());
        b[56..64].copy_from_slice(&bp.to_ne_bytes());
        b[64..68].copy_from_slice(&(bytes.len() as u32).to_ne_bytes());
        b[68..72].copy_from_slice(&flags.to_ne_bytes());
        b.extend_from_slice(bytes);
        b
    }

    #[test]
    fn decodes_a_blocked_event() {
        let e = decode(&record(1, 2, &[0x1000, 0x2000])).unwrap();
        assert_eq!(e.kind, Kind::Blocked);
        assert_eq!(
            (e.tid, e.start_ns, e.duration_ns, e.state, e.cpu),
            (42, 1000, 7_000_000, 1, 1)
        );
        assert_eq!(e.stack, vec![0x1000, 0x2000]);
        assert_eq!(e.switches, 5);
        assert!(e.copy.is_none() && !e.truncated && !e.copy_failed);
        assert_eq!(e.task_id, None, "task id 0 is no task");
        assert_eq!(e.call, None, "no system call");
    }

    #[test]
    fn decodes_the_call_a_blocked_worker_slept_in() {
        let mut b = record(kind::EV_BLOCKED, 0, &[]);
        b[112..116].copy_from_slice(&20i32.to_ne_bytes());
        b[116..120].copy_from_slice(&9i32.to_ne_bytes());
        b[120..124].copy_from_slice(&0o14u32.to_ne_bytes());
        b[124..128].copy_from_slice(&(2u32 << 16 | 1).to_ne_bytes());
        let call = decode(&b).unwrap().call.unwrap();
        assert_eq!(call.label(), "writev on a TCP socket");
        assert_eq!(call.fd, Some(9));
        // Only a blocked record carries one.
        b[0..4].copy_from_slice(&kind::EV_RUNQ.to_ne_bytes());
        assert_eq!(decode(&b).unwrap().call, None);
    }

    #[test]
    fn rejects_short_and_unknown_records_and_clamps_frames() {
        assert!(decode(&[0u8; 10]).is_none());
        assert!(decode(&record(9, 0, &[])).is_none());
        let e = decode(&record(3, 1000, &[0x10])).unwrap();
        assert_eq!(e.stack, vec![0x10], "zero frames dropped, count clamped");
    }

    #[test]
    fn decodes_a_stack_copy_and_reads_its_words() {
        let mut bytes = vec![0u8; 24];
        bytes[8..16].copy_from_slice(&0xdead_beefu64.to_ne_bytes());
        let e = decode(&copy_record(0x401000, 0x7ff0_0000, 0x7ff0_0040, &bytes, 0)).unwrap();
        let c = e.copy.unwrap();
        assert_eq!(
            (c.ip, c.sp, c.bp, c.bytes.len()),
            (0x401000, 0x7ff0_0000, 0x7ff0_0040, 24)
        );
        assert_eq!(c.word_at(0x7ff0_0008), Some(0xdead_beef));
        assert_eq!(c.word_at(0x7ff0_0018), None, "past the copy");
        assert_eq!(c.word_at(0x7fef_fff8), None, "below sp");
    }

    #[test]
    fn a_failed_copy_is_flagged_and_a_cut_record_keeps_what_arrived() {
        let e = decode(&copy_record(0x401000, 0x7ff0_0000, 0, &[], F_COPY_FAILED)).unwrap();
        assert!(e.copy_failed);
        assert!(e.copy.unwrap().bytes.is_empty());
        let mut cut = copy_record(1, 2, 3, &[7u8; 64], 0);
        cut.truncate(EVENT_SIZE + 10);
        assert_eq!(decode(&cut).unwrap().copy.unwrap().bytes.len(), 10);
    }

    #[test]
    fn decodes_the_holder_of_a_run_queue_wait() {
        let mut b = record(kind::EV_RUNQ, 1, &[0x10]);
        b[80..84].copy_from_slice(&77u32.to_ne_bytes());
        b[84..88].copy_from_slice(&70u32.to_ne_bytes());
        b[88..91].copy_from_slice(b"yes");
        let e = decode(&b).unwrap();
        assert_eq!(e.kind, Kind::RunQueue);
        let h = e.holder.unwrap();
        assert_eq!((h.tid, h.tgid, h.comm.as_str()), (77, 70, "yes"));
        assert!(decode(&record(kind::EV_RUNQ, 0, &[]))
            .unwrap()
            .holder
            .is_none());
        assert_eq!(
            decode(&record(kind::EV_HOLDER, 0, &[])).unwrap().kind,
            Kind::Holder
        );
    }

    #[test]
    fn decodes_a_long_poll_with_its_wall_time_and_instance() {
        let mut b = record(kind::EV_POLL, 0, &[]);
        b[24..32].copy_from_slice(&31_000_000u64.to_ne_bytes());
        b[40..48].copy_from_slice(&0x5555_0002_0bf0u64.to_ne_bytes());
        b[104..112].copy_from_slice(&2345u64.to_ne_bytes());
        let e = decode(&b).unwrap();
        assert_eq!(e.task_id, Some(2345));
        assert_eq!(e.kind, Kind::Poll);
        assert_eq!(e.duration_ns, 7_000_000);
        let span = e.poll.unwrap();
        assert_eq!((span.wall_ns, span.fn_ip), (31_000_000, 0x5555_0002_0bf0));
        assert!(e.copy.is_none());
        assert!(decode(&record(kind::EV_SAMPLE, 0, &[]))
            .unwrap()
            .poll
            .is_none());
    }

    /// The value the C source gives `name` (`NAME = 3,` in an enum or
    /// `#define NAME 3`).
    fn c_value(src: &str, name: &str) -> Option<u64> {
        src.lines().find_map(|line| {
            let line = line.trim().trim_start_matches("#define").trim();
            let rest = line.strip_prefix(name)?;
            let rest = rest.trim_start().trim_start_matches('=').trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
    }

    #[test]
    fn constants_match_the_c_source() {
        let src = include_str!("../bpf/hud.bpf.c");
        let pairs: [(&str, u64); 15] = [
            ("MAX_FRAMES", MAX_FRAMES as u64),
            ("EV_BLOCKED", kind::EV_BLOCKED.into()),
            ("EV_RUNQ", kind::EV_RUNQ.into()),
            ("EV_SAMPLE", kind::EV_SAMPLE.into()),
            ("EV_HOLDER", kind::EV_HOLDER.into()),
            ("EV_POLL", kind::EV_POLL.into()),
            ("F_TRUNCATED", F_TRUNCATED.into()),
            ("F_COPY_FAILED", F_COPY_FAILED.into()),
            ("F_NO_REGS", F_NO_REGS.into()),
            ("CFG_THRESHOLD_NS", config_slot::CFG_THRESHOLD_NS.into()),
            ("CFG_COPY_MODE", config_slot::CFG_COPY_MODE.into()),
            ("CFG_TARGET_TGID", config_slot::CFG_TARGET_TGID.into()),
            ("CFG_EXACT_POLLS", config_slot::CFG_EXACT_POLLS.into()),
            ("CNT_LOST", counter_slot::CNT_LOST.into()),
            ("CNT_COPIED", counter_slot::CNT_COPIED.into()),
        ];
        for (name, rust) in pairs {
            assert_eq!(
                c_value(src, name),
                Some(rust),
                "{name} differs between C and Rust"
            );
        }
        assert_eq!(
            c_value(src, "CFG_TASK_TLS"),
            Some(config_slot::CFG_TASK_TLS.into())
        );
        assert_eq!(
            c_value(src, "CNT_NO_RQ_COPY"),
            Some(counter_slot::CNT_NO_RQ_COPY.into())
        );
        assert_eq!(
            c_value(src, "CNT_POLLS_UNTIMED"),
            Some(counter_slot::CNT_POLLS_UNTIMED.into())
        );
        assert!(
            src.contains(&format!(
                "sizeof(struct event) == {HEADER_SIZE} + 8 * MAX_FRAMES"
            )),
            "the C side asserts the header size Rust decodes"
        );
    }
}
