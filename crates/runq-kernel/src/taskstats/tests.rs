use super::*;

fn payload(len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0..2].copy_from_slice(&15u16.to_ne_bytes());
    let mut put = |off: usize, v: u64| {
        if off + 8 <= len {
            p[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        }
    };
    put(16, 3);
    put(24, 300);
    put(72, 7000);
    put(200, 1024);
    put(208, 4096);
    put(416, 2);
    put(424, 20);
    put(432, 150);
    put(440, 50);
    p
}

fn reply(stats: &[u8]) -> Vec<u8> {
    let mut inner = Vec::new();
    inner.extend_from_slice(&8u16.to_ne_bytes());
    inner.extend_from_slice(&1u16.to_ne_bytes());
    inner.extend_from_slice(&42u32.to_ne_bytes());
    inner.extend_from_slice(&((4 + stats.len()) as u16).to_ne_bytes());
    inner.extend_from_slice(&TASKSTATS_TYPE_STATS.to_ne_bytes());
    inner.extend_from_slice(stats);
    inner.resize(align4(inner.len()), 0);
    let mut m = build_request(22, 1, 1, TASKSTATS_TYPE_AGGR_PID, &inner);
    let total = m.len() as u32;
    m[0..4].copy_from_slice(&total.to_ne_bytes());
    m
}

#[test]
fn full_payload() {
    let t = parse_taskstats(&payload(560)).unwrap();
    assert_eq!(t.version, 15);
    assert_eq!(t.cpu.count, 3);
    assert_eq!(t.cpu.total_ns, 300);
    assert_eq!(t.run_virtual_ns, 7000);
    assert_eq!(t.cpu.max_ns, 150);
    assert_eq!(t.cpu.min_ns, 50);
    assert_eq!(t.irq.total_ns, 20);
    assert_eq!(t.hiwater_rss_kb, 1024);
    assert_eq!(t.hiwater_vm_kb, 4096);
}

#[test]
fn truncated_payload_reads_zero_past_the_end() {
    let t = parse_taskstats(&payload(420)).unwrap();
    assert_eq!(t.cpu.total_ns, 300);
    assert_eq!(t.irq, DelayBucket::default());
    assert_eq!(t.cpu.max_ns, 0);
    let t = parse_taskstats(&payload(30)).unwrap();
    assert_eq!(t.cpu.count, 3);
    assert_eq!(t.cpu.total_ns, 0);
    assert!(parse_taskstats(&[1]).is_none());
}

#[test]
fn reply_roundtrip_and_errors() {
    let t = parse_reply(&reply(&payload(560))).unwrap();
    assert_eq!(t.cpu.count, 3);
    // Truncated message: cut inside the stats attribute.
    let full = reply(&payload(560));
    assert!(parse_reply(&full[..100]).is_err());
    // NLMSG_ERROR with -ESRCH.
    let mut err = vec![0u8; 36];
    err[0..4].copy_from_slice(&36u32.to_ne_bytes());
    err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
    err[16..20].copy_from_slice(&(-libc::ESRCH).to_ne_bytes());
    assert_eq!(parse_reply(&err), Err(QueryError::NoTask));
    err[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
    assert_eq!(parse_reply(&err), Err(QueryError::Permission));
    assert!(parse_reply(&[]).is_err());
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn live_query_as_root() {
    let mut c = TaskstatsClient::open().expect("taskstats family");
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let t = c.query(tid).expect("query self");
    eprintln!("taskstats version {}", t.version);
    assert!(t.version >= 8, "version {}", t.version);
    assert!(t.hiwater_vm_kb > 0, "own VM watermark is non-zero");
    assert_eq!(c.query(u32::MAX >> 2), Err(QueryError::NoTask));
}

/// A thread's CPU figures in taskstats are its schedstat's: on-CPU time,
/// run-queue wait and the times it ran (what lets a capture skip the
/// schedstat file when taskstats answered).
#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn live_cpu_figures_are_the_schedstat_ones() {
    let mut c = TaskstatsClient::open().expect("taskstats family");
    let (tx, rx) = std::sync::mpsc::channel();
    let parked = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() } as u32).unwrap();
        std::thread::park();
    });
    let tid = rx.recv().unwrap();
    // Parked: its figures no longer move (a wake-up would retry).
    std::thread::sleep(std::time::Duration::from_millis(50));
    let path = format!("/proc/self/task/{tid}/schedstat");
    let schedstat = std::fs::read_to_string(&path).unwrap();
    let s = crate::schedstat::parse_schedstat(&schedstat).unwrap();
    let t = c.query(tid).expect("query the parked thread");
    parked.thread().unpark();
    parked.join().unwrap();
    assert!(t.cpu.count > 0, "a thread that ran has a run count");
    assert_eq!(
        (t.run_virtual_ns, t.cpu.total_ns, t.cpu.count),
        (s.cpu_time_ns, s.run_delay_ns, s.run_count)
    );
}
