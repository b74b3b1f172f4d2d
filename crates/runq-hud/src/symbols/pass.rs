//! One symbolization pass over a batch of addresses, one blazesym call
//! per object. An object whose DWARF cannot be read (a system library
//! whose `.gnu_debuglink` names a debug file that does not fit) fails
//! every DWARF lookup, each of which re-reads and checksums the debug
//! file: the first failure is remembered, and the object's later DWARF
//! lookups are skipped (its symbol table still names its functions).

use std::collections::BTreeMap;

use blazesym::symbolize::source::{Elf, Process, Source};
use blazesym::symbolize::{Input, Reason, Symbolized};
use blazesym::Pid;

use super::Symbols;

impl Symbols {
    /// One symbolization pass; `debug` selects DWARF (file:line, inlined
    /// frames, short names) over the symbol tables (qualified names).
    /// Addresses are grouped by object and looked up by file offset, one
    /// batch per object; what has no object (the vDSO) goes through
    /// blazesym's view of the process.
    pub(super) fn pass(&self, lookup: &[u64], debug: bool) -> Vec<Option<Symbolized<'_>>> {
        let mut groups: BTreeMap<Option<usize>, Vec<usize>> = BTreeMap::new();
        for (i, a) in lookup.iter().enumerate() {
            groups.entry(self.mapping_of(*a)).or_default().push(i);
        }
        let mut out: Vec<Option<Symbolized<'_>>> = (0..lookup.len()).map(|_| None).collect();
        for (mapping, idx) in groups {
            let results = match mapping {
                Some(k) => self.object_pass(k, &idx, lookup, debug),
                None => {
                    let mut src = Process::new(Pid::from(self.pid));
                    src.debug_syms = debug;
                    src.perf_map = false;
                    let addrs: Vec<u64> = idx.iter().map(|i| lookup[*i]).collect();
                    self.batch(&Source::Process(src), Input::AbsAddr(&addrs))
                }
            };
            for (i, r) in idx.into_iter().zip(results) {
                out[i] = Some(r);
            }
        }
        out
    }

    /// The pass over the addresses `idx` of `lookup` in mapping `k`; a
    /// DWARF pass over an object whose DWARF failed before is skipped.
    fn object_pass(
        &self,
        k: usize,
        idx: &[usize],
        lookup: &[u64],
        debug: bool,
    ) -> Vec<Symbolized<'_>> {
        let m = &self.mappings[k];
        let failed = || vec![Symbolized::Unknown(Reason::IgnoredError); idx.len()];
        if debug && self.no_dwarf.borrow().contains(&m.path) {
            return failed();
        }
        let mut elf = Elf::new(self.object_path(m));
        elf.debug_syms = debug;
        let offsets: Vec<u64> = idx.iter().map(|i| m.file_offset(lookup[*i])).collect();
        let results = match self.virt_offsets(m, &offsets) {
            Some(virt) => self.batch(&Source::Elf(elf), Input::VirtOffset(&virt)),
            None => self.batch(&Source::Elf(elf), Input::FileOffset(&offsets)),
        };
        if debug && results.iter().all(is_error) {
            log::debug!(
                "hud symbols: no readable DWARF in {}; its symbol table only",
                m.path
            );
            self.no_dwarf.borrow_mut().insert(m.path.clone());
        }
        results
    }

    /// A batch fails as a whole when one module's debug info cannot be
    /// read (libc without its debug package, say), so a failed batch is
    /// retried address by address.
    fn batch(&self, src: &Source, input: Input<&[u64]>) -> Vec<Symbolized<'_>> {
        if let Ok(all) = self.symbolizer.symbolize(src, input) {
            return all;
        }
        (0..input.as_inner_ref().len())
            .map(|i| {
                let one = match input {
                    Input::AbsAddr(a) => Input::AbsAddr(a[i]),
                    Input::VirtOffset(a) => Input::VirtOffset(a[i]),
                    Input::FileOffset(a) => Input::FileOffset(a[i]),
                };
                self.single(src, one)
            })
            .collect()
    }

    fn single(&self, src: &Source, input: Input<u64>) -> Symbolized<'_> {
        self.symbolizer
            .symbolize_single(src, input)
            .unwrap_or(Symbolized::Unknown(Reason::IgnoredError))
    }
}

/// True for a lookup that failed with an error (not an address the
/// object does not cover).
fn is_error(s: &Symbolized<'_>) -> bool {
    matches!(s, Symbolized::Unknown(Reason::IgnoredError))
}
