//! Reading one held map's entries into a [`MapDump`]: arrays by index
//! (listing only values that are not all zero), every other readable
//! kind by walking its keys; per-CPU values one slot per possible CPU.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use super::btf::{self, Btf};
use super::format::format;
use super::{sys, MapDump, MapInfo};

/// Where the kernel lists the CPUs a per-CPU value has a slot for.
const POSSIBLE_CPUS: &str = "/sys/devices/system/cpu/possible";

/// The map kinds by `BPF_MAP_TYPE_*` number, as bpftool names them.
const KINDS: [&str; 34] = [
    "unspec",
    "hash",
    "array",
    "prog_array",
    "perf_event_array",
    "percpu_hash",
    "percpu_array",
    "stack_trace",
    "cgroup_array",
    "lru_hash",
    "lru_percpu_hash",
    "lpm_trie",
    "array_of_maps",
    "hash_of_maps",
    "devmap",
    "sockmap",
    "cpumap",
    "xskmap",
    "sockhash",
    "cgroup_storage",
    "reuseport_sockarray",
    "percpu_cgroup_storage",
    "queue",
    "stack",
    "sk_storage",
    "devmap_hash",
    "struct_ops",
    "ringbuf",
    "inode_storage",
    "task_storage",
    "bloom_filter",
    "user_ringbuf",
    "cgrp_storage",
    "arena",
];

/// The kind name of map type `map_type`.
pub(super) fn kind_name(map_type: u32) -> String {
    match KINDS.get(map_type as usize) {
        Some(name) => (*name).to_string(),
        None => format!("type {map_type}"),
    }
}

/// Why a map of this type is not read by key and value, if it is not.
///
/// The readable types are listed, not guessed: a lookup's copy is the
/// value size, or one value per possible CPU for [`is_percpu`] types, and
/// a type this list does not know might copy more.
fn unreadable_reason(map_type: u32) -> Option<String> {
    let why = match map_type {
        1 | 2 | 5..=7 | 9..=14 | 16 | 19 | 21 | 25 => return None,
        3 => "a program array holds programs, not data",
        4 => "a perf event array holds perf events; its records go to perf buffers",
        8 => "a cgroup array holds cgroups, not data",
        15 | 17 | 18 | 20 => "it holds sockets, not data",
        22 | 23 => "a queue or stack has no keys; reading it would pop its head",
        24 | 28 | 29 | 32 => {
            "local storage is found through the socket, inode, task or cgroup it belongs to, not by key"
        }
        26 => "a struct_ops map holds a scheduler's callbacks, not data",
        27 | 31 => "a ring buffer's records are consumed through its mapping, not looked up by key",
        30 => "a bloom filter has no keys to list",
        33 => "an arena is memory-mapped pages, not key/value entries",
        other => return Some(format!("map type {other} is not known to this dumper")),
    };
    Some(why.to_string())
}

/// Whether lookups copy one value per possible CPU.
fn is_percpu(map_type: u32) -> bool {
    matches!(map_type, 5 | 6 | 10 | 21)
}

/// Whether the map is an array listed by index (only non-zero values).
fn is_array(map_type: u32) -> bool {
    matches!(map_type, 2 | 6)
}

/// The possible CPUs, in the order of a per-CPU value's slots.
fn possible_cpus() -> Result<Vec<usize>, String> {
    let text = std::fs::read_to_string(POSSIBLE_CPUS).map_err(|e| e.to_string())?;
    let cpus = crate::cpulist::parse_cpu_list(&text).map_err(|e| e.to_string())?;
    if cpus.is_empty() {
        return Err("no CPU listed".to_string());
    }
    Ok(cpus.into_iter().collect())
}

/// The map's BTF, when it has some and it parses.
fn load_btf(id: u32) -> Option<Btf> {
    if id == 0 {
        return None;
    }
    let fd = sys::btf_fd_by_id(id).ok()?;
    btf::parse(&sys::btf_data(fd.as_fd()).ok()?).ok()
}

/// Reads map `info` through `fd` into a dump of at most `max` entries.
pub(super) fn dump(fd: BorrowedFd<'_>, info: &MapInfo, max: usize) -> MapDump {
    let mut d = MapDump {
        id: info.id,
        name: info.name.clone(),
        kind: kind_name(info.map_type),
        max_entries: info.max_entries,
        ..MapDump::default()
    };
    if let Some(why) = unreadable_reason(info.map_type) {
        d.unreadable = Some(why);
        return d;
    }
    let cpus = if is_percpu(info.map_type) {
        match possible_cpus() {
            Ok(cpus) => Some(cpus),
            Err(e) => {
                d.unreadable = Some(format!("sizing its per-CPU values: {POSSIBLE_CPUS}: {e}"));
                return d;
            }
        }
    } else {
        None
    };
    let reader = Reader {
        fd,
        info,
        btf: load_btf(info.btf_id),
        cpus,
    };
    let read = if is_array(info.map_type) && info.key_size == 4 {
        reader.by_index(&mut d, max)
    } else {
        reader.by_key(&mut d, max)
    };
    if let Err(e) = read {
        d.unreadable = Some(format!("reading its entries: {e}"));
    }
    d.shown = d.entries.len();
    d
}

/// One map being read.
struct Reader<'a> {
    fd: BorrowedFd<'a>,
    info: &'a MapInfo,
    btf: Option<Btf>,
    /// The possible CPUs, for a per-CPU map.
    cpus: Option<Vec<usize>>,
}

impl Reader<'_> {
    /// Bytes between two CPUs' values in a per-CPU copy.
    fn stride(&self) -> usize {
        (self.info.value_size as usize).next_multiple_of(8).max(8)
    }

    /// A buffer one lookup's copy fits in.
    fn value_buffer(&self) -> Vec<u8> {
        let len = match &self.cpus {
            Some(cpus) => self.stride() * cpus.len(),
            None => (self.info.value_size as usize).max(8),
        };
        vec![0u8; len]
    }

    /// An array's non-zero entries, index by index.
    fn by_index(&self, d: &mut MapDump, max: usize) -> io::Result<()> {
        let mut value = self.value_buffer();
        d.total = self.info.max_entries as usize;
        for index in 0..self.info.max_entries {
            if d.entries.len() >= max {
                break;
            }
            let key = index.to_ne_bytes();
            // SAFETY: the key is 4 bytes, the map's key size (checked by
            // the caller); `value` holds one lookup's copy.
            if !unsafe { sys::lookup(self.fd, &key, &mut value) }? {
                continue;
            }
            if let Some(text) = self.value_text(&value) {
                d.entries.push(format!("{}: {text}", self.key_text(&key)));
            }
        }
        Ok(())
    }

    /// Walks the keys, looking up the first `max` and counting the rest.
    fn by_key(&self, d: &mut MapDump, max: usize) -> io::Result<()> {
        let size = self.info.key_size as usize;
        let (mut key, mut next) = (vec![0u8; size], vec![0u8; size]);
        let mut value = self.value_buffer();
        let mut first = true;
        // A key deleted under the walk restarts it: bound the steps.
        for _ in 0..=self.info.max_entries {
            // SAFETY: both key buffers are the map's key size long.
            if !unsafe { sys::next_key(self.fd, (!first).then_some(&key[..]), &mut next) }? {
                break;
            }
            first = false;
            std::mem::swap(&mut key, &mut next);
            if d.entries.len() >= max {
                d.total += 1;
                continue;
            }
            // SAFETY: `key` is the map's key size long; `value` holds one
            // lookup's copy.
            if unsafe { sys::lookup(self.fd, &key, &mut value) }? {
                d.total += 1;
                let text = self.value_text(&value).unwrap_or_else(|| self.zero_text());
                d.entries.push(format!("{}: {text}", self.key_text(&key)));
            }
        }
        Ok(())
    }

    /// A key through the key's BTF type; an array index without one.
    fn key_text(&self, key: &[u8]) -> String {
        match key {
            [a, b, c, d] if self.info.btf_key_type_id == 0 && is_array(self.info.map_type) => {
                u32::from_ne_bytes([*a, *b, *c, *d]).to_string()
            }
            _ => format(self.btf.as_ref(), self.info.btf_key_type_id, key),
        }
    }

    /// A value copy as text; `None` when it is all zero.
    fn value_text(&self, copy: &[u8]) -> Option<String> {
        let size = self.info.value_size as usize;
        let Some(cpus) = &self.cpus else {
            let value = &copy[..size.min(copy.len())];
            return value.iter().any(|&b| b != 0).then(|| self.value_of(value));
        };
        let mut parts = Vec::new();
        for (slot, cpu) in copy.chunks(self.stride()).zip(cpus) {
            let value = &slot[..size.min(slot.len())];
            if value.iter().any(|&b| b != 0) {
                parts.push(format!("cpu{cpu}: {}", self.value_of(value)));
            }
        }
        (!parts.is_empty()).then(|| format!("{{{}}}", parts.join(", ")))
    }

    /// An all-zero value as text (a hash entry is shown even then).
    fn zero_text(&self) -> String {
        match self.cpus {
            Some(_) => "all zero".to_string(),
            None => self.value_of(&vec![0u8; self.info.value_size as usize]),
        }
    }

    /// One value (one CPU's) through the value's BTF type.
    fn value_of(&self, value: &[u8]) -> String {
        format(self.btf.as_ref(), self.info.btf_value_type_id, value)
    }
}
