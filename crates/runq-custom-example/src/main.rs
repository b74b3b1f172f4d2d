//! An example of custom work: a Rust function run as a runq worker.
//!
//! `checksum_worker` is an ordinary function taking a
//! [`CustomContext`]. runq-workload forks each worker, places it in its
//! group's cgroup, applies its affinity and policy, releases it with the
//! others and then calls the function, which loops until
//! [`CustomContext::stop_requested`] and returns the report that
//! [`CustomContext::report`] builds. Beside it a built-in SpinWait group
//! loads the CPUs, and the run is judged as `runq run` judges one.
//!
//! Usage: `runq-custom-example [--duration SECS] [--workers N]` (root
//! places the groups in cgroups; without it they run unplaced). Exit
//! codes as runq's: 0 PASS, 1 FAIL, 2 usage, 3 run error.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use runq_workload::{
    run_scenario, CgroupMode, CustomContext, CustomWork, RunOptions, ScenarioBuilder, Verdict,
    WorkType, WorkerReport,
};

/// Hash rounds per iteration.
const ROUNDS: u64 = 4096;

/// The custom worker: rounds of a 64-bit LCG hash (one work unit each),
/// with a 200 µs sleep every 16 iterations as its blocking step.
fn checksum_worker(ctx: &CustomContext) -> WorkerReport {
    let mut state = ctx.worker_idx as u64 + 1;
    let mut iterations = 0u64;
    while !ctx.stop_requested() {
        for _ in 0..ROUNDS {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
        std::hint::black_box(state);
        iterations += 1;
        if iterations % 16 == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    ctx.report(iterations * ROUNDS, iterations)
}

/// The run's shape from the command line: duration and custom workers.
fn parse_args(args: &[String]) -> Result<(Duration, usize), String> {
    let (mut secs, mut workers) = (2.0f64, 2usize);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--duration" => {
                secs = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 3600.0)
                    .ok_or_else(|| {
                        format!("--duration {value}: expected seconds from 0 to 3600")
                    })?;
            }
            "--workers" => {
                workers = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| format!("--workers {value}: expected 1 to 64"))?;
            }
            _ => {
                return Err(format!(
                    "unknown argument {flag:?} (--duration SECS, --workers N)"
                ))
            }
        }
    }
    Ok((Duration::from_secs_f64(secs), workers))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (duration, workers) = match parse_args(&args) {
        Ok(shape) => shape,
        Err(e) => {
            eprintln!("runq-custom-example: {e}");
            return ExitCode::from(2);
        }
    };
    let checksum = CustomWork {
        name: "Checksum",
        run: checksum_worker,
    };
    let spin = WorkType::from_name("SpinWait").expect("a built-in type");
    let scn = ScenarioBuilder::new("custom-example")
        .duration(duration)
        .cgroup("custom", Default::default())
        .cgroup("spin", Default::default())
        .custom_group("checksum", checksum, workers, Some("custom"))
        .group("spin", spin, 1, Some("spin"))
        .build();
    let stop = AtomicBool::new(false);
    let outcome = run_scenario(
        &scn,
        RunOptions {
            cgroups: CgroupMode::IfPermitted,
            interrupt: &stop,
            on_tick: &mut |_, _| {},
            collect_timeout: Duration::from_secs(10),
            repro: false,
            fault: None,
            max_workers_per_cpu: runq_workload::DEFAULT_WORKERS_PER_CPU,
            runnable_wait: Err("the example runs no probe".into()),
            freeze: None,
            recorder: Err("the example runs no per-task recorder".into()),
        },
    );
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("runq-custom-example: the run failed: {e}");
            return ExitCode::from(3);
        }
    };
    for g in &outcome.groups {
        println!(
            "group {} ({}): {} workers, {:.0} work units/s",
            g.name, g.work_type, g.workers, g.work_rate_per_s
        );
    }
    for c in &outcome.checks {
        let mark = if c.pass { "PASS" } else { "FAIL" };
        println!(
            "{mark} {} {} {} {} {}",
            c.check, c.group, c.measured, c.op, c.bound
        );
    }
    println!("verdict: {:?}", outcome.verdict);
    match outcome.verdict {
        Verdict::Pass => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_have_defaults_and_bad_values_say_what_is_expected() {
        assert_eq!(parse_args(&[]), Ok((Duration::from_secs(2), 2)));
        assert_eq!(
            parse_args(&args(&["--duration", "0.5", "--workers", "3"])),
            Ok((Duration::from_millis(500), 3))
        );
        let err = parse_args(&args(&["--workers", "0"])).unwrap_err();
        assert_eq!(err, "--workers 0: expected 1 to 64");
        let err = parse_args(&args(&["--duration"])).unwrap_err();
        assert_eq!(err, "--duration needs a value");
        assert!(parse_args(&args(&["--bogus", "1"])).is_err());
    }
}
