//! A minimal BTF parser: the header, the type section and the string
//! section of one blob, keeping what formatting a value needs.
//!
//! Every read is bounded by the blob; a malformed blob is an error, never
//! a panic. Type ids index this blob's own types only (id 0 is `void`), so
//! an id past them (split BTF over vmlinux) is simply not found.

use std::ops::Range;

const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;
/// How deep type references are followed (the kernel's own limit).
pub(super) const MAX_DEPTH: usize = 32;

/// Why a blob could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum BtfError {
    /// The blob ends before what its header or a type says is there.
    #[error("BTF blob is truncated")]
    Truncated,
    /// Not a BTF blob of this machine's byte order.
    #[error("bad BTF magic {0:#06x}")]
    BadMagic(u16),
    /// A kind this parser does not know, so its length is unknown.
    #[error("unknown BTF kind {0}")]
    UnknownKind(u32),
}

/// One INT type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Int {
    /// Bytes it occupies.
    pub size: u32,
    /// `BTF_INT_SIGNED`.
    pub signed: bool,
    /// `BTF_INT_BOOL`.
    pub boolean: bool,
    /// Bit offset of the value inside its bytes.
    pub bit_offset: u32,
    /// Bits of the value.
    pub bits: u32,
}

/// A struct or union member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Member {
    /// Its name; empty for an anonymous struct or union.
    pub name: String,
    /// Its type.
    pub ty: u32,
    /// Bit offset from the start of the struct.
    pub bit_offset: u32,
    /// Its bitfield size (0: not a bitfield, or the type says).
    pub bitfield: u32,
}

/// One variable of a DATASEC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SecVar {
    /// Its VAR type.
    pub ty: u32,
    /// Byte offset in the section.
    pub offset: u32,
    /// Byte size.
    pub size: u32,
}

/// One BTF type, reduced to what formatting needs.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Type {
    /// Type id 0.
    Void,
    /// INT.
    Int(Int),
    /// PTR.
    Ptr,
    /// ARRAY of `len` elements of type `elem`.
    Array { elem: u32, len: u32 },
    /// STRUCT or UNION of `size` bytes.
    Composite { size: u32, members: Vec<Member> },
    /// ENUM or ENUM64; values are sign- or zero-extended to 64 bits.
    Enum {
        size: u32,
        signed: bool,
        values: Vec<(String, u64)>,
    },
    /// TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG: the type seen through.
    Alias(u32),
    /// VAR.
    Var { name: String, ty: u32 },
    /// DATASEC of `size` bytes.
    Datasec { size: u32, vars: Vec<SecVar> },
    /// FLOAT of `size` bytes.
    Float { size: u32 },
    /// FWD, FUNC, FUNC_PROTO, DECL_TAG: nothing a value can be read as.
    Opaque,
}

/// A parsed blob.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Btf {
    types: Vec<Type>,
}

/// A bounded little reader over the blob.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn u32(&mut self) -> Result<u32, BtfError> {
        let end = self.pos.checked_add(4).ok_or(BtfError::Truncated)?;
        let bytes = self.buf.get(self.pos..end).ok_or(BtfError::Truncated)?;
        self.pos = end;
        let mut word = [0u8; 4];
        word.copy_from_slice(bytes);
        Ok(u32::from_ne_bytes(word))
    }
}

/// The byte range `[off, off + len)` of `hdr_len..`, checked against `total`.
fn section(hdr_len: usize, off: u32, len: u32, total: usize) -> Result<Range<usize>, BtfError> {
    let start = hdr_len
        .checked_add(off as usize)
        .ok_or(BtfError::Truncated)?;
    let end = start.checked_add(len as usize).ok_or(BtfError::Truncated)?;
    if end > total {
        return Err(BtfError::Truncated);
    }
    Ok(start..end)
}

/// Parses a whole blob.
pub(super) fn parse(blob: &[u8]) -> Result<Btf, BtfError> {
    let head = blob.get(..HEADER_LEN).ok_or(BtfError::Truncated)?;
    let magic = u16::from_ne_bytes([head[0], head[1]]);
    if magic != MAGIC {
        return Err(BtfError::BadMagic(magic));
    }
    let mut cur = Cursor { buf: head, pos: 4 };
    let hdr_len = cur.u32()? as usize;
    let (type_off, type_len) = (cur.u32()?, cur.u32()?);
    let (str_off, str_len) = (cur.u32()?, cur.u32()?);
    let types = section(hdr_len, type_off, type_len, blob.len())?;
    let strings = &blob[section(hdr_len, str_off, str_len, blob.len())?];
    let mut cur = Cursor {
        buf: &blob[types],
        pos: 0,
    };
    let mut out = vec![Type::Void];
    while cur.pos < cur.buf.len() {
        out.push(parse_type(&mut cur, strings)?);
    }
    Ok(Btf { types: out })
}

/// The NUL-terminated string at `off` (empty when out of range).
fn name(strings: &[u8], off: u32) -> String {
    let tail = strings.get(off as usize..).unwrap_or_default();
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    String::from_utf8_lossy(&tail[..end]).into_owned()
}

/// Parses one type record and its trailing data.
fn parse_type(cur: &mut Cursor<'_>, strings: &[u8]) -> Result<Type, BtfError> {
    let name_off = cur.u32()?;
    let info = cur.u32()?;
    let size_or_type = cur.u32()?;
    let vlen = (info & 0xffff) as usize;
    let kind = (info >> 24) & 0x1f;
    let kflag = info >> 31 == 1;
    Ok(match kind {
        1 => {
            let enc = cur.u32()?;
            Type::Int(Int {
                size: size_or_type,
                signed: (enc >> 24) & 1 != 0,
                boolean: (enc >> 24) & 4 != 0,
                bit_offset: (enc >> 16) & 0xff,
                bits: enc & 0xff,
            })
        }
        2 => Type::Ptr,
        3 => {
            let elem = cur.u32()?;
            let _index_type = cur.u32()?;
            let len = cur.u32()?;
            Type::Array { elem, len }
        }
        4 | 5 => Type::Composite {
            size: size_or_type,
            members: members(cur, strings, vlen, kflag)?,
        },
        6 | 19 => enumeration(cur, strings, kind == 19, size_or_type, vlen, kflag)?,
        7 | 12 => Type::Opaque,
        8..=11 | 18 => Type::Alias(size_or_type),
        13 => {
            skip(cur, vlen * 2)?;
            Type::Opaque
        }
        14 => {
            let _linkage = cur.u32()?;
            Type::Var {
                name: name(strings, name_off),
                ty: size_or_type,
            }
        }
        15 => datasec(cur, size_or_type, vlen)?,
        16 => Type::Float { size: size_or_type },
        17 => {
            let _component_idx = cur.u32()?;
            Type::Opaque
        }
        other => return Err(BtfError::UnknownKind(other)),
    })
}

/// Skips `words` 32-bit words of trailing data.
fn skip(cur: &mut Cursor<'_>, words: usize) -> Result<(), BtfError> {
    for _ in 0..words {
        cur.u32()?;
    }
    Ok(())
}

/// The `vlen` members of a struct or union.
fn members(
    cur: &mut Cursor<'_>,
    strings: &[u8],
    vlen: usize,
    kflag: bool,
) -> Result<Vec<Member>, BtfError> {
    let mut out = Vec::new();
    for _ in 0..vlen {
        let (name_off, ty, offset) = (cur.u32()?, cur.u32()?, cur.u32()?);
        let (bit_offset, bitfield) = if kflag {
            (offset & 0xff_ffff, offset >> 24)
        } else {
            (offset, 0)
        };
        out.push(Member {
            name: name(strings, name_off),
            ty,
            bit_offset,
            bitfield,
        });
    }
    Ok(out)
}

/// The enumerators of an ENUM (32-bit values) or ENUM64.
fn enumeration(
    cur: &mut Cursor<'_>,
    strings: &[u8],
    wide: bool,
    size: u32,
    vlen: usize,
    signed: bool,
) -> Result<Type, BtfError> {
    let mut values = Vec::new();
    for _ in 0..vlen {
        let name_off = cur.u32()?;
        let lo = cur.u32()?;
        let value = if wide {
            u64::from(lo) | (u64::from(cur.u32()?) << 32)
        } else if signed {
            lo as i32 as i64 as u64
        } else {
            u64::from(lo)
        };
        values.push((name(strings, name_off), value));
    }
    Ok(Type::Enum {
        size,
        signed,
        values,
    })
}

/// The variables of a DATASEC.
fn datasec(cur: &mut Cursor<'_>, size: u32, vlen: usize) -> Result<Type, BtfError> {
    let mut vars = Vec::new();
    for _ in 0..vlen {
        let (ty, offset, size) = (cur.u32()?, cur.u32()?, cur.u32()?);
        vars.push(SecVar { ty, offset, size });
    }
    Ok(Type::Datasec { size, vars })
}

impl Btf {
    /// The type `id`, if this blob has it.
    pub(super) fn get(&self, id: u32) -> Option<&Type> {
        self.types.get(id as usize)
    }

    /// The type `id` seen through typedefs and qualifiers.
    pub(super) fn resolve(&self, mut id: u32) -> Option<&Type> {
        for _ in 0..MAX_DEPTH {
            match self.get(id)? {
                Type::Alias(next) => id = *next,
                other => return Some(other),
            }
        }
        None
    }

    /// The byte size of a value of type `id` (`None`: it has none, or the
    /// blob is malformed).
    pub(super) fn size_of(&self, id: u32) -> Option<usize> {
        self.size_at(id, 0)
    }

    fn size_at(&self, id: u32, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.resolve(id)? {
            Type::Int(Int { size, .. })
            | Type::Composite { size, .. }
            | Type::Enum { size, .. }
            | Type::Datasec { size, .. }
            | Type::Float { size } => Some(*size as usize),
            Type::Ptr => Some(8),
            Type::Array { elem, len } => self.size_at(*elem, depth + 1)?.checked_mul(*len as usize),
            Type::Var { ty, .. } => self.size_at(*ty, depth + 1),
            Type::Void | Type::Alias(_) | Type::Opaque => None,
        }
    }
}
