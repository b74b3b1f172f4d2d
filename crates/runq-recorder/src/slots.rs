//! The watched threads' slots as user space sees them. TASKS (the
//! threads' entries, by slot), SLOT_OF (pid → slot, one entry per
//! `pid % PID_SLOTS`) and NEXT_SLOT are `BPF_F_MMAPABLE` arrays, mapped
//! into this process: runq claims a slot for a thread it watches with the
//! same atomics the programs use for the threads watched tasks clone,
//! and reads the entries in place. A pid whose SLOT_OF entry another pid
//! holds has its slot in the SLOT_MORE hash (its entry flagged `MORE`).

use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use aya::maps::{HashMap, Map};
use aya::Ebpf;

use crate::decode::RawTask;
use crate::RecorderError;

/// TASKS' entries (`MAX_SLOTS` in recorder.bpf.c).
const MAX_SLOTS: usize = 16384;
/// SLOT_OF's entries (`PID_SLOTS`).
const PID_SLOTS: usize = 65536;
/// A SLOT_OF entry's low bits: its pid's slot + 1 (0: none).
const SLOT_MASK: u64 = 0x7fff_ffff;
/// Other pids with this SLOT_OF entry are in SLOT_MORE.
const MORE: u64 = 1 << 31;

/// A BPF array mapped into this process, unmapped when dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is shared memory that the kernel keeps alive while
// it is mapped; it is read and written only through atomics and volatile
// accesses, never through references that assume no other writer.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the first `len` bytes of `ebpf`'s array `name`.
    fn of(ebpf: &Ebpf, name: &'static str, len: usize) -> Result<Mapping, RecorderError> {
        let err = |reason: String| RecorderError::Map { map: name, reason };
        let Some(Map::Array(data)) = ebpf.map(name) else {
            return Err(err("not an array in the object".into()));
        };
        let fd = data.fd().as_fd().as_raw_fd();
        // SAFETY: a shared mapping of a BPF_F_MMAPABLE array's fd, of no
        // more than its values' bytes; nothing else is mapped over.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(err(format!("mmap: {}", std::io::Error::last_os_error())));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `of`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// TASKS, SLOT_OF and NEXT_SLOT, mapped.
pub(crate) struct Slots {
    tasks: Mapping,
    slot_of: Mapping,
    next: Mapping,
}

/// Where `pid` says its slot is in a SLOT_OF entry `v`.
enum Entry {
    /// The entry is `pid`'s: its slot.
    Own(u32),
    /// Look in SLOT_MORE.
    More,
    /// No slot.
    None,
}

fn entry_of(v: u64, pid: u32) -> Entry {
    if (v >> 32) as u32 == pid && v & SLOT_MASK != 0 {
        Entry::Own((v & SLOT_MASK) as u32 - 1)
    } else if v & MORE != 0 {
        Entry::More
    } else {
        Entry::None
    }
}

impl Slots {
    /// Maps `ebpf`'s slot arrays.
    pub(crate) fn map(ebpf: &Ebpf) -> Result<Slots, RecorderError> {
        Ok(Slots {
            tasks: Mapping::of(ebpf, "TASKS", MAX_SLOTS * size_of::<RawTask>())?,
            slot_of: Mapping::of(ebpf, "SLOT_OF", PID_SLOTS * 8)?,
            next: Mapping::of(ebpf, "NEXT_SLOT", 8)?,
        })
    }

    /// `pid`'s SLOT_OF entry.
    fn entry(&self, pid: u32) -> &AtomicU64 {
        // SAFETY: within the mapping (an index below PID_SLOTS), 8-byte
        // aligned (the mapping is page aligned), shared only atomically.
        unsafe {
            &*self
                .slot_of
                .ptr
                .cast::<AtomicU64>()
                .add(pid as usize % PID_SLOTS)
        }
    }

    /// The next free slot.
    fn next(&self) -> &AtomicU64 {
        // SAFETY: NEXT_SLOT's one value, page aligned, shared atomically.
        unsafe { &*self.next.ptr.cast::<AtomicU64>() }
    }

    /// Slot `slot`'s entry (below MAX_SLOTS).
    fn task(&self, slot: u32) -> *mut RawTask {
        debug_assert!((slot as usize) < MAX_SLOTS);
        // SAFETY: within the mapping; RawTask's size is TASKS' value size
        // (a multiple of 8), so each entry is aligned.
        unsafe { self.tasks.ptr.cast::<RawTask>().add(slot as usize) }
    }

    /// Watches thread `tid` afresh as a worker (or runq thread) of class
    /// `cls`: a thread a watched task cloned keeps its slot and what it
    /// is doing (running, waiting where) with its figures zeroed; another
    /// gets the next free slot.
    pub(crate) fn watch(&self, ebpf: &mut Ebpf, tid: u32, cls: u32) -> Result<(), RecorderError> {
        let more_err = |e: aya::maps::MapError| RecorderError::Map {
            map: "SLOT_MORE",
            reason: e.to_string(),
        };
        let map = ebpf.map_mut("SLOT_MORE").ok_or(RecorderError::Map {
            map: "SLOT_MORE",
            reason: "not in the object".into(),
        })?;
        let mut more: HashMap<_, u32, u32> = HashMap::try_from(map).map_err(more_err)?;
        let found = match entry_of(self.entry(tid).load(Ordering::Acquire), tid) {
            Entry::Own(slot) => Some(slot),
            Entry::More => more.get(&tid, 0).ok(),
            Entry::None => None,
        };
        if let Some(slot) = found.filter(|&s| (s as usize) < MAX_SLOTS) {
            self.rewatch(slot, tid, cls);
            return Ok(());
        }
        let slot = self.next().fetch_add(1, Ordering::AcqRel);
        if slot as usize >= MAX_SLOTS {
            return Err(RecorderError::Map {
                map: "TASKS",
                reason: format!("no room for more than {MAX_SLOTS} threads"),
            });
        }
        let slot = slot as u32;
        let fresh = RawTask {
            tid,
            worker: tid,
            cls,
            ..RawTask::default()
        };
        // SAFETY: a slot just claimed, which no program touches before
        // SLOT_OF names it.
        unsafe { self.task(slot).write_volatile(fresh) };
        let mine = u64::from(tid) << 32 | (u64::from(slot) + 1);
        let e = self.entry(tid);
        if e.compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            more.insert(tid, slot, 0).map_err(more_err)?;
            e.fetch_or(MORE, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Slot `slot`'s thread `tid` is watched afresh in class `cls`: its
    /// figures are zeroed field by field, leaving alone what the programs
    /// keep of its state (on a CPU since, waiting since and where, its
    /// queue's sums then, its charges not yet in the hashes).
    fn rewatch(&self, slot: u32, tid: u32, cls: u32) {
        let t = self.task(slot);
        // SAFETY: fields of an entry within the mapping, written one by
        // one (the programs may update the others meanwhile).
        unsafe {
            for f in [
                &raw mut (*t).run_ns,
                &raw mut (*t).wait_ns,
                &raw mut (*t).waits,
                &raw mut (*t).max_wait_ns,
                &raw mut (*t).wakeups,
                &raw mut (*t).migrations,
                &raw mut (*t).idle_ns,
                &raw mut (*t).wait_cpus,
            ] {
                f.write_volatile(0);
            }
            for k in 0..crate::decode::CLASSES {
                (&raw mut (*t).held[k]).write_volatile(0);
            }
            (&raw mut (*t).max_wait_cpu).write_volatile(0);
            (&raw mut (*t).worker).write_volatile(tid);
            (&raw mut (*t).cls).write_volatile(cls);
        }
    }

    /// Every filled slot's thread and entry, as they are now.
    pub(crate) fn tasks(&self) -> Vec<(u32, RawTask)> {
        let n = (self.next().load(Ordering::Acquire) as usize).min(MAX_SLOTS);
        (0..n as u32)
            // SAFETY: an entry within the mapping, copied as it is.
            .map(|s| unsafe { self.task(s).read_volatile() })
            .filter(|t| t.tid != 0)
            .map(|t| (t.tid, t))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_names_its_own_pid_or_sends_to_slot_more() {
        let v = 70_000u64 << 32 | 5;
        assert!(matches!(entry_of(v, 70_000), Entry::Own(4)));
        assert!(matches!(entry_of(v, 70_000 - 65_536), Entry::None));
        assert!(matches!(entry_of(v | MORE, 4_464), Entry::More));
        assert!(matches!(entry_of(v | MORE, 70_000), Entry::Own(4)));
        assert!(matches!(entry_of(0, 0), Entry::None), "the idle task");
    }

    /// As root: two pids that share a SLOT_OF entry (65536 apart, above
    /// any pid the kernel gives) each get a slot of their own, the second
    /// through SLOT_MORE, and watching either afresh finds its slot.
    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn pids_that_share_an_entry_each_get_their_own_slot() {
        use runq_kernel::task_record::class_of_group;
        let mut rec = crate::Recorder::start().expect("the recorder starts as root");
        let a = 4_194_304 + 7;
        let b = a + PID_SLOTS as u32;
        rec.watch(a, 0).unwrap();
        rec.watch(b, 1).unwrap();
        let classes = |rec: &crate::Recorder| {
            let tasks = rec.slots.tasks();
            let mine: Vec<(u32, u32)> = tasks
                .iter()
                .filter(|(t, _)| [a, b].contains(t))
                .map(|(t, s)| (*t, s.cls))
                .collect();
            mine
        };
        assert_eq!(
            classes(&rec),
            [(a, class_of_group(0)), (b, class_of_group(1))]
        );
        let e = rec.slots.entry(b).load(Ordering::Acquire);
        assert_eq!((e >> 32, e & MORE), (u64::from(a), MORE));
        rec.insert(b, class_of_group(2)).unwrap();
        rec.insert(a, class_of_group(3)).unwrap();
        assert_eq!(
            classes(&rec),
            [(a, class_of_group(3)), (b, class_of_group(2))],
            "watched afresh in the same slots"
        );
    }
}
