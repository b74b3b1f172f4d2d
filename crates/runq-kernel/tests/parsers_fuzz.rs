//! Property tests: every ctprof parser takes arbitrary bytes without
//! panicking.

use proptest::prelude::*;
use runq_kernel::{cgroup_stats, host, proc, psi, taskstats};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn task_file_parsers(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = proc::parse_stat(&b);
        let _ = proc::parse_status(&b);
        let _ = proc::parse_sched(&b);
        let _ = proc::parse_io(&b);
        let _ = proc::parse_smaps_rollup(&b);
        let _ = proc::parse_task_cgroup(&b);
        let _ = proc::cgroup_file::parse_v2_path(&b);
        let _ = runq_kernel::schedstat::parse_schedstat(&text(&b));
    }

    #[test]
    fn stat_like_lines(comm in "[ -~]{0,20}", tail in "[0-9 -]{0,200}") {
        let line = format!("1 ({comm}) S {tail}");
        if let Some(s) = proc::parse_stat(line.as_bytes()) {
            prop_assert_eq!(s.comm, comm);
        }
    }

    #[test]
    fn text_parsers(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        let t = text(&b);
        let _ = psi::parse_pressure(&t);
        let _ = cgroup_stats::parse_flat_keyed(&t);
        let _ = cgroup_stats::parse_cpu_max(&t);
        let _ = cgroup_stats::parse_limit(&t);
        let _ = host::parse_cpu_model(&t);
        let _ = host::parse_mem_total_kb(&t);
    }

    #[test]
    fn taskstats_payloads(b in proptest::collection::vec(any::<u8>(), 0..700)) {
        let _ = taskstats::parse_taskstats(&b);
        let _ = taskstats::parse_reply(&b);
        let _ = taskstats::attrs(&b).count();
    }
}
