//! Hostile snapshot files: each is refused with an error of the right kind,
//! quickly and without a panic, or (names with control characters) loads.
//!
//! The small ones are JSON under `tests/hostile/`, compressed here; the
//! large ones (zstd bombs, deep nesting) are generated from a few bytes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runq_ctprof::format::{
    decode, decompressed_cap, encode, FormatError, MAX_RATIO, MIN_DECOMPRESSED_CAP,
};
use runq_ctprof::load;
use runq_ctprof::model::{CtprofSnapshot, ThreadState, SCHEMA_VERSION};

/// What a hostile file must give.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Loads.
    Loads,
    /// [`FormatError::Foreign`].
    Foreign,
    /// [`FormatError::Newer`].
    Newer,
}

/// Every file of the corpus and what it must give (a file not listed here
/// fails [`every_corpus_file_gives_its_listed_result`]).
const CORPUS: &[(&str, Expect)] = &[
    ("not-json.txt", Expect::Foreign),
    ("future-schema.json", Expect::Newer),
    ("future-delta.json", Expect::Newer),
    ("zero-schema.json", Expect::Foreign),
    ("no-schema.json", Expect::Foreign),
    ("wrong-format.json", Expect::Foreign),
    ("duplicate-format.json", Expect::Foreign),
    ("raw-nul.json", Expect::Foreign),
    ("leading-nul.json", Expect::Foreign),
    ("control-names.json", Expect::Loads),
    ("u64-overflow.json", Expect::Foreign),
    ("u32-overflow.json", Expect::Foreign),
    ("negative-counter.json", Expect::Foreign),
    ("float-overflow.json", Expect::Foreign),
    ("float-overflow-psi.json", Expect::Foreign),
    ("huge-version.json", Expect::Foreign),
    ("u64-overflow-version.json", Expect::Foreign),
    ("string-version.json", Expect::Foreign),
    ("array-top.json", Expect::Foreign),
    ("schema-1-leading-space.json", Expect::Loads),
];

/// How long refusing any of these may take (a generous bound for a
/// loaded debug build; they take milliseconds to a second).
const QUICK: Duration = Duration::from_secs(10);

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).unwrap()
}

/// Decodes `bytes`, checking it takes less than [`QUICK`] and that an
/// error is one line.
fn decode_quickly(bytes: &[u8], name: &str) -> Result<CtprofSnapshot, FormatError> {
    let t = Instant::now();
    let r = decode(bytes, Path::new(name));
    assert!(t.elapsed() < QUICK, "{name}: took {:?}", t.elapsed());
    if let Err(e) = &r {
        assert!(!e.to_string().contains('\n'), "{name}: {e}");
    }
    r
}

fn check(r: &Result<CtprofSnapshot, FormatError>, want: Expect, name: &str) {
    let got = match r {
        Ok(_) => Expect::Loads,
        Err(FormatError::Foreign { .. }) => Expect::Foreign,
        Err(FormatError::Newer { .. }) => Expect::Newer,
        Err(e) => panic!("{name}: unexpected error kind: {e:?}"),
    };
    assert_eq!(got, want, "{name}: {r:?}");
}

#[test]
fn every_corpus_file_gives_its_listed_result() {
    let mut names: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut listed: Vec<&str> = CORPUS.iter().map(|c| c.0).collect();
    listed.sort();
    assert_eq!(names, listed, "tests/hostile/ and CORPUS disagree");
    for &(name, want) in CORPUS {
        let raw = std::fs::read(corpus_dir().join(name)).unwrap();
        assert!(raw.len() < 4096, "{name}: corpus files stay small");
        check(&decode_quickly(&zstd(&raw), name), want, name);
    }
}

/// A snapshot file decompressing to `total` bytes: `prefix`, then `fill`
/// repeated, compressed as a stream (never all in memory).
fn bomb(prefix: &[u8], fill: u8, total: usize) -> Vec<u8> {
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(prefix).unwrap();
    let chunk = vec![fill; 1 << 20];
    let mut left = total - prefix.len();
    while left > 0 {
        let n = left.min(chunk.len());
        enc.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    enc.finish().unwrap()
}

fn assert_oversized(bytes: &[u8], name: &str) {
    match decode_quickly(bytes, name) {
        Err(e @ FormatError::Oversized { .. }) => {
            let text = e.to_string();
            assert!(text.contains("not a ctprof snapshot"), "{text}");
            assert!(text.contains("decompress to more than"), "{text}");
        }
        r => panic!("{name}: want Oversized, got {r:?}"),
    }
}

#[test]
fn a_zstd_bomb_is_refused_at_the_cap() {
    let total = 2 * MIN_DECOMPRESSED_CAP as usize;
    let bytes = bomb(b"", 0, total);
    assert!(bytes.len() < 64 << 10, "a bomb: {} bytes", bytes.len());
    assert_oversized(&bytes, "zeros.ctprof.zst");
}

#[test]
fn a_valid_header_then_a_huge_string_is_refused_at_the_cap() {
    let head = br#"{"format":"runq-ctprof","schema_version":2,"threads":[{"tid":1,"comm":""#;
    let bytes = bomb(head, b'A', 2 * MIN_DECOMPRESSED_CAP as usize);
    assert_oversized(&bytes, "huge-string.ctprof.zst");
}

#[test]
fn a_bomb_above_the_floor_is_refused_by_its_ratio() {
    // Bytes zstd cannot shrink, so the file is large enough that the
    // ratio, not the floor, sets the cap.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..(256 << 10))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let bytes = bomb(&noise, b' ', 48 << 20);
    let cap = decompressed_cap(bytes.len() as u64);
    assert!(cap > MIN_DECOMPRESSED_CAP && cap < 48 << 20, "cap {cap}");
    assert_eq!(cap, bytes.len() as u64 * MAX_RATIO);
    assert_oversized(&bytes, "ratio.ctprof.zst");
}

#[test]
fn truncated_zstd_is_corrupt() {
    let mut s = CtprofSnapshot::new();
    s.threads = (0..200)
        .map(|i| ThreadState {
            tid: i,
            comm: format!("worker-{i}"),
            ..ThreadState::default()
        })
        .collect();
    let good = encode(&s).unwrap();
    for cut in [good.len() / 2, good.len() - 1, 5] {
        match decode_quickly(&good[..cut], "truncated.ctprof.zst") {
            Err(FormatError::Corrupt { .. }) => {}
            r => panic!("cut at {cut}: want Corrupt, got {r:?}"),
        }
    }
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let deep = |open: &[u8], close: &[u8]| {
        let mut v: Vec<u8> = Vec::new();
        v.extend(std::iter::repeat_n(open, 100_000).flatten());
        v.extend(std::iter::repeat_n(close, 100_000).flatten());
        v
    };
    // Unclosed, at the top and in a typed field.
    let open = vec![b'['; 100_000];
    check(&decode_quickly(&zstd(&open), "top"), Expect::Foreign, "top");
    let mut threads = br#"{"format":"runq-ctprof","schema_version":2,"threads":"#.to_vec();
    threads.extend(&open);
    check(
        &decode_quickly(&zstd(&threads), "threads"),
        Expect::Foreign,
        "threads",
    );
    // Balanced, where a delta holds any JSON value: serde_json's recursion
    // limit (128) refuses it.
    let mut delta =
        br#"{"format":"runq-ctprof-delta","schema_version":2,"threads":[{"tid":1,"set":{"comm":"#
            .to_vec();
    delta.extend(deep(b"[", b"]"));
    delta.extend(b"}}]}");
    match decode_quickly(&zstd(&delta), "delta") {
        Err(e @ FormatError::Foreign { .. }) => {
            assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
        }
        r => panic!("delta: want Foreign, got {r:?}"),
    }
    // Balanced in a field this build does not know: skipped without
    // recursion (bounded by the decompression cap), so the file loads.
    let mut unknown = br#"{"format":"runq-ctprof","schema_version":2,"future":"#.to_vec();
    unknown.extend(deep(b"[", b"]"));
    unknown.push(b'}');
    check(
        &decode_quickly(&zstd(&unknown), "unknown"),
        Expect::Loads,
        "unknown",
    );
}

#[test]
fn control_characters_in_names_load_unchanged() {
    let raw = std::fs::read(corpus_dir().join("control-names.json")).unwrap();
    let s = decode_quickly(&zstd(&raw), "control-names").unwrap();
    assert_eq!(s.threads[0].pcomm, "nul\0in");
    assert_eq!(
        s.threads[0].comm,
        "\x1b[2J\x1b]0;pwned\x07\r\nx\x7f\u{9b}31m"
    );
}

#[test]
fn a_snapshot_runq_wrote_round_trips_under_the_cap() {
    let mut s = CtprofSnapshot::new();
    s.threads = (0..20_000)
        .map(|i| ThreadState {
            tid: i,
            tgid: i / 10,
            comm: format!("worker-{}", i % 10),
            ..ThreadState::default()
        })
        .collect();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("big.ctprof.zst");
    let written = runq_ctprof::save(&s, &p).unwrap();
    assert_eq!(load(&p).unwrap(), s);
    assert_eq!(s.schema_version, SCHEMA_VERSION);
    let json = serde_json::to_vec(&s).unwrap().len() as u64;
    assert!(
        json < written * MAX_RATIO,
        "{json} bytes from {written}: the ratio cap must hold runq's own files"
    );
}
