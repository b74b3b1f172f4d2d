//! A thread that lives 200 ms between two `runq ctprof record` captures 1 s
//! apart shows up, with its CPU time, in the next snapshot's exited-thread
//! tally (taskstats exit notifications; root). The thread belongs to a
//! program of its own (ctprof's `exiting-thread` example), whose process
//! outlives it, so that no other thread of that process exits meanwhile.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{spawn, wait_for};

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn short_lived_thread_is_in_the_next_exited_tally() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let mut program = Command::new(runq_testkit::example_bin("runq-ctprof", "exiting-thread"))
        .arg("200")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn exiting-thread");
    let mut lines = BufReader::new(program.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let child = spawn(&[
        "ctprof",
        "record",
        "--interval",
        "1s",
        "--count",
        "3",
        "-o",
        dir,
        "--no-jemalloc",
    ]);
    wait_for(Duration::from_secs(60), "the first snapshot", || {
        let n = runq_ctprof::record::list_snapshots(d.path()).ok()?.len();
        (n >= 1).then_some(())
    });
    let mut stdin = program.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let cpu: u64 = lines
        .next()
        .unwrap()
        .unwrap()
        .strip_prefix("cpu_ns ")
        .and_then(|n| n.parse().ok())
        .expect("cpu_ns N");
    let exited_at = runq_kernel::clock::unix_ns();
    let out = child.wait_with_output().unwrap();
    crate::common::assert_success(&out);
    let next = runq_ctprof::record::list_snapshots(d.path())
        .unwrap()
        .into_iter()
        .map(|(p, _)| runq_ctprof::load(&p).unwrap())
        .find(|s| s.captured_at_unix_ns > exited_at)
        .expect("a snapshot after the thread exited");
    drop(stdin);
    program.wait().unwrap();
    let tally = next
        .exited
        .iter()
        .find(|e| e.tgid == program.id())
        .expect("the program in the exited tally");
    assert_eq!(tally.threads, 1);
    let ratio = tally.cpu_ns as f64 / cpu as f64;
    eprintln!(
        "exited tally {} ns, thread clock {cpu} ns, ratio {ratio:.4}",
        tally.cpu_ns
    );
    assert!(
        (0.9..=1.1).contains(&ratio),
        "tally {} ns vs thread clock {cpu} ns",
        tally.cpu_ns
    );
    assert!(
        !tally.cgroup.is_empty() && !tally.pcomm.is_empty(),
        "{tally:?}"
    );
}
