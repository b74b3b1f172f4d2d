//! `runq collatz` end to end: the original's CSV line, CPUS rules, bad
//! arguments, statsd gauges, the deep targets, small sweeps with stand-in
//! profilers, the start-value search and the depth report.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use crate::common::runq;

fn run_ok(args: &[&str]) -> (String, String) {
    let out = runq().args(args).output().expect("run runq");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "runq {args:?}: {stderr}");
    (stdout, stderr)
}

fn csv_fields(line: &str) -> Vec<String> {
    line.trim().split(", ").map(str::to_string).collect()
}

#[test]
fn prints_the_original_csv_line() {
    let (out, err) = run_ok(&["collatz", "2", "3", "1000", "A"]);
    let f = csv_fields(&out);
    assert_eq!(f.len(), 7, "{out}");
    assert_eq!(&f[..4], ["2", "3", "1000", "7"]);
    // 2 processes x 3 x 1000 chains of 16 calls.
    assert_eq!(f[4], "96000");
    let ticks: u64 = f[5].parse().unwrap();
    let per_call: f64 = f[6].parse().unwrap();
    assert!((per_call - ticks as f64 / 96000.0).abs() < 1e-3, "{out}");
    assert!(err.contains("tsc") && err.contains("GHz"), "{err}");
}

#[test]
fn cpus_zero_minus_one_and_too_many() {
    let ncpu = std::thread::available_parallelism().unwrap().get();
    let first = |args: &[&str]| csv_fields(&run_ok(args).0)[0].clone();
    assert_eq!(
        first(&["collatz", "0", "1", "10", "A"]),
        (1 + ncpu / 2).to_string()
    );
    assert_eq!(first(&["collatz", "-1", "1", "10", "A"]), ncpu.to_string());
    // As the original: any negative CPUS is every CPU.
    assert_eq!(first(&["collatz", "-7", "1", "10", "A"]), ncpu.to_string());
    let (out, err) = run_ok(&["collatz", "1001", "1", "1", "A"]);
    assert_eq!(csv_fields(&out)[0], "1000");
    assert!(err.contains("using 1000"), "{err}");
}

#[test]
fn json_has_units_and_the_counter() {
    let (out, _) = run_ok(&["collatz", "1", "1", "100", "G", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["total_calls"], 100 * 524);
    assert_eq!(v["target"], "837799", "a string: targets pass 2^53");
    assert!(v["tsc_hz"].as_f64().unwrap() > 1e6);
    assert!(v["units"]["ticks_per_call"].is_string());
}

#[test]
fn bad_arguments_are_one_line_usage_errors() {
    for args in [
        ["collatz", "1", "-3", "10", "A"],
        ["collatz", "1", "1", "ten", "A"],
        ["collatz", "1", "1", "10", "Q"],
        ["collatz", "1.5", "1", "10", "A"],
        ["collatz", "x", "1", "10", "A"],
    ] {
        let out = runq().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("runq: "), "{err}");
    }
}

#[test]
fn version_and_help() {
    let (out, _) = run_ok(&["collatz", "-V"]);
    assert!(out.starts_with("runq collatz "), "{out}");
    let (out, _) = run_ok(&["collatz", "--help"]);
    assert!(out.contains("CPUS") && out.contains("837799"), "{out}");
}

#[test]
fn statsd_gauges_per_outer_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("dogstatsd.sock");
    let server = UnixDatagram::bind(&sock).unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let out = runq()
        .args(["collatz", "1", "2", "500", "B"])
        .env("DD_DOGSTATSD_SOCKET", &sock)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut lines = Vec::new();
    let mut buf = [0u8; 256];
    for _ in 0..6 {
        let n = server.recv(&mut buf).expect("a gauge");
        lines.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    assert!(lines[0].starts_with("app.collatz.ticks:") && lines[0].ends_with("|g"));
    assert_eq!(lines[1], "app.collatz.stacks:500|g");
    assert_eq!(lines[2], format!("app.collatz.functions:{}|g", 500 * 111));
    assert!(lines[3].starts_with("app.collatz.ticks:"));
}

/// Runs a short sweep (1 outer x 2000 inner loops per run) with these
/// arguments, writing into `out_dir`.
fn sweep(args: &[&str], out_dir: &std::path::Path) -> std::process::Output {
    runq()
        .args(["collatz", "sweep", "--outer", "1", "--inner", "2000"])
        .args(args)
        .arg("--output")
        .arg(out_dir)
        .output()
        .unwrap()
}

#[test]
fn a_small_sweep_writes_csv_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("sweep");
    let out = sweep(
        &[
            "--max-procs",
            "7",
            "--repeat",
            "1",
            "--settle",
            "10ms",
            "--profiler",
            "sleep 30 # stand-in for a profiler of {pid}",
        ],
        &out_dir,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_success(&out);
    assert!(stdout.contains("elbows at"), "{stdout}");
    assert!(stdout.contains("fit R²"), "{stdout}");
    assert!(stdout.contains("latency:"), "{stdout}");
    assert!(stdout.contains("asymptotic change:"), "{stdout}");

    let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7 * 2, "{csv}");
    assert!(csv.starts_with("procs,repeat,profiler,"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("sweep.json")).unwrap())
            .unwrap();
    assert_eq!(json["points"].as_array().unwrap().len(), 14);
    assert!(json["baseline"]["fit"]["elbows"].is_array());
    assert!(json["baseline"]["fit"]["r_squared"].is_number());
    assert_eq!(json["baseline"]["residuals"].as_array().unwrap().len(), 7);
    assert!(json["profiled"][0]["derived"]["asymptotic"]["change"].is_number());
    assert!(json["profiled"][0]["derived"]["latency_ticks_per_call"].is_number());
    assert!(json["profiled"][0]["paired_slowdown_pct"].is_number());
    let svg = std::fs::read_to_string(out_dir.join("sweep.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("with profiler"),
        "svg"
    );
}

#[test]
fn a_sweep_compares_several_profilers_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("sweep");
    let out = sweep(
        &[
            "--max-procs",
            "1",
            "--repeat",
            "2",
            "--settle",
            "10ms",
            "--profiler",
            "sleep 30 # first, {pid}",
            "--profiler",
            "sleep 30 # second, {pid}",
        ],
        &out_dir,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_success(&out);
    assert!(stdout.contains("with sleep 30 # first"), "{stdout}");
    assert!(stdout.contains("with sleep 30 # second"), "{stdout}");
    assert_eq!(stdout.matches("slowdown:").count(), 2, "{stdout}");
    assert!(stdout.contains("fit underdetermined"), "{stdout}");
    let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap();
    let modes: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap())
        .collect();
    // Each round runs the three modes back to back, in a seeded order.
    assert_eq!(modes.len(), 6, "{csv}");
    for round in modes.chunks(3) {
        let mut sorted = round.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, ["", "0", "1"], "{csv}");
    }
}

/// `(procs, profiler)` of each run of a sweep's CSV, in order.
fn run_order(csv: &str) -> Vec<(String, String)> {
    csv.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[2].to_string())
        })
        .collect()
}

#[test]
fn the_run_order_is_shuffled_and_follows_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let args = |seed: &'static str| {
        [
            "--max-procs",
            "4",
            "--repeat",
            "1",
            "--settle",
            "1ms",
            "--seed",
            seed,
            "--profiler",
            "sleep 30 # {pid}",
        ]
    };
    let mut orders = Vec::new();
    for (i, seed) in ["3", "3", "4"].into_iter().enumerate() {
        let out_dir = dir.path().join(i.to_string());
        let out = sweep(&args(seed), &out_dir);
        crate::common::assert_success(&out);
        let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap();
        orders.push(run_order(&csv));
    }
    assert_eq!(orders[0], orders[1], "the same seed, the same order");
    assert_ne!(orders[0], orders[2], "another seed, another order");
    let counts: Vec<&str> = orders[0].iter().map(|(n, _)| n.as_str()).collect();
    assert_ne!(counts, ["1", "1", "2", "2", "3", "3", "4", "4"]);
}

#[test]
fn sweep_stops_when_the_profiler_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(
        &[
            "--max-procs",
            "1",
            "--repeat",
            "1",
            "--settle",
            "200ms",
            "--profiler",
            "runq-no-such-profiler {pid}",
        ],
        &dir.path().join("sweep"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exited") && err.contains("runq-no-such-profiler"),
        "{err}"
    );
}

#[test]
fn sweep_rejects_a_profiler_without_pid() {
    let out = runq()
        .args(["collatz", "sweep", "--profiler", "perf record"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("{pid}"));
}

#[test]
fn deep_targets_make_exact_call_counts() {
    // calls = processes x depth x outer x inner.
    for (letter, depth) in [("I", 1132u64), ("J", 2001)] {
        let (out, _) = run_ok(&["collatz", "2", "3", "40", letter, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["total_calls"], 2 * depth * 3 * 40, "target {letter}");
    }
}

#[test]
fn search_finds_target_j_and_rejects_a_deep_start() {
    let (out, _) = run_ok(&["collatz", "search", "2001", "--from", "942488749153153"]);
    assert!(out.starts_with("135435277615595687: 2001 calls"), "{out}");
    let out = runq()
        .args(["collatz", "search", "100", "--from", "837799"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("524 calls") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn profiler_cpu_is_read_over_the_timed_window() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("sweep");
    // The first stand-in burns 1 s of CPU at start-up, then idles; the
    // second burns all along.
    let out = runq()
        .args([
            "collatz", "sweep", "--outer", "1", "--inner", "4000", "--target", "J",
        ])
        .args(["--max-procs", "1", "--repeat", "1", "--settle", "2s"])
        .args([
            "--profiler",
            "timeout 1 sh -c 'while :; do :; done'; sleep 30 # {pid}",
        ])
        .args(["--profiler", "while :; do :; done # {pid}"])
        .arg("--output")
        .arg(&out_dir)
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("sweep.json")).unwrap())
            .unwrap();
    let cpu = |k: usize| json["profiled"][k]["profiler_cpu_per_s"].as_f64().unwrap();
    let window = json["points"][0]["cpu_window_s"].as_f64().unwrap();
    assert!(window > 0.1, "a window of {window} s is too short to judge");
    assert!(cpu(0) < 0.05, "an idle profiler used {} CPU-s/s", cpu(0));
    // How much CPU the busy one gets depends on the host's load (0.07
    // CPU-s/s beside seven other tests); that it is read, and above the
    // idle one, does not.
    assert!(
        cpu(1) > 0.0 && cpu(1) > cpu(0),
        "a busy profiler read {} CPU-s/s, the idle one {}",
        cpu(1),
        cpu(0)
    );
}

const PERF_SCRIPT: &str = "runq 1 1.0: 1 cpu-clock:ppp: 
\t5a6080 runq_collatz::callgraph::GRID::f362+0x0 (/x/runq)
\t5aa306 runq_collatz::callgraph::GRID::f574+0x46 (/x/runq)

runq 1 1.1: 1 cpu-clock:ppp: 
\t5a6080 runq_collatz::callgraph::GRID::f362+0x0 (/x/runq)
\t1c9234 main+0x34 (/x/runq)
";

#[test]
fn depth_report_reads_perf_script_and_hud_exports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perf.txt");
    std::fs::write(&path, PERF_SCRIPT).unwrap();
    let (out, _) = run_ok(&[
        "collatz",
        "depth-report",
        path.to_str().unwrap(),
        "--target",
        "A",
    ]);
    assert!(out.contains("2 stacks, 2 in the call graph"), "{out}");
    assert!(
        out.contains("graph frames per stack: deepest 2, median 1"),
        "{out}"
    );
    assert!(out.contains("never reached main): 1 of 2"), "{out}");
    assert!(out.contains("16 calls deep: cut"), "{out}");
    // A hud export: one finding's stack, innermost first.
    let hud = dir.path().join("hud.json");
    let doc = serde_json::json!({"traceEvents": [{"ph": "X", "args": {"stack": [
        "runq_collatz::callgraph::GRID::f840 (/src/callgraph.rs:51)",
        "runq_collatz::callgraph::GRID::f613 (/src/callgraph.rs:54)",
        "runq_collatz::runner::work (/src/runner.rs:100)",
    ]}}]});
    std::fs::write(&hud, doc.to_string()).unwrap();
    let (out, _) = run_ok(&["collatz", "depth-report", hud.to_str().unwrap()]);
    assert!(out.contains("1 stacks, 1 in the call graph"), "{out}");
    assert!(out.contains("never reached main): 0 of 1"), "{out}");
    let out = runq()
        .args(["collatz", "depth-report", "/nonexistent/perf.data"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn perf_installed() -> bool {
    let ok = std::process::Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    // CI installs perf (.ci/apt-packages): there the skip would hide a gap.
    assert!(
        ok || std::env::var_os("CI").is_none(),
        "perf is not installed (apt-get install linux-perf)"
    );
    if !ok {
        eprintln!("skipped: needs perf");
    }
    ok
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root")]
fn perf_stacks_are_cut_at_the_kernel_limit() {
    if !perf_installed() {
        return;
    }
    let limit: usize = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let rec = std::process::Command::new("perf")
        .args(["record", "-q", "-F", "999", "-g", "-o"])
        .arg(&data)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_runq"))
        .args(["collatz", "1", "1", "3000", "J"])
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let (out, _) = run_ok(&[
        "collatz",
        "depth-report",
        data.to_str().unwrap(),
        "--target",
        "J",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["report"];
    assert_eq!(v["chain_calls"], 2001);
    assert!(r["graph_samples"].as_u64().unwrap() > 10, "{out}");
    let deepest = r["deepest_graph_frames"].as_u64().unwrap() as usize;
    assert!(deepest <= limit.min(2001), "{out}");
    if limit < 2001 {
        // Most of the chain lies below the cut: stacks end in the graph.
        assert_eq!(
            r["deepest_frames"].as_u64().unwrap() as usize,
            limit,
            "{out}"
        );
        assert!(r["cut_in_graph"].as_u64().unwrap() > 0, "{out}");
    }
}

#[test]
fn a_held_run_whose_holder_is_gone_does_not_run() {
    let out = runq()
        .args(["collatz", "1", "1", "10", "A", "--hold"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "a run that could not be carried out"
    );
    assert!(out.stdout.is_empty(), "it ran");
    assert!(String::from_utf8_lossy(&out.stderr).contains("start byte"));
}
