//! PipeIo with one side of a pair killed mid-run: the survivor sees its
//! pipe close, stops (no spinning on EOF), reports which partner it lost,
//! and the group's verdict fails naming the dead partner.

use runq_workload::CheckId;
use std::time::{Duration, Instant};

use runq_workload::{CheckConfig, Detail, GroupDetail, GroupWork};
use runq_workload::{WorkSpec, WorkType, WorkerExitInfo, WorkloadHandle};

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after_comm.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Waits until `pid` uses no CPU over a 300 ms window (it stopped
/// working); false if it is still burning CPU after `limit`.
fn goes_quiet(pid: u32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_millis(300));
        if before.is_none() || cpu_ticks(pid) == before {
            return true;
        }
    }
    false
}

#[test]
fn killing_one_side_of_a_pair_fails_the_verdict_naming_it() {
    let spec = WorkSpec::new(0, WorkType::from_name("PipeIo").unwrap(), 2);
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    let pids = handle.pids();
    let (survivor, victim) = (pids[0].0, pids[1].0);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: killing our own child worker.
    unsafe { libc::kill(victim as libc::pid_t, libc::SIGKILL) };
    assert!(
        goes_quiet(survivor, Duration::from_secs(30)),
        "the survivor kept running after its partner died"
    );
    let reports = handle.stop_and_collect(Duration::from_secs(10));
    let (s, v) = (&reports[0], &reports[1]);
    assert_eq!(s.tid, survivor);
    assert!(s.completed && s.work_units > 0, "{s:?}");
    assert_eq!(s.partner_lost, Some(1), "the survivor names worker 1");
    assert_eq!(v.exit_info, Some(WorkerExitInfo::Signaled(libc::SIGKILL)));
    let refs: Vec<_> = reports.iter().collect();
    let results = CheckConfig::default().evaluate_group("pipe", &refs, GroupWork::Framework);
    let ns = results
        .iter()
        .find(|r| r.check == CheckId::NotStuck)
        .unwrap();
    assert!(!ns.pass, "a dead partner fails not_stuck: {ns:?}");
    assert!(
        matches!(&ns.detail[..], [Detail::Group(GroupDetail::PartnersLost { lost })]
            if lost[0].partner == 1 && lost[0].partner_pid == victim),
        "{:?}",
        ns.detail
    );
}

#[test]
fn a_normal_stop_loses_no_partner() {
    let spec = WorkSpec::new(0, WorkType::from_name("PipeIo").unwrap(), 4);
    let mut handle = WorkloadHandle::spawn(&[spec]).expect("spawn");
    handle.start();
    std::thread::sleep(Duration::from_millis(300));
    let reports = handle.stop_and_collect(Duration::from_secs(10));
    let refs: Vec<_> = reports.iter().collect();
    let results = CheckConfig::default().evaluate_group("pipe", &refs, GroupWork::Framework);
    let ns = results
        .iter()
        .find(|r| r.check == CheckId::NotStuck)
        .unwrap();
    assert!(ns.pass && ns.detail.is_empty(), "{ns:?}");
}
