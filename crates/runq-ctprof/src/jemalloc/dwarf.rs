//! Finds the byte offsets of jemalloc's `thread_allocated` and
//! `thread_deallocated` members of `struct tsd_s` in an executable's DWARF.

use gimli::{EndianSlice, LittleEndian};

use super::elf::Elf;

const PREFIX: &str = "cant_access_tsd_items_directly_use_a_getter_or_setter_";

/// `(thread_allocated, thread_deallocated)` offsets inside `tsd_s`.
pub fn tsd_offsets(elf: &Elf) -> Option<(u64, u64)> {
    let load = |id: gimli::SectionId| -> Result<Vec<u8>, gimli::Error> {
        Ok(elf.section(id.name()).unwrap_or_default())
    };
    let owned = gimli::DwarfSections::load(load).ok()?;
    let dwarf = owned.borrow(|s| EndianSlice::new(s, LittleEndian));
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let mut entries = unit.entries();
        let (mut alloc, mut dealloc) = (None, None);
        while let Ok(Some(e)) = entries.next_dfs() {
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let Some(name) = e.attr_value(gimli::DW_AT_name) else {
                continue;
            };
            let Ok(name) = dwarf.attr_string(&unit, name) else {
                continue;
            };
            let Some(field) = name.slice().strip_prefix(PREFIX.as_bytes()) else {
                continue;
            };
            let loc = e
                .attr_value(gimli::DW_AT_data_member_location)
                .and_then(|v| v.udata_value());
            match field {
                b"thread_allocated" => alloc = loc,
                b"thread_deallocated" => dealloc = loc,
                _ => {}
            }
            if let (Some(a), Some(d)) = (alloc, dealloc) {
                return Some((a, d));
            }
        }
    }
    None
}
