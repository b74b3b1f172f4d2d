use std::time::Instant;

use super::*;
use crate::clock::thread_cpu_ns;

fn payload(pid: u32, tgid: u32, comm: &str, virt_ns: u64, utime_us: u64) -> Vec<u8> {
    let mut p = vec![0u8; 416];
    p[0..2].copy_from_slice(&13u16.to_ne_bytes());
    p[off::CPU_RUN_VIRTUAL..off::CPU_RUN_VIRTUAL + 8].copy_from_slice(&virt_ns.to_ne_bytes());
    p[off::COMM..off::COMM + comm.len()].copy_from_slice(comm.as_bytes());
    p[off::PID..off::PID + 4].copy_from_slice(&pid.to_ne_bytes());
    p[off::UTIME_US..off::UTIME_US + 8].copy_from_slice(&utime_us.to_ne_bytes());
    p[off::TGID..off::TGID + 4].copy_from_slice(&tgid.to_ne_bytes());
    p
}

#[test]
fn exit_payload_fields() {
    let r = parse_exit_stats(&payload(42, 40, "worker-3", 200_000_000, 0)).unwrap();
    assert_eq!(
        (r.pid, r.tgid, r.comm.as_str(), r.cpu_ns),
        (42, 40, "worker-3", 200_000_000)
    );
    let r = parse_exit_stats(&payload(42, 40, "w", 0, 1500)).unwrap();
    assert_eq!(r.cpu_ns, 1_500_000, "falls back to utime + stime");
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn live_exit_record_carries_cpu_time() {
    let mut c = TaskstatsClient::open().unwrap();
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    c.register_exits(cpus.trim()).unwrap();
    let h = std::thread::Builder::new()
        .name("exit-probe".into())
        .spawn(|| {
            let t = Instant::now();
            let mut x = 0u64;
            while t.elapsed() < Duration::from_millis(200) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            // SAFETY: gettid has no preconditions.
            (unsafe { libc::gettid() } as u32, thread_cpu_ns())
        })
        .unwrap();
    let (tid, cpu) = h.join().unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !got.iter().any(|r: &ExitRecord| r.pid == tid) && Instant::now() < deadline {
        c.recv_exits(Duration::from_millis(500), &mut got).unwrap();
    }
    let r = got
        .iter()
        .find(|r| r.pid == tid)
        .expect("exit record of the probe thread");
    assert_eq!(r.tgid, std::process::id());
    assert_eq!(r.comm, "exit-probe");
    let ratio = r.cpu_ns as f64 / cpu as f64;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "taskstats {} ns vs thread clock {cpu} ns",
        r.cpu_ns
    );
}
