use super::*;
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
fn forward_compatible() {
    let json = br#"{"format":"runq-ctprof","schema_version":99,"new_top":1,"threads":[{"tid":3,"future_field":[1,2]}]}"#;
    let bytes = zstd::encode_all(&json[..], 3).unwrap();
    let s = decode(&bytes, Path::new("f")).unwrap();
    assert_eq!(s.threads[0].tid, 3);
    assert_eq!(s.schema_version, 99);
    assert!(s.host.is_none());
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
