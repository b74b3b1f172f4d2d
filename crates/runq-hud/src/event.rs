//! Events from the BPF ring buffer, decoded from the C layout of
//! `struct event` in bpf/hud.bpf.c.

/// Frames a stack can hold (MAX_FRAMES in the C source).
pub const MAX_FRAMES: usize = 64;
/// Size of one record.
pub const EVENT_SIZE: usize = 40 + 8 * MAX_FRAMES;

/// What the kernel saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A worker slept (S or D) longer than the threshold.
    Blocked,
    /// A worker was runnable but waited for a CPU longer than the threshold.
    RunQueue,
    /// A cpu-clock sample of a running worker.
    Sample,
}

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// User stack, innermost frame first (return addresses).
    pub stack: Vec<u64>,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
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
    let stack = (0..frames)
        .filter_map(|i| u64_at(b, 40 + 8 * i))
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u32, frames: u32, stack: &[u64]) -> Vec<u8> {
        let mut b = vec![0u8; EVENT_SIZE];
        b[0..4].copy_from_slice(&kind.to_ne_bytes());
        b[4..8].copy_from_slice(&42u32.to_ne_bytes());
        b[8..16].copy_from_slice(&1000u64.to_ne_bytes());
        b[16..24].copy_from_slice(&7_000_000u64.to_ne_bytes());
        b[24..32].copy_from_slice(&1u64.to_ne_bytes());
        b[32..36].copy_from_slice(&1u32.to_ne_bytes());
        b[36..40].copy_from_slice(&frames.to_ne_bytes());
        for (i, a) in stack.iter().enumerate() {
            b[40 + 8 * i..48 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
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
    }

    #[test]
    fn rejects_short_and_unknown_records_and_clamps_frames() {
        assert!(decode(&[0u8; 10]).is_none());
        assert!(decode(&record(9, 0, &[])).is_none());
        let e = decode(&record(3, 1000, &[0x10])).unwrap();
        assert_eq!(e.stack, vec![0x10], "zero frames dropped, count clamped");
    }
}
