//! Malformed BTF and values that do not fit it: errors and hex, never a
//! panic.

use proptest::prelude::*;

use super::builder::{BtfBuilder, SIGNED};
use crate::bpf_maps::btf::{parse, BtfError};
use crate::bpf_maps::format::{format, hex};

/// A small valid blob: `int`, `char[4]`, `struct s {int a; char t[4];}`.
fn sample() -> (Vec<u8>, u32) {
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, SIGNED);
    let ch = b.int("char", 1, SIGNED);
    let tag = b.array(ch, int, 4);
    let s = b.structure("s", 8, false, &[("a", int, 0, 0), ("t", tag, 32, 0)]);
    (b.build(), s)
}

#[test]
fn truncated_bad_magic_and_unknown_kind_are_errors() {
    let (blob, _) = sample();
    assert_eq!(parse(&blob[..10]), Err(BtfError::Truncated));
    assert_eq!(parse(&blob[..blob.len() - 1]), Err(BtfError::Truncated));
    assert_eq!(parse(&[]), Err(BtfError::Truncated));
    let mut bad = blob.clone();
    bad[0] ^= 0xff;
    assert!(matches!(parse(&bad), Err(BtfError::BadMagic(_))));
    let mut b = BtfBuilder::new();
    b.raw("odd", 20, false, 0, 0, &[]);
    assert_eq!(parse(&b.build()), Err(BtfError::UnknownKind(20)));
    // A type's trailing words cut by the type section's end.
    let mut b = BtfBuilder::new();
    b.raw("s", 4, false, 4, 3, &[0, 1]);
    assert_eq!(parse(&b.build()), Err(BtfError::Truncated));
}

#[test]
fn what_does_not_fit_falls_back_to_hex() {
    let (blob, s) = sample();
    let btf = parse(&blob).unwrap();
    let bytes = [7, 0, 0, 0, b'a', b'b', 0, 0];
    assert_eq!(format(Some(&btf), s, &bytes), r#"{a: 7, t: "ab"}"#);
    assert_eq!(format(None, s, &bytes), "07 00 00 00 61 62 00 00");
    // A type id past the blob's own types (split BTF over vmlinux).
    assert_eq!(format(Some(&btf), 999, &bytes[..4]), "07 00 00 00");
    // Type id 0 is void.
    assert_eq!(format(Some(&btf), 0, &bytes[..2]), "07 00");
    // Fewer bytes than the type needs.
    assert_eq!(format(Some(&btf), s, &bytes[..6]), "07 00 00 00 61 62");
    // A typedef loop.
    let mut b = BtfBuilder::new();
    b.typedef("a", 2);
    let loop_start = b.typedef("b", 1);
    let btf = parse(&b.build()).unwrap();
    assert_eq!(format(Some(&btf), loop_start, &[1]), "01");
    assert_eq!(btf.size_of(loop_start), None);
}

#[test]
fn long_hex_is_cut() {
    let text = hex(&[0xab; 300]);
    assert!(text.starts_with("ab ab "), "{text}");
    assert!(text.ends_with("ab ... (44 more bytes)"), "{text}");
    assert_eq!(hex(&[]), "");
}

proptest! {
    /// Any bytes as a blob: parsing never panics.
    #[test]
    fn any_blob_parses_or_errs(blob in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(&blob);
    }

    /// A valid blob with bytes changed: parsing and formatting every type
    /// id never panic.
    #[test]
    fn mangled_blob_formats_or_falls_back(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        value in proptest::collection::vec(any::<u8>(), 0..24),
    ) {
        let (mut blob, _) = sample();
        for (at, byte) in edits {
            let i = at.index(blob.len());
            blob[i] = byte;
        }
        if let Ok(btf) = parse(&blob) {
            for ty in 0..8 {
                let text = format(Some(&btf), ty, &value);
                prop_assert!(!text.contains('\n'));
            }
        }
    }
}
