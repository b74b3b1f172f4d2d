//! Formats a value's bytes through its BTF type, on one line: integers in
//! decimal, `bool` as `true`/`false`, char arrays as quoted strings,
//! pointers in hex, enums by name, structs and unions as
//! `{name: value, ...}` (bitfields included), arrays as `[a, b, ...]` cut
//! at [`MAX_ELEMS`], and DATASECs as `{var: value, ...}`.
//!
//! Anything that does not fit (a type id the blob lacks, a type larger
//! than the bytes, a loop of references) makes the whole value fall back
//! to hex bytes.

use std::fmt::Write as _;

use super::btf::{Btf, Member, SecVar, Type, MAX_DEPTH};

/// Array elements shown before the rest are only counted.
pub(super) const MAX_ELEMS: usize = 32;
/// Bytes shown in hex before the rest are only counted.
const MAX_HEX: usize = 256;

/// The value cannot be formatted through its BTF.
struct Bad;

type Out = Result<(), Bad>;

/// `bytes` formatted as type `ty` of `btf`, or as hex bytes when there is
/// no BTF or the value does not fit it.
pub(super) fn format(btf: Option<&Btf>, ty: u32, bytes: &[u8]) -> String {
    if let Some(btf) = btf {
        let mut f = Fmt {
            btf,
            out: String::new(),
        };
        if f.value(ty, bytes, 0).is_ok() {
            return f.out;
        }
    }
    hex(bytes)
}

/// `bytes` as space-separated hex pairs, cut after [`MAX_HEX`] bytes.
pub(super) fn hex(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, b) in bytes.iter().take(MAX_HEX).enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    if bytes.len() > MAX_HEX {
        let _ = write!(s, " ... ({} more bytes)", bytes.len() - MAX_HEX);
    }
    s
}

/// Reads `bits` bits at bit `bit_off` of `bytes` (in the machine's
/// bitfield order), zero-extended.
fn read_bits(bytes: &[u8], bit_off: u32, bits: u32) -> Result<u128, Bad> {
    let shift = bit_off % 8;
    if bits == 0 || shift + bits > 128 {
        return Err(Bad);
    }
    let first = (bit_off / 8) as usize;
    let len = (shift + bits).div_ceil(8) as usize;
    let window = bytes.get(first..first + len).ok_or(Bad)?;
    let value = if cfg!(target_endian = "little") {
        let v = window
            .iter()
            .rev()
            .fold(0u128, |a, &b| (a << 8) | u128::from(b));
        v >> shift
    } else {
        let v = window.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b));
        v >> (len as u32 * 8 - shift - bits)
    };
    Ok(if bits == 128 {
        value
    } else {
        value & ((1u128 << bits) - 1)
    })
}

/// `raw`, `bits` wide, as a signed number.
fn sign_extend(raw: u128, bits: u32) -> i128 {
    if bits == 0 || bits >= 128 {
        return raw as i128;
    }
    let unused = 128 - bits;
    ((raw << unused) as i128) >> unused
}

/// `bytes` up to the first NUL as a quoted string, if all printable ASCII.
fn quoted(bytes: &[u8]) -> Option<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let text = &bytes[..end];
    if !text.iter().all(|b| (0x20..0x7f).contains(b)) {
        return None;
    }
    let mut s = String::from("\"");
    for &b in text {
        if b == b'"' || b == b'\\' {
            s.push('\\');
        }
        s.push(char::from(b));
    }
    s.push('"');
    Some(s)
}

/// One value being formatted.
struct Fmt<'a> {
    btf: &'a Btf,
    out: String,
}

impl Fmt<'_> {
    /// Formats `bytes` (at least the type's size) as type `ty`.
    fn value(&mut self, ty: u32, bytes: &[u8], depth: usize) -> Out {
        if depth > MAX_DEPTH {
            return Err(Bad);
        }
        let btf = self.btf;
        match btf.get(ty).ok_or(Bad)? {
            Type::Int(int) => {
                let own = bytes.get(..int.size as usize).ok_or(Bad)?;
                let raw = read_bits(own, int.bit_offset, int.bits)?;
                self.int(int.signed, int.boolean, raw, int.bits);
                Ok(())
            }
            Type::Ptr => {
                let raw = read_bits(bytes, 0, 64)?;
                let _ = write!(self.out, "{raw:#x}");
                Ok(())
            }
            Type::Array { elem, len } => self.array(*elem, *len, bytes, depth),
            Type::Composite { members, .. } => self.composite(members, bytes, depth),
            Type::Enum {
                size,
                signed,
                values,
            } => {
                let bits = size.saturating_mul(8);
                let raw = read_bits(bytes, 0, bits)?;
                self.enumerator(values, *signed, raw, bits);
                Ok(())
            }
            Type::Alias(next) | Type::Var { ty: next, .. } => self.value(*next, bytes, depth + 1),
            Type::Datasec { vars, .. } => self.datasec(vars, bytes, depth),
            Type::Float { size } => self.float(*size, bytes),
            Type::Void | Type::Opaque => Err(Bad),
        }
    }

    /// An integer from its raw bits.
    fn int(&mut self, signed: bool, boolean: bool, raw: u128, bits: u32) {
        let _ = if boolean {
            write!(self.out, "{}", raw != 0)
        } else if signed {
            write!(self.out, "{}", sign_extend(raw, bits))
        } else {
            write!(self.out, "{raw}")
        };
    }

    /// An enum's value by its enumerator's name, else as a number.
    fn enumerator(&mut self, values: &[(String, u64)], signed: bool, raw: u128, bits: u32) {
        let wide = if signed {
            sign_extend(raw, bits) as u64
        } else {
            raw as u64
        };
        match values.iter().find(|(_, v)| *v == wide) {
            Some((name, _)) => self.out.push_str(name),
            None => self.int(signed, false, raw, bits),
        }
    }

    /// `[a, b, ...]`, or a quoted string for a printable char array.
    fn array(&mut self, elem: u32, len: u32, bytes: &[u8], depth: usize) -> Out {
        let btf = self.btf;
        let size = btf.size_of(elem).ok_or(Bad)?;
        let bytes = bytes
            .get(..size.checked_mul(len as usize).ok_or(Bad)?)
            .ok_or(Bad)?;
        if let Some(Type::Int(int)) = btf.resolve(elem) {
            let char_like = size == 1 && int.bits == 8 && !int.boolean;
            if let Some(text) = quoted(bytes).filter(|_| char_like) {
                self.out.push_str(&text);
                return Ok(());
            }
        }
        self.out.push('[');
        let shown = (len as usize).min(MAX_ELEMS);
        for i in 0..shown {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(elem, &bytes[i * size..(i + 1) * size], depth + 1)?;
        }
        if len as usize > shown {
            let _ = write!(self.out, ", ... ({} more)", len as usize - shown);
        }
        self.out.push(']');
        Ok(())
    }

    /// `{name: value, ...}` of a struct or union.
    fn composite(&mut self, members: &[Member], bytes: &[u8], depth: usize) -> Out {
        self.out.push('{');
        for (i, m) in members.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            if !m.name.is_empty() {
                let _ = write!(self.out, "{}: ", m.name);
            }
            self.member(m, bytes, depth)?;
        }
        self.out.push('}');
        Ok(())
    }

    /// One member of a struct or union whose bytes are `bytes`.
    fn member(&mut self, m: &Member, bytes: &[u8], depth: usize) -> Out {
        let btf = self.btf;
        if m.bitfield == 0 && m.bit_offset % 8 == 0 {
            let start = (m.bit_offset / 8) as usize;
            let end = start
                .checked_add(btf.size_of(m.ty).ok_or(Bad)?)
                .ok_or(Bad)?;
            return self.value(m.ty, bytes.get(start..end).ok_or(Bad)?, depth + 1);
        }
        // A bitfield: its width is the member's (kind_flag) or its type's.
        let ty = btf.resolve(m.ty).ok_or(Bad)?;
        let (offset, bits) = match (m.bitfield, ty) {
            (0, Type::Int(int)) => (m.bit_offset.checked_add(int.bit_offset), int.bits),
            (0, Type::Enum { size, .. }) => (Some(m.bit_offset), size.saturating_mul(8)),
            (width, _) => (Some(m.bit_offset), width),
        };
        let raw = read_bits(bytes, offset.ok_or(Bad)?, bits)?;
        match ty {
            Type::Int(int) => self.int(int.signed, int.boolean, raw, bits),
            Type::Enum { signed, values, .. } => self.enumerator(values, *signed, raw, bits),
            _ => return Err(Bad),
        }
        Ok(())
    }

    /// `{var: value, ...}` of a DATASEC, each variable at its offset.
    fn datasec(&mut self, vars: &[SecVar], bytes: &[u8], depth: usize) -> Out {
        let btf = self.btf;
        self.out.push('{');
        for (i, var) in vars.iter().enumerate() {
            let Some(Type::Var { name, ty }) = btf.get(var.ty) else {
                return Err(Bad);
            };
            let start = var.offset as usize;
            let end = start.checked_add(var.size as usize).ok_or(Bad)?;
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "{name}: ");
            self.value(*ty, bytes.get(start..end).ok_or(Bad)?, depth + 1)?;
        }
        self.out.push('}');
        Ok(())
    }

    /// An `f32` or `f64`; other float sizes are not formatted.
    fn float(&mut self, size: u32, bytes: &[u8]) -> Out {
        let _ = match (size, bytes) {
            (4, [a, b, c, d, ..]) => write!(self.out, "{}", f32::from_ne_bytes([*a, *b, *c, *d])),
            (8, [a, b, c, d, e, f, g, h, ..]) => write!(
                self.out,
                "{}",
                f64::from_ne_bytes([*a, *b, *c, *d, *e, *f, *g, *h])
            ),
            _ => return Err(Bad),
        };
        Ok(())
    }
}
