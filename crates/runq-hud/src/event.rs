//! Events from the BPF ring buffer, decoded from the C layout of
//! `struct event` in bpf/hud.bpf.c: a fixed header with a frame-pointer
//! stack, followed in copy mode by the user registers' stack bytes.

/// Frames a frame-pointer stack can hold (MAX_FRAMES in the C source).
pub const MAX_FRAMES: usize = 127;
/// Size of the fixed part of one record.
pub const EVENT_SIZE: usize = HEADER_SIZE + 8 * MAX_FRAMES;
const HEADER_SIZE: usize = 80;

const F_TRUNCATED: u32 = 1;
const F_COPY_FAILED: u32 = 2;
const F_NO_REGS: u32 = 4;

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
    /// Copy mode: registers and stack bytes to unwind.
    pub copy: Option<StackCopy>,
    /// Copy mode: the kernel could not copy the stack or read the registers.
    pub copy_failed: bool,
    /// How often the worker had left the CPU when the event was recorded.
    pub switches: u64,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// The copied registers and stack bytes of a copy-mode record.
fn decode_copy(b: &[u8], flags: u32) -> Option<StackCopy> {
    let len = u32_at(b, 64)? as usize;
    if len == 0 && flags & (F_COPY_FAILED | F_NO_REGS) == 0 {
        return None;
    }
    // A record cut short keeps what arrived; unwinding stops where it ends.
    let end = b.len().min(EVENT_SIZE + len);
    let bytes = b[EVENT_SIZE..end].to_vec();
    Some(StackCopy {
        ip: u64_at(b, 40)?,
        sp: u64_at(b, 48)?,
        bp: u64_at(b, 56)?,
        bytes,
    })
}

/// Decodes one record; `None` for a short buffer or an unknown kind.
pub fn decode(b: &[u8]) -> Option<RawEvent> {
    if b.len() < EVENT_SIZE {
        return None;
    }
    let kind = match u32_at(b, 0)? {
        1 => Kind::Blocked,
        2 => Kind::RunQueue,
        3 => Kind::Sample,
        _ => return None,
    };
    let frames = (u32_at(b, 36)? as usize).min(MAX_FRAMES);
    let flags = u32_at(b, 68)?;
    let stack = (0..frames)
        .filter_map(|i| u64_at(b, HEADER_SIZE + 8 * i))
        .filter(|a| *a != 0)
        .collect();
    Some(RawEvent {
        kind,
        tid: u32_at(b, 4)?,
        start_ns: u64_at(b, 8)?,
        duration_ns: u64_at(b, 16)?,
        state: u64_at(b, 24)?,
        cpu: u32_at(b, 32)?,
        stack,
        truncated: flags & F_TRUNCATED != 0,
        copy: decode_copy(b, flags),
        copy_failed: flags & (F_COPY_FAILED | F_NO_REGS) != 0,
        switches: u64_at(b, 72)?,
    })
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
}
