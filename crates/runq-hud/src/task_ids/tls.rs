//! Task ids by thread-local storage: where Tokio's current task id sits
//! relative to a thread's thread pointer, in an x86-64 executable.
//!
//! Three facts give it. `CONTEXT`'s storage is a TLS symbol whose value is
//! its offset in the executable's TLS segment; the executable's TLS block
//! ends at the thread pointer (x86-64's variant II: it starts the segment's
//! size, rounded up to its alignment, below it), so the storage starts at
//! `value - round_up(memsz, align)`. The task id's field inside it is
//! whatever offset the compiler chose: an optimized out-of-line instance
//! of `set_current_task_id` computes the storage's address with a `lea`
//! of exactly that offset from the thread pointer, then stores its
//! argument at the field (`mov %rbx, 0x30(%rax)`), or stores straight to
//! a thread-pointer-relative address (`mov %rbx, %fs:-0xa8`). Both forms
//! are decoded here; code that does neither (an unoptimized build, which
//! calls helpers instead) gives no slot, and a uprobe is used.

use object::elf::PT_TLS;
use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Architecture, Endianness, Object, ObjectSymbol, SymbolKind};

use super::{file_offset, Instance};

/// The path every name of `CONTEXT`'s TLS symbols starts with.
const CONTEXT: &str = "tokio::runtime::context::CONTEXT::";

/// Fields past this far into `CONTEXT`'s storage are not taken for its
/// task id (the structure is a few words long).
const MAX_FIELD: i64 = 0x1000;

/// The offset of `CONTEXT`'s storage in the TLS segment, from the TLS
/// symbols of the ELF file `symbols` (the value one, where std's
/// thread-local storage has several).
fn context_symbol(symbols: &[u8]) -> Result<u64, String> {
    let file = object::File::parse(symbols).map_err(|e| e.to_string())?;
    let mut found: Vec<(String, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Tls && !s.is_undefined())
        .filter_map(|s| {
            let name = format!("{:#}", rustc_demangle::demangle(s.name().ok()?));
            name.starts_with(CONTEXT).then_some((name, s.address()))
        })
        .collect();
    found.sort_by_key(|(name, _)| !name.ends_with("VAL"));
    found
        .first()
        .map(|(_, value)| *value)
        .ok_or_else(|| "no thread-local symbol of tokio's CONTEXT".to_string())
}

/// How far below the thread pointer the executable's TLS block starts.
fn tls_block(exe: &[u8]) -> Result<u64, String> {
    let elf = ElfFile64::<Endianness>::parse(exe).map_err(|e| e.to_string())?;
    if elf.architecture() != Architecture::X86_64 {
        return Err(format!(
            "{:?} is not decoded (x86-64 only)",
            elf.architecture()
        ));
    }
    let e = elf.endian();
    let tls = elf
        .elf_program_headers()
        .iter()
        .find(|ph| ph.p_type(e) == PT_TLS)
        .ok_or("the executable has no TLS segment")?;
    let (memsz, align) = (tls.p_memsz(e), tls.p_align(e).max(1));
    if tls.p_vaddr(e) % align != 0 {
        return Err("the TLS segment is not aligned to its own alignment".into());
    }
    Ok(memsz.div_ceil(align) * align)
}

/// The thread-pointer offset of the current task id in the executable
/// `exe`, whose symbols are in `symbols` (the executable itself, or its
/// debug file), from the code of `instances` of `set_current_task_id`.
pub fn slot(exe: &[u8], symbols: &[u8], instances: &[Instance]) -> Result<i64, String> {
    let base = context_symbol(symbols)? as i64 - tls_block(exe)? as i64;
    let mut seen: Option<i64> = None;
    for (vaddr, size) in instances {
        let Some(at) = file_offset(exe, *vaddr).map(|o| o as usize) else {
            continue;
        };
        let Some(code) = exe.get(at..at + *size as usize) else {
            continue;
        };
        match (field_store(code, base), seen) {
            (Some(off), Some(prev)) if off != prev => {
                return Err(format!("its instances store at {prev} and {off}"));
            }
            (Some(off), _) => seen = Some(off),
            (None, _) => {}
        }
    }
    seen.ok_or_else(|| {
        format!(
            "no store of the task id decoded in {} instance(s) of set_current_task_id \
             (an unoptimized build calls helpers there)",
            instances.len()
        )
    })
}

fn i32_at(code: &[u8], at: usize) -> Option<i64> {
    Some(i32::from_le_bytes(code.get(at..at + 4)?.try_into().ok()?).into())
}

/// A ModRM memory operand `disp(%reg)` without SIB: (mod, register
/// number with REX.B, displacement, length of ModRM and displacement).
fn mem_operand(rex: u8, code: &[u8], at: usize) -> Option<(u8, u8, i64, usize)> {
    let modrm = *code.get(at)?;
    let (md, rm) = (modrm >> 6, modrm & 7);
    let reg = ((rex & 1) << 3) | rm;
    match (md, rm) {
        (_, 4) => None,
        (1, _) => Some((modrm, reg, i64::from(*code.get(at + 1)? as i8), 2)),
        (2, _) => Some((modrm, reg, i32_at(code, at + 1)?, 5)),
        _ => None,
    }
}

/// Where `code` stores the task id, as an offset from the thread pointer,
/// given the offset `base` of `CONTEXT`'s storage.
pub(crate) fn field_store(code: &[u8], base: i64) -> Option<i64> {
    let field = |off: i64| (base..base + MAX_FIELD).contains(&off).then_some(off);
    // mov %r64, %fs:disp32: 64 REX.W 89 ModRM(mod 0, rm 4) SIB(0x25) disp32.
    for i in 0..code.len().saturating_sub(8) {
        let w = &code[i..];
        if w[0] == 0x64
            && w[1] & 0xf8 == 0x48
            && w[2] == 0x89
            && w[3] & 0xc7 == 0x04
            && w[4] == 0x25
        {
            if let Some(off) = i32_at(w, 5).and_then(field) {
                return Some(off);
            }
        }
    }
    // lea base(%rA), %rB, then mov %r64, disp(%rB).
    for i in 0..code.len().saturating_sub(3) {
        let rex = code[i];
        if rex & 0xf8 != 0x48 || code[i + 1] != 0x8d {
            continue;
        }
        let Some((modrm, _, disp, len)) = mem_operand(rex, code, i + 2) else {
            continue;
        };
        if disp != base {
            continue;
        }
        let dest = (((rex >> 2) & 1) << 3) | ((modrm >> 3) & 7);
        for j in i + 2 + len..code.len().saturating_sub(3) {
            let rex2 = code[j];
            if rex2 & 0xf8 != 0x48 || code[j + 1] != 0x89 {
                continue;
            }
            match mem_operand(rex2, code, j + 2) {
                Some((_, reg, d, _)) if reg == dest => return field(base + d),
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `set_current_task_id` of runq-demo-service built with cargo's
    /// release defaults (tokio 1.54, rustc 1.9x): `lea -0x108(%rax),%rax`,
    /// then `mov %rbx,0x30(%rax)`.
    const RELEASE: &[u8] = &[
        0x41, 0x56, 0x53, 0x50, 0x48, 0x89, 0xfb, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x00,
        0x00, 0x48, 0x8d, 0x80, 0xf8, 0xfe, 0xff, 0xff, 0x0f, 0xb6, 0x48, 0x48, 0x83, 0xf9, 0x01,
        0x74, 0x24, 0x83, 0xf9, 0x02, 0x75, 0x04, 0x31, 0xc9, 0xeb, 0x23, 0x48, 0x8d, 0x35, 0x10,
        0xca, 0xff, 0xff, 0x48, 0x89, 0xc7, 0x49, 0x89, 0xc6, 0xff, 0x15, 0x94, 0x86, 0x06, 0x00,
        0x4c, 0x89, 0xf0, 0x41, 0xc6, 0x46, 0x48, 0x01, 0x48, 0x8b, 0x48, 0x30, 0x48, 0x89, 0x58,
        0x30, 0x48, 0x89, 0xc8, 0x48, 0x83, 0xc4, 0x08, 0x5b, 0x41, 0x5e, 0xc3,
    ];

    #[test]
    fn the_field_store_after_the_lea_of_context_is_the_slot() {
        assert_eq!(field_store(RELEASE, -0x108), Some(-0x108 + 0x30));
        // Another CONTEXT offset: that lea is not CONTEXT's.
        assert_eq!(field_store(RELEASE, -0xd8), None);
    }

    #[test]
    fn a_thread_pointer_relative_store_is_the_slot() {
        // mov %rbx, %fs:-0xa8
        let code = [
            0x53, 0x64, 0x48, 0x89, 0x1c, 0x25, 0x58, 0xff, 0xff, 0xff, 0x5b, 0xc3,
        ];
        assert_eq!(field_store(&code, -0xd8), Some(-0xa8));
        assert_eq!(field_store(&code, -0x10), None, "below the storage");
    }

    #[test]
    fn code_without_either_store_has_no_slot() {
        // An unoptimized build: call the closure that does the work.
        let code = [
            0x55, 0x48, 0x89, 0xe5, 0xe8, 0x10, 0x00, 0x00, 0x00, 0x5d, 0xc3,
        ];
        assert_eq!(field_store(&code, -0x108), None);
        assert_eq!(field_store(&[], -0x108), None);
    }

    #[test]
    fn a_program_without_tokio_has_no_context_symbol() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let err = slot(&exe, &exe, &[]).unwrap_err();
        assert!(err.contains("CONTEXT"), "{err}");
        assert!(tls_block(&exe).is_ok(), "a Rust test binary has TLS");
    }
}
