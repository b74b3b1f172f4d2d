//! Values formatted through hand-built BTF.

use super::builder::{kind, BtfBuilder, BOOL, SIGNED};
use crate::bpf_maps::btf::parse;
use crate::bpf_maps::format::format;

/// `bytes` formatted as type `ty` of the blob `b` builds.
fn fmt(b: &BtfBuilder, ty: u32, bytes: &[u8]) -> String {
    let btf = parse(&b.build()).expect("the builder's blob parses");
    format(Some(&btf), ty, bytes)
}

#[test]
fn ints_signed_bool_and_char_arrays() {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    let u64_ = b.int("unsigned long long", 8, 0);
    let short = b.int("short", 2, SIGNED);
    let boolean = b.int("_Bool", 1, BOOL);
    let ch = b.int("char", 1, SIGNED);
    let u8_ = b.int("unsigned char", 1, 0);
    let comm = b.array(ch, int, 16);
    let raw = b.array(u8_, int, 3);
    assert_eq!(fmt(&b, int, &(-5i32).to_ne_bytes()), "-5");
    assert_eq!(
        fmt(&b, u64_, &u64::MAX.to_ne_bytes()),
        "18446744073709551615"
    );
    assert_eq!(fmt(&b, short, &(-2i16).to_ne_bytes()), "-2");
    assert_eq!(fmt(&b, boolean, &[1]), "true");
    assert_eq!(fmt(&b, boolean, &[0]), "false");
    let mut name = [0u8; 16];
    name[..6].copy_from_slice(b"worker");
    assert_eq!(fmt(&b, comm, &name), r#""worker""#);
    name[..4].copy_from_slice(b"a\"\\b");
    assert_eq!(fmt(&b, comm, &name), r#""a\"\\ber""#);
    assert_eq!(fmt(&b, comm, &[0; 16]), r#""""#);
    assert_eq!(fmt(&b, raw, &[1, 0xff, 0]), "[1, 255, 0]");
    assert_eq!(fmt(&b, raw, b"ab\0"), r#""ab""#);
    let not_text = fmt(&b, comm, &[0xff; 16]);
    assert_eq!(not_text, format!("[{}]", vec!["-1"; 16].join(", ")));
}

#[test]
fn struct_with_bitfields_and_enums() {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    let u32_ = b.int("unsigned int", 4, 0);
    let u16_ = b.int("unsigned short", 2, 0);
    let state = b.enumeration("state", 4, false, &[("RUNNING", 0), ("SLEEPING", 1)]);
    let flags = b.structure(
        "flags",
        4,
        true,
        &[
            ("a", u32_, 0, 3),
            ("b", u32_, 3, 5),
            ("c", int, 8, 4),
            ("st", state, 12, 2),
            ("e", u16_, 16, 0),
        ],
    );
    let raw: u32 = 5 | (17 << 3) | (0b1101 << 8) | (1 << 12) | (0x1234 << 16);
    assert_eq!(
        fmt(&b, flags, &raw.to_ne_bytes()),
        "{a: 5, b: 17, c: -3, st: SLEEPING, e: 4660}"
    );
    // The old encoding: no kind_flag, the width in the member's INT.
    let u4 = b.raw("u4", 1, false, 1, 0, &[4]);
    let nibbles = b.structure("nibbles", 1, false, &[("lo", u4, 0, 0), ("hi", u4, 4, 0)]);
    assert_eq!(fmt(&b, nibbles, &[0xa3]), "{lo: 3, hi: 10}");
    // An anonymous member shows its value without a name.
    let outer = b.structure("outer", 8, false, &[("", flags, 0, 0), ("n", int, 32, 0)]);
    let mut bytes = raw.to_ne_bytes().to_vec();
    bytes.extend(7i32.to_ne_bytes());
    assert_eq!(
        fmt(&b, outer, &bytes),
        "{{a: 5, b: 17, c: -3, st: SLEEPING, e: 4660}, n: 7}"
    );
}

#[test]
fn enums_by_name_else_number() {
    let mut b = BtfBuilder::new();
    let state = b.enumeration("state", 4, false, &[("RUNNING", 0), ("SLEEPING", 1)]);
    let signed = b.enumeration("sign", 4, true, &[("NEG", -1)]);
    let unsigned = b.enumeration("old", 4, false, &[("NEG", -1)]);
    let wide = b.enum64("wide", &[("SMALL", 5), ("HUGE", 1 << 40)]);
    assert_eq!(fmt(&b, state, &1u32.to_ne_bytes()), "SLEEPING");
    assert_eq!(fmt(&b, state, &7u32.to_ne_bytes()), "7");
    assert_eq!(fmt(&b, signed, &(-1i32).to_ne_bytes()), "NEG");
    assert_eq!(fmt(&b, signed, &(-2i32).to_ne_bytes()), "-2");
    assert_eq!(fmt(&b, unsigned, &u32::MAX.to_ne_bytes()), "NEG");
    assert_eq!(
        fmt(&b, unsigned, &(u32::MAX - 1).to_ne_bytes()),
        "4294967294"
    );
    assert_eq!(fmt(&b, wide, &(1u64 << 40).to_ne_bytes()), "HUGE");
    assert_eq!(fmt(&b, wide, &9u64.to_ne_bytes()), "9");
}

#[test]
fn arrays_nest_and_cut_at_32() {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    let long = b.array(int, int, 40);
    let row = b.array(int, int, 3);
    let matrix = b.array(row, int, 2);
    let tall = b.array(row, int, 33);
    let bytes: Vec<u8> = (0..40i32).flat_map(i32::to_ne_bytes).collect();
    let first: Vec<String> = (0..32).map(|i| i.to_string()).collect();
    let want = format!("[{}, ... (8 more)]", first.join(", "));
    assert_eq!(fmt(&b, long, &bytes), want);
    assert_eq!(fmt(&b, matrix, &bytes[..24]), "[[0, 1, 2], [3, 4, 5]]");
    let tall_bytes: Vec<u8> = (0..99i32).flat_map(i32::to_ne_bytes).collect();
    let text = fmt(&b, tall, &tall_bytes);
    assert!(text.starts_with("[[0, 1, 2], [3, 4, 5], "), "{text}");
    assert!(text.ends_with("[93, 94, 95], ... (1 more)]"), "{text}");
}

#[test]
fn datasec_vars_at_their_offsets() {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    let u64_ = b.int("unsigned long long", 8, 0);
    let ch = b.int("char", 1, SIGNED);
    let tag_ty = b.array(ch, int, 4);
    let counter = b.var("counter", u64_);
    let flag = b.var("flag", int);
    let tag = b.var("tag", tag_ty);
    let bss = b.datasec(".bss", 16, &[(counter, 0, 8), (flag, 8, 4), (tag, 12, 4)]);
    let mut bytes = 5u64.to_ne_bytes().to_vec();
    bytes.extend((-1i32).to_ne_bytes());
    bytes.extend(b"ab\0\0");
    assert_eq!(fmt(&b, bss, &bytes), r#"{counter: 5, flag: -1, tag: "ab"}"#);
}

#[test]
fn typedefs_and_qualifiers_are_seen_through() {
    let mut b = BtfBuilder::new();
    let u32_ = b.int("unsigned int", 4, 0);
    let td = b.typedef("u32", u32_);
    let pid_t = b.typedef("pid_t", td);
    let konst = b.raw("", kind::CONST, false, pid_t, 0, &[]);
    let vol = b.raw("", kind::VOLATILE, false, konst, 0, &[]);
    let tagged = b.raw("user", kind::TYPE_TAG, false, vol, 0, &[]);
    let ptr = b.raw("", kind::PTR, false, tagged, 0, &[]);
    let double = b.raw("double", kind::FLOAT, false, 8, 0, &[]);
    assert_eq!(fmt(&b, tagged, &42u32.to_ne_bytes()), "42");
    assert_eq!(
        fmt(&b, ptr, &0x7fff_0000_1234u64.to_ne_bytes()),
        "0x7fff00001234"
    );
    assert_eq!(fmt(&b, double, &1.5f64.to_ne_bytes()), "1.5");
}

/// Every kind's record is skipped by its right length: a struct after
/// them all still formats.
#[test]
fn every_kind_parses() {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    b.raw("task_struct", kind::FWD, false, 0, 0, &[]);
    let proto = b.raw("", kind::FUNC_PROTO, false, int, 2, &[0, int, 0, int]);
    let func = b.raw("add", kind::FUNC, false, proto, 1, &[]);
    b.raw("tag", kind::DECL_TAG, false, func, 0, &[u32::MAX]);
    b.raw("", kind::RESTRICT, false, int, 0, &[]);
    b.raw("", kind::VOLATILE, false, int, 0, &[]);
    b.raw("float", kind::FLOAT, false, 4, 0, &[]);
    let big = b.enum64("big", &[("ONE", 1), ("FAR", 1 << 32)]);
    let pair = b.structure("pair", 16, false, &[("x", int, 0, 0), ("e", big, 64, 0)]);
    let mut bytes = 3i32.to_ne_bytes().to_vec();
    bytes.extend([0; 4]);
    bytes.extend((1u64 << 32).to_ne_bytes());
    assert_eq!(fmt(&b, pair, &bytes), "{x: 3, e: FAR}");
    // A function has no value: hex.
    assert_eq!(fmt(&b, func, &[1, 2]), "01 02");
}
