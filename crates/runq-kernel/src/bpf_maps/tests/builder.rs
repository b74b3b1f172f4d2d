//! A builder of BTF blobs: header, type section and string section, in
//! this machine's byte order, as a compiler would emit them.

/// `BTF_INT_SIGNED`.
pub(super) const SIGNED: u32 = 1;
/// `BTF_INT_BOOL`.
pub(super) const BOOL: u32 = 4;

/// The BTF kinds the tests write by number.
pub(super) mod kind {
    pub(in crate::bpf_maps::tests) const PTR: u32 = 2;
    pub(in crate::bpf_maps::tests) const FWD: u32 = 7;
    pub(in crate::bpf_maps::tests) const VOLATILE: u32 = 9;
    pub(in crate::bpf_maps::tests) const CONST: u32 = 10;
    pub(in crate::bpf_maps::tests) const RESTRICT: u32 = 11;
    pub(in crate::bpf_maps::tests) const FUNC: u32 = 12;
    pub(in crate::bpf_maps::tests) const FUNC_PROTO: u32 = 13;
    pub(in crate::bpf_maps::tests) const FLOAT: u32 = 16;
    pub(in crate::bpf_maps::tests) const DECL_TAG: u32 = 17;
    pub(in crate::bpf_maps::tests) const TYPE_TAG: u32 = 18;
    pub(in crate::bpf_maps::tests) const ENUM64: u32 = 19;
}

/// A blob being built; type ids count from 1 in the order types are added.
#[derive(Default)]
pub(super) struct BtfBuilder {
    types: Vec<u8>,
    strings: Vec<u8>,
    count: u32,
}

impl BtfBuilder {
    /// An empty blob (its string section starts with the empty name).
    pub(super) fn new() -> Self {
        BtfBuilder {
            strings: vec![0],
            ..BtfBuilder::default()
        }
    }

    /// The offset of `s` in the string section (0 for the empty name).
    fn name(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        off
    }

    /// One type record: its common header, then `trailing` words.
    pub(super) fn raw(
        &mut self,
        name: &str,
        kind: u32,
        kflag: bool,
        size_or_type: u32,
        vlen: u32,
        trailing: &[u32],
    ) -> u32 {
        let name = self.name(name);
        let info = (u32::from(kflag) << 31) | (kind << 24) | vlen;
        for w in [name, info, size_or_type].iter().chain(trailing) {
            self.types.extend_from_slice(&w.to_ne_bytes());
        }
        self.count += 1;
        self.count
    }

    /// An INT of `size` bytes, all bits used.
    pub(super) fn int(&mut self, name: &str, size: u32, encoding: u32) -> u32 {
        self.raw(name, 1, false, size, 0, &[(encoding << 24) | (size * 8)])
    }

    /// An ARRAY of `len` elements of `elem`, indexed by `index`.
    pub(super) fn array(&mut self, elem: u32, index: u32, len: u32) -> u32 {
        self.raw("", 3, false, 0, 0, &[elem, index, len])
    }

    /// A STRUCT of `(name, type, bit offset, bitfield size)` members;
    /// with `kflag` the bitfield sizes are written into the offsets.
    pub(super) fn structure(
        &mut self,
        name: &str,
        size: u32,
        kflag: bool,
        members: &[(&str, u32, u32, u32)],
    ) -> u32 {
        let mut words = Vec::new();
        for &(m, ty, bit_off, bits) in members {
            let off = if kflag {
                (bits << 24) | bit_off
            } else {
                bit_off
            };
            words.extend([self.name(m), ty, off]);
        }
        self.raw(name, 4, kflag, size, members.len() as u32, &words)
    }

    /// An ENUM of 32-bit values.
    pub(super) fn enumeration(
        &mut self,
        name: &str,
        size: u32,
        signed: bool,
        values: &[(&str, i32)],
    ) -> u32 {
        let mut words = Vec::new();
        for &(v, n) in values {
            words.extend([self.name(v), n as u32]);
        }
        self.raw(name, 6, signed, size, values.len() as u32, &words)
    }

    /// An ENUM64 (unsigned).
    pub(super) fn enum64(&mut self, name: &str, values: &[(&str, u64)]) -> u32 {
        let mut words = Vec::new();
        for &(v, n) in values {
            words.extend([self.name(v), n as u32, (n >> 32) as u32]);
        }
        self.raw(name, kind::ENUM64, false, 8, values.len() as u32, &words)
    }

    /// A TYPEDEF of `ty`.
    pub(super) fn typedef(&mut self, name: &str, ty: u32) -> u32 {
        self.raw(name, 8, false, ty, 0, &[])
    }

    /// A global VAR of `ty`.
    pub(super) fn var(&mut self, name: &str, ty: u32) -> u32 {
        self.raw(name, 14, false, ty, 0, &[1])
    }

    /// A DATASEC of `(var, offset, size)` entries.
    pub(super) fn datasec(&mut self, name: &str, size: u32, vars: &[(u32, u32, u32)]) -> u32 {
        let words: Vec<u32> = vars.iter().flat_map(|&(v, o, s)| [v, o, s]).collect();
        self.raw(name, 15, false, size, vars.len() as u32, &words)
    }

    /// The blob: header, types, strings.
    pub(super) fn build(&self) -> Vec<u8> {
        let mut blob = Vec::new();
        blob.extend_from_slice(&0xeb9fu16.to_ne_bytes());
        blob.extend([1u8, 0]);
        let type_len = self.types.len() as u32;
        for w in [24, 0, type_len, type_len, self.strings.len() as u32] {
            blob.extend_from_slice(&w.to_ne_bytes());
        }
        blob.extend_from_slice(&self.types);
        blob.extend_from_slice(&self.strings);
        blob
    }
}
