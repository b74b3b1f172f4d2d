//! Dumps of the BPF maps a running process holds, each entry formatted
//! through the map's BTF: what a sched_ext scheduler's maps held when it
//! failed (as `bpftool map dump` shows them).
//!
//! [`map_ids_of`] lists the maps a process holds open (from its `fdinfo`
//! files, no privilege beyond reading them); [`HeldMap::open`] takes a
//! descriptor of one by id, which needs `CAP_SYS_ADMIN`, and keeps the map
//! alive after its process exits; [`HeldMap::dump`] reads its entries and
//! [`render`] lays the dumps out as a text section.

mod btf;
mod dump;
mod format;
mod sys;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// `BPF_MAP_TYPE_STRUCT_OPS`: a scheduler's callbacks. [`hold_maps_of`]
/// never holds one, since a held struct_ops map could keep a scheduler
/// registered after its process died.
const STRUCT_OPS: u32 = 26;

/// The ids of the BPF maps process `pid` holds open, from
/// `<proc_root>/<pid>/fdinfo/*` lines `map_id:\t<N>` (deduplicated,
/// sorted). A descriptor closed while the directory is read is skipped.
pub fn map_ids_of(proc_root: &Path, pid: u32) -> io::Result<Vec<u32>> {
    Ok(fdinfo_maps(proc_root, pid)?.into_keys().collect())
}

/// The maps named in a process's fdinfo files, each with its type when a
/// file gives one (a map's does; a struct_ops link's names only the id).
fn fdinfo_maps(proc_root: &Path, pid: u32) -> io::Result<BTreeMap<u32, Option<u32>>> {
    let dir = proc_root.join(pid.to_string()).join("fdinfo");
    let entries = fs::read_dir(&dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    let mut maps = BTreeMap::new();
    for entry in entries.flatten() {
        let Ok(text) = fs::read_to_string(entry.path()) else {
            continue;
        };
        if let Some((id, map_type)) = parse_fdinfo(&text) {
            let slot = maps.entry(id).or_insert(None);
            if map_type.is_some() {
                *slot = map_type;
            }
        }
    }
    Ok(maps)
}

/// The `map_id` and `map_type` of one fdinfo file, if it names a map.
fn parse_fdinfo(text: &str) -> Option<(u32, Option<u32>)> {
    let field = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|value| value.trim().parse().ok())
    };
    Some((field("map_id:")?, field("map_type:")))
}

/// What the kernel says of a map (`struct bpf_map_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapInfo {
    /// Its id.
    pub id: u32,
    /// Its name (at most 15 bytes, as the loader set it).
    pub name: String,
    /// Its `BPF_MAP_TYPE_*`.
    pub map_type: u32,
    /// Bytes of a key.
    pub key_size: u32,
    /// Bytes of a value (of one CPU's value for a per-CPU map).
    pub value_size: u32,
    /// Its capacity.
    pub max_entries: u32,
    /// The id of its BTF object; 0 when it has none.
    pub btf_id: u32,
    /// The BTF type of its keys; 0 when none.
    pub btf_key_type_id: u32,
    /// The BTF type of its values; 0 when none.
    pub btf_value_type_id: u32,
}

/// A BPF map held open by id (so it outlives the process that created
/// it), with its info.
#[derive(Debug)]
pub struct HeldMap {
    fd: OwnedFd,
    info: MapInfo,
}

impl HeldMap {
    /// Opens map `id` (read-only); errors say why (e.g. needs
    /// CAP_SYS_ADMIN / root, no such map).
    pub fn open(id: u32) -> io::Result<HeldMap> {
        let fd = sys::map_fd_by_id(id).map_err(|e| {
            let why = match e.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => {
                    "permission denied (opening a BPF map by id needs CAP_SYS_ADMIN: run as root)"
                        .to_string()
                }
                Some(libc::ENOENT) => "no such map (it has been freed)".to_string(),
                _ => e.to_string(),
            };
            io::Error::new(e.kind(), format!("opening BPF map {id}: {why}"))
        })?;
        let info = sys::map_info(fd.as_fd()).map_err(|e| {
            io::Error::new(e.kind(), format!("reading the info of BPF map {id}: {e}"))
        })?;
        Ok(HeldMap { fd, info })
    }

    /// What the kernel says of the map.
    pub fn info(&self) -> &MapInfo {
        &self.info
    }

    /// Reads up to `max_entries` entries, each formatted through the map's
    /// BTF (hex bytes when it has none). Array maps list only entries
    /// whose value is not all zero.
    pub fn dump(&self, max_entries: usize) -> MapDump {
        dump::dump(self.fd.as_fd(), &self.info, max_entries)
    }
}

/// Holds every map of `pid` except struct_ops maps (type 26,
/// `BPF_MAP_TYPE_STRUCT_OPS`: holding one could keep a scheduler
/// registered after its process died); and the errors of the maps it
/// could not open (or of listing them), as sentences.
pub fn hold_maps_of(proc_root: &Path, pid: u32) -> (Vec<HeldMap>, Vec<String>) {
    let maps = match fdinfo_maps(proc_root, pid) {
        Ok(maps) => maps,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!("listing the BPF maps of process {pid}: {e}")],
            )
        }
    };
    let mut held = Vec::new();
    let mut errors = Vec::new();
    for (id, map_type) in maps {
        if map_type == Some(STRUCT_OPS) {
            continue;
        }
        match HeldMap::open(id) {
            // Named only by a link's fdinfo: let go at once.
            Ok(map) if map.info.map_type == STRUCT_OPS => {}
            Ok(map) => held.push(map),
            Err(e) => errors.push(e.to_string()),
        }
    }
    (held, errors)
}

/// One map's contents as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapDump {
    /// The map's id.
    pub id: u32,
    /// The map's name.
    pub name: String,
    /// Its type as bpftool names it: "hash", "array", "percpu_array", ...
    pub kind: String,
    /// Its capacity.
    pub max_entries: u32,
    /// One "key: value" string per entry shown, the value on one line.
    pub entries: Vec<String>,
    /// How many entries are shown (`entries.len()`).
    pub shown: usize,
    /// Entries seen, may exceed `shown` (for an array: every index,
    /// all-zero ones included).
    pub total: usize,
    /// Why the contents cannot be read this way (ringbuf,
    /// perf_event_array, prog_array, task/inode/cgroup storage, arena,
    /// queue/stack), or the syscall error that stopped the reading.
    pub unreadable: Option<String>,
}

/// Whether a map of this kind lists only the entries whose value is not
/// all zero.
fn lists_nonzero_only(kind: &str) -> bool {
    kind == "array" || kind == "percpu_array"
}

/// The dumps as a text section: per map a header line
/// `map <id> <name> (<kind>, <max_entries> max): <total> entries`, then
/// the entries indented, and `... N more` when truncated. A map that could
/// not be read at all says why in its header; one whose reading stopped
/// part way says why after its entries.
pub fn render(dumps: &[MapDump]) -> String {
    let mut out = String::new();
    for d in dumps {
        let _ = write!(out, "map {}", d.id);
        if !d.name.is_empty() {
            let _ = write!(out, " {}", d.name);
        }
        let _ = write!(out, " ({}, {} max): ", d.kind, d.max_entries);
        if let (Some(why), 0) = (&d.unreadable, d.total) {
            let _ = writeln!(out, "not readable: {why}");
            continue;
        }
        let noun = if d.total == 1 { "entry" } else { "entries" };
        let _ = writeln!(out, "{} {noun}", d.total);
        for entry in &d.entries {
            let _ = writeln!(out, "  {entry}");
        }
        let more = d.total.saturating_sub(d.shown);
        if more > 0 && lists_nonzero_only(&d.kind) {
            let _ = writeln!(out, "  ... {more} more (all-zero values are not listed)");
        } else if more > 0 {
            let _ = writeln!(out, "  ... {more} more");
        }
        if let Some(why) = &d.unreadable {
            let _ = writeln!(out, "  stopped: {why}");
        }
    }
    out
}
