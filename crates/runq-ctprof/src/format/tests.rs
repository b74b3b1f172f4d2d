use super::*;
use crate::load;
use crate::metric_types::*;
use crate::model::ThreadState;
use proptest::prelude::*;

fn sample() -> CtprofSnapshot {
    let mut s = CtprofSnapshot::new();
    let t = ThreadState {
        tid: 7,
        tgid: 7,
        comm: "a (b) c".into(),
        run_time_ns: MonotonicNs(5),
        cpu_affinity: CpuSet(vec![0, 1]),
        ..ThreadState::default()
    };
    s.threads.push(t);
    s
}

#[test]
fn roundtrip_on_disk() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("x.ctprof.zst");
    save(&sample(), &p).unwrap();
    assert_eq!(load(&p).unwrap(), sample());
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "no temp file left"
    );
}

#[test]
fn zero_fields_are_not_written() {
    let json = serde_json::to_string(&sample().threads[0]).unwrap();
    assert!(!json.contains("wait_sum"), "{json}");
    assert!(json.contains("run_time_ns"));
}

#[test]
fn unknown_fields_of_this_schema_are_skipped() {
    let json = br#"{"format":"runq-ctprof","schema_version":2,"new_top":1,"threads":[{"tid":3,"future_field":[1,2]}]}"#;
    let bytes = zstd::encode_all(&json[..], 3).unwrap();
    let s = decode(&bytes, Path::new("f")).unwrap();
    assert_eq!(s.threads[0].tid, 3);
    assert_eq!(s.schema_version, 2);
    assert!(s.host.is_none());
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let json = br#"{"format":"runq-ctprof","schema_version":999}"#;
    let bytes = zstd::encode_all(&json[..], 3).unwrap();
    let e = decode(&bytes, Path::new("f.ctprof.zst")).unwrap_err();
    assert!(
        matches!(
            e,
            FormatError::Newer {
                found: 999,
                newest: SCHEMA_VERSION,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("f.ctprof.zst: a ctprof snapshot of schema version 999, newer than this runq reads (version {SCHEMA_VERSION} and older); read it with a newer runq")
    );
}

#[test]
fn the_cap_follows_the_size_between_its_floor_and_ceiling() {
    assert_eq!(decompressed_cap(0), MIN_DECOMPRESSED_CAP);
    assert_eq!(decompressed_cap(1 << 20), MAX_RATIO << 20);
    assert_eq!(decompressed_cap(MAX_SNAPSHOT_BYTES), MAX_DECOMPRESSED);
}

#[test]
fn an_oversized_file_says_why() {
    let e = FormatError::Oversized {
        path: "b".into(),
        compressed: 100 << 10,
        cap: decompressed_cap(100 << 10),
    };
    assert_eq!(
        e.to_string(),
        "b: not a ctprof snapshot: its 100 KiB decompress to more than 16 MiB (over 163× its size; runq's own grow about 30× at most); pass a file written by `runq ctprof capture`"
    );
    let e = FormatError::Oversized {
        path: "b".into(),
        compressed: 200 << 20,
        cap: decompressed_cap(200 << 20),
    };
    assert!(
        e.to_string()
            .contains("more than 1024 MiB (more than any snapshot runq reads)"),
        "{e}"
    );
}

#[test]
fn clear_errors() {
    let p = Path::new("f.ctprof.zst");
    assert!(matches!(
        decode(b"hello", p),
        Err(FormatError::NotZstd { .. })
    ));
    let good = encode(&sample()).unwrap();
    let e = decode(&good[..good.len() / 2], p).unwrap_err();
    assert!(
        matches!(e, FormatError::Corrupt { .. } | FormatError::Foreign { .. }),
        "{e}"
    );
    let foreign = zstd::encode_all(&br#"{"hello":1}"#[..], 3).unwrap();
    let e = decode(&foreign, p).unwrap_err();
    assert!(e.to_string().contains("not a ctprof snapshot"), "{e}");
    let wrong_type = zstd::encode_all(&br#"{"format":"runq-ctprof","threads":3}"#[..], 3).unwrap();
    assert!(matches!(
        decode(&wrong_type, p),
        Err(FormatError::Foreign { .. })
    ));
    assert!(matches!(
        load(Path::new("/nonexistent/x")),
        Err(FormatError::Input(_))
    ));
}

proptest! {
    #[test]
    fn loader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes, Path::new("p"));
        let mut z = ZSTD_MAGIC.to_vec();
        z.extend_from_slice(&bytes);
        let _ = decode(&z, Path::new("p"));
    }

    #[test]
    fn loader_never_panics_on_json(text in "\\PC{0,200}") {
        let z = zstd::encode_all(text.as_bytes(), 3).unwrap();
        let _ = decode(&z, Path::new("p"));
    }
}

#[test]
fn reused_tid_is_a_different_key() {
    let a = ThreadState {
        tid: 42,
        start_time_clock_ticks: 100,
        ..ThreadState::default()
    };
    let b = ThreadState {
        tid: 42,
        start_time_clock_ticks: 900,
        ..ThreadState::default()
    };
    assert_ne!(a.key(), b.key());
    assert_eq!(a.key(), (42, 100));
}
