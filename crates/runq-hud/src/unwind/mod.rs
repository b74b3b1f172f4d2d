//! Stacks without frame pointers: the kernel copies a worker's user
//! registers and the top of its stack ([`StackCopy`]), and this module
//! unwinds them with the mapped objects' DWARF CFI, using framehop (the
//! unwinder samply uses; it reads `.eh_frame` through `.eh_frame_hdr`, falls
//! back to frame pointers where an address has no CFI, and caches rules per
//! address). It also judges, per object, whether its code keeps frame
//! pointers, which decides how hud asks the kernel for stacks.

pub mod object;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{
    Error as FrameError, ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _,
};
use serde::{Deserialize, Serialize};

use crate::event::StackCopy;
use crate::mapped::MappedFile;
use crate::symbols::maps::{read_code_mappings, CodeMapping};
pub use object::{ObjectInfo, UnwindMethod};

/// Unwinding stops after this many frames (a loop guard; real stacks are
/// far shorter).
const MAX_UNWIND_FRAMES: usize = 512;

/// The memory map is re-read at most this often when an address falls
/// outside every known object.
const MAPS_REFRESH: Duration = Duration::from_millis(500);

/// How one copied stack ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwindEnd {
    /// The unwinder reached the stack's root.
    Complete,
    /// The next frame lies beyond the bytes the kernel copied.
    CopyTooShort,
    /// Unwinding could not go on (no unwind info for an address, a
    /// corrupt or unknown frame).
    Stopped,
}

/// What the unwinder did over a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnwindStats {
    /// Copied stacks unwound.
    pub stacks: u64,
    /// Frames they gave.
    pub frames: u64,
    /// Stacks unwound to their root.
    pub complete: u64,
    /// Stacks whose next frame lay past the copied bytes.
    pub copy_too_short: u64,
    /// Stacks whose unwinding stopped early for another reason.
    pub stopped: u64,
    /// Events for which the kernel could copy no stack (or no registers).
    pub copy_failed: u64,
    /// Bytes of user stack the kernel copied.
    pub bytes_copied: u64,
}

/// One object of the target, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectUnwind {
    /// Its path (or `[vdso]`).
    pub path: String,
    /// How its frames are walked.
    pub method: UnwindMethod,
}

/// A code mapping placed in the unwinder.
struct Placed {
    range: Range<u64>,
    path: Arc<str>,
    frame_pointers: bool,
}

/// A DWARF unwinder for one process.
pub struct Unwinder {
    proc_root: PathBuf,
    pid: u32,
    inner: UnwinderX86_64<Arc<[u8]>>,
    cache: CacheX86_64,
    placed: Vec<Placed>,
    objects: HashMap<String, Option<ObjectInfo>>,
    seen: BTreeSet<Arc<str>>,
    maps_read: Option<Instant>,
    /// What it did.
    pub stats: UnwindStats,
}

/// The C runtime's objects and the vDSO: their frames on a worker's stack
/// are leaf system-call wrappers (or unwinding itself, libgcc_s), which a
/// frame-pointer walk crosses.
fn is_c_runtime(name: &str) -> bool {
    [
        "libc.so",
        "libc-",
        "libm.so",
        "libpthread",
        "libdl",
        "librt",
        "libgcc_s",
        "ld-linux",
        "linux-vdso",
        "[vdso]",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

impl Unwinder {
    /// An unwinder for `pid`, with every code object mapped now.
    pub fn new(proc_root: &Path, pid: u32) -> Self {
        let mut u = Unwinder {
            proc_root: proc_root.to_path_buf(),
            pid,
            inner: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            placed: Vec::new(),
            objects: HashMap::new(),
            seen: BTreeSet::new(),
            maps_read: None,
            stats: UnwindStats::default(),
        };
        u.refresh();
        u
    }

    /// How the target's executable keeps its frames (`None` when it could
    /// not be read).
    pub fn executable_method(&mut self) -> Option<UnwindMethod> {
        let exe = std::fs::read_link(self.proc_root.join(format!("{}/exe", self.pid))).ok()?;
        let exe = exe.to_string_lossy();
        let exe = exe.trim_end_matches(" (deleted)");
        self.objects.get(exe)?.as_ref().map(ObjectInfo::method)
    }

    /// The mapped objects, other than the C runtime's, that keep no frame
    /// pointers but have unwind info (file names, sorted): a frame-pointer
    /// walk through them stops there (libz's deflate, say), while the C
    /// runtime's leaf system-call wrappers leave the chain intact.
    pub fn objects_without_frame_pointers(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .objects
            .iter()
            .filter(|(_, info)| {
                info.as_ref()
                    .is_some_and(|i| i.method() == UnwindMethod::DwarfCfi)
            })
            .map(|(path, _)| path.rsplit('/').next().unwrap_or(path).to_string())
            .filter(|name| !is_c_runtime(name))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Re-reads the memory map and places objects not yet known.
    fn refresh(&mut self) {
        self.maps_read = Some(Instant::now());
        let Ok(mappings) = read_code_mappings(&self.proc_root, self.pid) else {
            return;
        };
        for m in mappings {
            if self.placed.iter().any(|p| p.range.start == m.start) {
                continue;
            }
            self.place(&m);
        }
        self.placed.sort_by_key(|p| p.range.start);
    }

    /// Reads the object behind a mapping (once per path) and adds it.
    fn place(&mut self, m: &CodeMapping) {
        let key = m.path.trim_end_matches(" (deleted)").to_string();
        if !self.objects.contains_key(&key) {
            let info = self.read_object(m);
            self.objects.insert(key.clone(), info);
        }
        let Some(Some(info)) = self.objects.get(&key) else {
            return;
        };
        let svma = if m.path.starts_with('/') {
            info.svma_of_offset(m.offset)
        } else {
            // The vDSO is mapped whole from its first byte.
            info.svma_of_offset(0)
        };
        let Some(svma) = svma else {
            return;
        };
        let base = m.start.wrapping_sub(svma);
        let module = Module::new(key.clone(), m.start..m.end, base, section_info(info));
        self.inner.add_module(module);
        self.placed.push(Placed {
            range: m.start..m.end,
            path: Arc::from(key.as_str()),
            frame_pointers: info.frame_pointers == Some(true),
        });
    }

    /// What the unwinder needs of a mapped object: the file, mapped
    /// through map_files (which reaches other mount namespaces and deleted
    /// files), or for the vDSO the mapping's memory.
    fn read_object(&self, m: &CodeMapping) -> Option<ObjectInfo> {
        let dir = self.proc_root.join(self.pid.to_string());
        if m.path.starts_with('/') {
            let path = dir.join(format!("map_files/{:x}-{:x}", m.start, m.end));
            return ObjectInfo::parse(&MappedFile::open(&path).ok()?).ok();
        }
        if m.path != "[vdso]" {
            return None;
        }
        let mem = std::fs::File::open(dir.join("mem")).ok()?;
        let mut buf = vec![0u8; usize::try_from(m.end - m.start).ok()?];
        mem.read_exact_at(&mut buf, m.start).ok()?;
        ObjectInfo::parse(&buf).ok()
    }

    fn placed_at(&self, addr: u64) -> Option<&Placed> {
        let i = self.placed.partition_point(|p| p.range.start <= addr);
        let p = self.placed.get(i.checked_sub(1)?)?;
        p.range.contains(&addr).then_some(p)
    }

    fn refresh_if_unknown(&mut self, addr: u64) {
        let stale = self.maps_read.is_none_or(|t| t.elapsed() >= MAPS_REFRESH);
        if self.placed_at(addr).is_none() && stale {
            self.refresh();
        }
    }

    /// Unwinds a copied stack: the instruction pointer, then return
    /// addresses, innermost first (the kernel's frame-pointer layout).
    pub fn unwind(&mut self, copy: &StackCopy) -> (Vec<u64>, UnwindEnd) {
        self.refresh_if_unknown(copy.ip);
        self.stats.stacks += 1;
        self.stats.bytes_copied += copy.bytes.len() as u64;
        let regs = UnwindRegsX86_64::new(copy.ip, copy.sp, copy.bp);
        let mut read = |addr: u64| copy.word_at(addr).ok_or(());
        let mut iter = self
            .inner
            .iter_frames(copy.ip, regs, &mut self.cache, &mut read);
        let mut frames = Vec::new();
        let end = loop {
            if frames.len() >= MAX_UNWIND_FRAMES {
                break UnwindEnd::Stopped;
            }
            match iter.next() {
                Ok(Some(f)) => frames.push(match f {
                    FrameAddress::InstructionPointer(a) => a,
                    FrameAddress::ReturnAddress(a) => a.get(),
                }),
                Ok(None) => break UnwindEnd::Complete,
                Err(FrameError::CouldNotReadStack(a)) if a >= copy.sp => {
                    break UnwindEnd::CopyTooShort
                }
                Err(_) => break UnwindEnd::Stopped,
            }
        };
        self.tally(&frames, end);
        (frames, end)
    }

    fn tally(&mut self, frames: &[u64], end: UnwindEnd) {
        self.stats.frames += frames.len() as u64;
        match end {
            UnwindEnd::Complete => self.stats.complete += 1,
            UnwindEnd::CopyTooShort => self.stats.copy_too_short += 1,
            UnwindEnd::Stopped => self.stats.stopped += 1,
        }
        self.note_objects(frames);
    }

    /// Notes the objects a stack passes through (for the report's list).
    pub fn note_objects(&mut self, frames: &[u64]) {
        for a in frames {
            if let Some(p) = self.placed_at(*a) {
                if !self.seen.contains(&p.path) {
                    self.seen.insert(p.path.clone());
                }
            }
        }
    }

    /// Counts an event whose stack the kernel could not copy.
    pub fn count_copy_failure(&mut self, copy: Option<&StackCopy>) {
        self.stats.copy_failed += 1;
        self.stats.bytes_copied += copy.map_or(0, |c| c.bytes.len() as u64);
    }

    /// How many frames of a kernel frame-pointer walk can be trusted: a
    /// frame's caller is only right when the frame's own object keeps
    /// frame pointers.
    pub fn trusted_fp_prefix(&mut self, stack: &[u64]) -> usize {
        if let Some(a) = stack.first() {
            self.refresh_if_unknown(*a);
        }
        let mut n = 0;
        for a in stack {
            n += 1;
            if !self.placed_at(*a).is_some_and(|p| p.frame_pointers) {
                break;
            }
        }
        n
    }

    /// The objects that appeared in unwound stacks, with their methods.
    pub fn objects_seen(&self) -> Vec<ObjectUnwind> {
        let mut out: BTreeMap<&str, UnwindMethod> = BTreeMap::new();
        for path in &self.seen {
            let method = self
                .objects
                .get(&**path)
                .and_then(|o| o.as_ref())
                .map_or(UnwindMethod::None, ObjectInfo::method);
            out.insert(path, method);
        }
        out.into_iter()
            .map(|(path, method)| ObjectUnwind {
                path: path.to_string(),
                method,
            })
            .collect()
    }
}

/// framehop's view of an object's sections.
fn section_info(info: &ObjectInfo) -> ExplicitModuleSectionInfo<Arc<[u8]>> {
    let svma = |s: &Option<object::Section>| s.as_ref().map(|s| s.svma.clone());
    let data = |s: &Option<object::Section>| s.as_ref().map(|s| s.data.clone());
    // framehop reads the code itself only for Mach-O and PE objects.
    ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: info.text.clone(),
        text: None,
        got_svma: info.got.clone(),
        eh_frame_svma: svma(&info.eh_frame),
        eh_frame: data(&info.eh_frame),
        eh_frame_hdr_svma: svma(&info.eh_frame_hdr),
        eh_frame_hdr: data(&info.eh_frame_hdr),
        debug_frame: data(&info.debug_frame),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
