//! jemalloc's per-thread counters read from live processes.
//!
//! The fast tests read a C stand-in (`tests/fixtures/jemalloc_tsd_mimic.c`,
//! compiled here with `cc`) whose counters hold known values; the slow
//! tier (`slow::`, ignored by default) reads a real statically linked
//! jemalloc, which takes about 150 CPU-seconds to build from its C source.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use runq_ctprof::jemalloc::{inspect, StaticJemalloc};
use runq_ctprof::{capture, CaptureOptions};

use crate::find;

/// Compiles the stand-in into `dir` with the host's C compiler (the one
/// rustc links with), with debug info as a jemalloc build has it.
fn build_stand_in(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jemalloc_tsd_mimic.c");
    let bin = dir.join("jemalloc-stand-in");
    let status = Command::new("cc")
        .args(["-g", "-O0", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("a C compiler (cc) to build the jemalloc stand-in");
    assert!(status.success(), "cc {}: {status}", src.display());
    bin
}

/// Starts `bin` with `args` and waits for its `ready <pid> <tids>` line;
/// the program runs until its stdin is closed.
fn start_ready(bin: &Path, args: &[&str]) -> (Child, Vec<u32>) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let tids = line
        .split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("no tids in {line:?}"))
        .split(',')
        .map(|t| t.parse().unwrap())
        .collect();
    (child, tids)
}

/// A capture of every thread's counters, without the slow sources.
fn capture_counters() -> runq_ctprof::CtprofSnapshot {
    capture(&CaptureOptions {
        taskstats: false,
        cgroups: false,
        ..Default::default()
    })
}

/// Every thread of the stand-in reads exactly the counters it wrote.
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn a_stand_in_reads_exactly_the_counters_its_threads_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build_stand_in(dir.path());
    let (mut child, tids) = start_ready(&bin, &["3"]);
    let snap = capture_counters();
    drop(child.stdin.take());
    let _ = child.wait();
    assert!(snap.probe_summary.unwrap().jemalloc_processes >= 1);
    for (i, tid) in (1u64..).zip(tids) {
        let t = find(&snap.threads, tid);
        assert_eq!(t.allocated_bytes.0, i * 1_000_003, "tid {tid}");
        assert_eq!(t.deallocated_bytes.0, i * 1009, "tid {tid}");
    }
    // Its main thread never wrote its counters: a real zero.
    assert_eq!(find(&snap.threads, child.id()).allocated_bytes.0, 0);
    let me = find(&snap.threads, std::process::id());
    assert_eq!(me.allocated_bytes.0, 0, "a process without jemalloc");
}

/// Stripped of its debug info or of every symbol, an executable that holds
/// jemalloc's mark is `Stripped`, never `Absent`.
fn assert_strips_to_stripped(bin: &Path) {
    assert!(matches!(inspect(bin), StaticJemalloc::Readable(_)));
    let dir = tempfile::tempdir().unwrap();
    for how in ["--strip-debug", "--strip-all"] {
        let out = dir.path().join(how.trim_start_matches('-'));
        let status = Command::new("objcopy")
            .arg(how)
            .arg(bin)
            .arg(&out)
            .status()
            .expect("objcopy (binutils)");
        assert!(status.success());
        assert_eq!(inspect(&out), StaticJemalloc::Stripped, "{how}");
    }
}

#[test]
fn a_stripped_stand_in_is_stripped_not_absent() {
    let dir = tempfile::tempdir().unwrap();
    assert_strips_to_stripped(&build_stand_in(dir.path()));
}

/// The same checks on a real jemalloc (`runq-demo-jemalloc`, built on
/// first use).
mod slow {
    use super::*;

    #[test]
    #[ignore = "slow tier (builds jemalloc from C, about 150 CPU-s): cargo test --workspace -- --ignored slow::"]
    fn jemalloc_counters_of_a_jemalloc_process() {
        assert!(
            runq_testkit::is_root(),
            "needs root (a capture seizes every thread): run the slow tier with sudo"
        );
        let bin = runq_testkit::jemalloc_demo();
        let (mut child, tids) = start_ready(&bin, &["2", "4194304"]);
        let snap = capture_counters();
        drop(child.stdin.take());
        let _ = child.wait();
        assert!(snap.probe_summary.unwrap().jemalloc_processes >= 1);
        for tid in tids {
            let t = find(&snap.threads, tid);
            let (a, d) = (t.allocated_bytes.0, t.deallocated_bytes.0);
            assert!(a >= 4 << 20, "tid {tid} allocated {a}");
            assert!(d >= 1 << 20, "tid {tid} freed {d}");
            assert!(a > d, "tid {tid}: {a} allocated, {d} freed");
        }
        let me = find(&snap.threads, std::process::id());
        assert_eq!(me.allocated_bytes.0, 0, "a process without jemalloc");
    }

    #[test]
    #[ignore = "slow tier (builds jemalloc from C, about 150 CPU-s): cargo test --workspace -- --ignored slow::"]
    fn a_stripped_jemalloc_executable_is_stripped_not_absent() {
        assert_strips_to_stripped(&runq_testkit::jemalloc_demo());
    }
}
