//! `runq run`: drive a scheduler scenario and report on it.

mod catalog;
pub mod error_doc;
mod evidence;
mod hostwait;
mod progress;
mod recorder;
mod repeats;
mod scenarios;
mod scheduler_args;
pub mod vm;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use std::path::Path;

use runq_common::duration::parse_duration;
use runq_results::results::{RawSamples, RunDocument};
use runq_workload::scenario_file::load_scenario;
use runq_workload::{CgroupMode, Fault, Placement, Scenario, ScenarioBuilder, WorkType};

use repeats::RunPlan;

use crate::exit;

/// Arguments of `runq run`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  runq run                                   built-in default scenario
  runq run --work-type PipeIo --workers 4 --duration 5s
  runq run --work-type PipeIo --param burst_iters=0 --json
  sudo runq run --scheduler 'scx_rusty' --scheduler-ready-sched-ext
  sudo runq run --work-type SpinWait --workers 8 --cgroup bench/spin

Exit codes:
  0   every check passed (verdict PASS)
  1   a check failed (verdict FAIL; the report says which)
  2   usage error: a bad flag, parameter or scenario file
  3   run error: the run could not go as planned (a fork or a cgroup
      operation failed, or the --scheduler could not start or was not
      ready in time); the report, when printed, is complete and the
      run's cgroups are removed (a scheduler that dies during the run is
      a FAIL, exit 1)
  75  indeterminate: checks failed, but load outside the run can
      account for every failed figure (verdict INDETERMINATE); run it
      again on a quieter host
  77  skipped: the run asks for cgroups and runq is not root, or the
      host lacks what it needs (SMT siblings, NUMA nodes, a loaded
      sched_ext scheduler for policy ext); nothing ran
  128+N  interrupted by signal N (SIGINT: 130); partial report")]
pub struct RunArgs {
    /// A scenario file (TOML; see scenarios/annotated.toml), `-` to read
    /// one from stdin, `default` for the built-in scenario, or the name of
    /// a ready-made one (`--list-scenarios`).
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// List every work type with its parameters, their defaults and valid
    /// ranges, then exit (`--json` for a document).
    #[arg(long, conflicts_with_all = RUN_ONLY)]
    pub list: bool,
    /// List the ready-made scenarios (ktstr's catalog and runq's own),
    /// each with what it exposes, then exit.
    #[arg(long, conflicts_with_all = RUN_ONLY)]
    pub list_scenarios: bool,
    /// Print a ready-made scenario's TOML, fitted to this host, as a
    /// starting point for one of your own; then exit.
    #[arg(long, value_name = "NAME", exclusive = true)]
    pub print_scenario: Option<String>,
    /// Explain one work type: what it does, its units, where it samples
    /// wake latency, its parameters and their ranges.
    #[arg(long, value_name = "TYPE", conflicts_with_all = RUN_ONLY)]
    pub explain: Option<String>,
    /// Repro mode: never signal the scenario's scheduler from the watchdog,
    /// so it stays alive for inspection.
    #[arg(long)]
    pub repro: bool,
    /// Run one group of this work type instead of the default scenario;
    /// `--list` shows every type (SpinWait, PipeIo, FutexFanOut,
    /// TimerLatency, WakeChain, ...).
    #[arg(long, value_name = "TYPE")]
    pub work_type: Option<String>,
    /// Override a work-type parameter, e.g. `burst_iters=0` (repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Workers in the group (default: one per online CPU, rounded up to
    /// what the type needs: pairs, triples, a messenger plus receivers).
    #[arg(long, value_parser = parse_workers)]
    pub workers: Option<usize>,
    /// How long the workers run: 500ms, 5s, 1m, or plain seconds (0.5).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Place the group in this cgroup, relative to runq's own parent
    /// (`runq/<run-id>/PATH`). Needs root; exits 77 without it.
    /// CgroupChurn and CgroupAttachStorm, which make children of their
    /// group's cgroup, get one named after the type when root, unless
    /// `--no-cgroups`.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// Never create cgroups, even when permitted.
    #[arg(long, conflicts_with = "cgroup")]
    pub no_cgroups: bool,
    /// The group's scheduling policy: normal, batch, idle, ext (SCHED_EXT:
    /// the loaded sched_ext scheduler, for one not in switch-all mode),
    /// fifo:PRIO, rr:PRIO, deadline:RUNTIME_US/DEADLINE_US/PERIOD_US.
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<String>,
    /// Deadline for collecting reports after the stop signal.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub collect_timeout: Duration,
    /// Print the full outcome (summaries and every worker report) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Keep the workers' raw samples (wake latencies, iteration costs: up
    /// to 100,000 each) in `--json` and `--output`; by default the
    /// document carries their summaries only.
    #[arg(long)]
    pub raw: bool,
    /// Take ctprof snapshots as the workers start and just before the
    /// planned end, write them (and compare.json) to DIR, and print the
    /// compare of the run's own cgroups below the report.
    #[arg(long, value_name = "DIR")]
    pub ctprof: Option<std::path::PathBuf>,
    /// Run the scenario N times and keep every repeat's figures (for
    /// `runq compare`); the verdict FAILs when any repeat failed.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Also write the JSON document (`--json`'s, with schema_version, host
    /// facts, the scenario and every repeat's figures) to FILE.
    #[arg(long, short, value_name = "FILE.json")]
    pub output: Option<std::path::PathBuf>,
    /// The most workers per online CPU a run may start; a run asking for
    /// more is refused before the first fork (the host's pid, thread,
    /// process and memory limits are checked as well).
    #[arg(long, value_name = "N", default_value_t = runq_workload::DEFAULT_WORKERS_PER_CPU,
          value_parser = clap::value_parser!(usize))]
    pub max_workers_per_cpu: usize,
    /// Time between snapshots of every group's counters (kept in `--json`
    /// and `--output` as `series`, judged by a scenario's series checks):
    /// 100ms by default, at least 10ms, or `off`.
    #[arg(long, value_name = "DURATION|off", value_parser = parse_interval)]
    pub snapshot_interval: Option<SnapshotInterval>,
    /// Measure the longest time any task on the host waited runnable for a
    /// CPU, with BPF on the scheduler tracepoints (root; about 0.5 µs per
    /// context switch, so off unless asked for here or by the scenario's
    /// `max_runnable_wait_ms` check).
    #[arg(long)]
    pub runnable_wait: bool,
    /// Record the scheduler's events on every CPU (switches, wakeups with
    /// their waker, migrations) into a kernel buffer of MIB_PER_CPU
    /// (`--flight-recorder=64`; 16 by default) that keeps the newest,
    /// read once after a FAIL, so that each failed check comes with its
    /// evidence: who held the CPU its worker waited on, and a Perfetto
    /// trace of the moment. Root. Off unless asked for: about 0.45 µs per
    /// scheduler event, 8-30% of a CPU in the default scenario (170,000 to
    /// 660,000 events/s; 16 MiB per CPU hold its last 1-2 s).
    #[arg(long, value_name = "MIB_PER_CPU", num_args = 0..=1, require_equals = true,
          default_missing_value = "16",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub flight_recorder: Option<u32>,
    /// Keep the flight recorder recording to the end of the run. By
    /// default the first worker whose gap passes the scenario's
    /// `max_gap_ms`, or the first group whose work units stall past its
    /// `stall` check, stops it then (like cyclictest -b), so that the rest
    /// of the run cannot overwrite that moment; the evidence says when.
    #[arg(long, requires = "flight_recorder")]
    pub no_freeze: bool,
    /// Run without the per-task recorder. By default (as root) BPF
    /// programs on the scheduler tracepoints sum, for each worker only,
    /// its run time and runnable waits, who woke it and who held its CPU
    /// while it waited, so that each failed check names the tasks behind
    /// it; without root the causes come from /proc and schedstat alone.
    /// It runs on BTF tracepoints where the kernel has BTF, else on the
    /// classic ones; `RUNQ_RECORDER_TRACEPOINTS=btf|classic` picks one.
    #[arg(long, conflicts_with = "evidence")]
    pub no_recorder: bool,
    /// The recorder's fidelity: `auto` (exact while its measured cost,
    /// over the first 100 ms, fits --overhead-budget; else each CPU sampled
    /// at 250 Hz, with each worker's run and wait from schedstat), `exact`,
    /// `sampled`, or `off` (as --no-recorder).
    #[arg(long, value_enum, default_value_t = recorder::EvidenceArg::Auto)]
    pub evidence: recorder::EvidenceArg,
    /// The most CPU runq's instruments may take from the run, as a share
    /// of one CPU: `1%` (the default), `0.5%`, or a fraction (`0.01`).
    #[arg(long, value_name = "SHARE", default_value = "1%", value_parser = recorder::parse_budget)]
    pub overhead_budget: f64,
    /// Where a FAIL's evidence traces go (default: the system's temporary
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub evidence_dir: Option<std::path::PathBuf>,
    /// Write a JUnit XML report to FILE: one testcase per group and check.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<std::path::PathBuf>,
    /// The scheduler under test.
    #[command(flatten)]
    pub sched: scheduler_args::SchedulerArgs,
    /// The run inside a VM.
    #[command(flatten)]
    pub vm: Box<vm::VmArgs>,
}

/// The flags that shape a run, which the listings refuse (only `--json`
/// goes with them).
const RUN_ONLY: [&str; 19] = [
    "scenario",
    "work_type",
    "params",
    "workers",
    "duration",
    "cgroup",
    "no_cgroups",
    "policy",
    "raw",
    "ctprof",
    "output",
    "junit",
    "snapshot_interval",
    "runnable_wait",
    "flight_recorder",
    "no_freeze",
    "no_recorder",
    "overhead_budget",
    "evidence_dir",
];

/// `--snapshot-interval`: a duration, or `None` for `off`.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotInterval(Option<Duration>);

/// Parses `--snapshot-interval`: `off` or `0`, or a duration of at least
/// 10ms.
fn parse_interval(text: &str) -> Result<SnapshotInterval, String> {
    if matches!(text.trim(), "off" | "0") {
        return Ok(SnapshotInterval(None));
    }
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    if d < runq_workload::series::MIN_INTERVAL {
        return Err(format!(
            "{d:?} is below the 10ms minimum (off turns snapshots off)"
        ));
    }
    Ok(SnapshotInterval(Some(d)))
}

/// Builds the scenario the flags describe.
fn scenario_from_args(args: &RunArgs) -> anyhow::Result<(Scenario, CgroupMode)> {
    let duration = args.duration.unwrap_or(runq_workload::DEFAULT_DURATION);
    let single = args.work_type.is_some()
        || args.workers.is_some()
        || args.cgroup.is_some()
        || args.policy.is_some()
        || !args.params.is_empty();
    if let Some(d) = args.duration.filter(|d| *d < MIN_DURATION) {
        return Err(exit::usage(format!(
            "--duration {d:?} is too short to measure anything; give at least 10ms"
        )));
    }
    if single && args.scenario.is_some() {
        return Err(exit::usage(
            "a scenario (a file, `-` or `default`) cannot be combined with \
             --work-type/--workers/--param/--cgroup/--policy; drop one of them",
        ));
    }
    if let Some(name) = args.scenario.as_deref().filter(|n| *n != "default") {
        let mut scn = read_scenario(name)?;
        if args.duration.is_some() {
            scn.duration = duration;
        }
        let mode = match (args.no_cgroups, scn.wants_cgroups()) {
            (true, _) => CgroupMode::Off,
            (false, true) => CgroupMode::Required,
            (false, false) => CgroupMode::IfPermitted,
        };
        return Ok((scn, mode));
    }
    if !single {
        let mut scn = Scenario::default_scenario();
        scn.duration = duration;
        let mode = if args.no_cgroups {
            CgroupMode::Off
        } else {
            CgroupMode::IfPermitted
        };
        return Ok((scn, mode));
    }
    single_group_scenario(args, duration)
}

/// The one-group scenario of `--work-type`, `--workers`, `--param`,
/// `--cgroup` and `--policy`.
fn single_group_scenario(
    args: &RunArgs,
    duration: Duration,
) -> anyhow::Result<(Scenario, CgroupMode)> {
    let name = args.work_type.as_deref().unwrap_or("SpinWait");
    let mut work =
        WorkType::from_name(name).map_err(|e| exit::usage(format!("--work-type: {e}")))?;
    let params = parse_params(&args.params)?;
    if !params.is_empty() {
        work = work
            .with_params(&params)
            .map_err(|e| exit::usage(format!("--param: {e}")))?;
    }
    let workers = args.workers.unwrap_or_else(|| default_workers(&work));
    work.validate_workers(workers)
        .map_err(|e| exit::usage(format!("--workers: {e}")))?;
    if let Some(cg) = &args.cgroup {
        runq_kernel::cgroup::validate_group_path(cg)
            .map_err(|e| exit::usage(format!("--cgroup: {e}")))?;
    }
    let policy = args
        .policy
        .as_deref()
        .map(runq_workload::scenario_file::parse_policy)
        .transpose()
        .map_err(|e| exit::usage(format!("--policy: {e}")))?;
    // A type that works on its own cgroup (CgroupChurn,
    // CgroupAttachStorm) gets one named after it unless told otherwise.
    let cgroup = args
        .cgroup
        .clone()
        .or_else(|| (work.needs_own_cgroup() && !args.no_cgroups).then(|| work.name().to_string()));
    let mut builder = ScenarioBuilder::new(work.name()).duration(duration);
    if let Some(cg) = &cgroup {
        builder = builder.cgroup(cg, Default::default());
    }
    let mut scn = builder
        .group(work.name(), work, workers, cgroup.as_deref())
        .build();
    if let Some(p) = policy {
        scn.groups[0].setup.policy = p;
    }
    let mode = match (&args.cgroup, args.no_cgroups) {
        (Some(_), _) => CgroupMode::Required,
        (None, true) => CgroupMode::Off,
        (None, false) => CgroupMode::IfPermitted,
    };
    Ok((scn, mode))
}

/// The shortest `--duration` (a 1 ns run measured nothing and printed
/// negative rates).
const MIN_DURATION: Duration = Duration::from_millis(10);

/// Loads the scenario file `name` (or the ready-made scenario of that
/// name when no such file exists), or reads one from stdin for `-`.
fn read_scenario(name: &str) -> anyhow::Result<Scenario> {
    if name != "-" {
        let path = Path::new(name);
        if !path.exists() && !scenarios::looks_like_a_path(name) {
            return scenarios::load(name)
                .unwrap_or_else(|| Err(scenarios::unknown(name, "runq run")));
        }
        return Ok(load_scenario(path)?);
    }
    let mut text = String::new();
    let limit = runq_workload::scenario_file::MAX_SCENARIO_BYTES;
    std::io::Read::read_to_string(
        &mut std::io::Read::take(std::io::stdin(), limit + 1),
        &mut text,
    )
    .map_err(|e| exit::usage(format!("reading the scenario from stdin: {e}")))?;
    if text.len() as u64 > limit {
        return Err(exit::usage(format!(
            "the scenario on stdin is larger than {} KiB; a scenario file is a few KiB of TOML",
            limit / 1024
        )));
    }
    Ok(runq_workload::scenario_file::parse_scenario(
        Path::new("<stdin>"),
        &text,
    )?)
}

/// `--workers`: a whole number (the type's own rule is checked later).
fn parse_workers(text: &str) -> Result<usize, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of workers (try --workers 4)"))
}

fn parse_params(raw: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    raw.iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| {
                    exit::usage(format!(
                        "--param {p:?}: expected KEY=VALUE, e.g. --param burst_iters=0"
                    ))
                })
        })
        .collect()
}

fn default_workers(work: &WorkType) -> usize {
    let n = runq_kernel::cpulist::online_cpus().len().max(1);
    // The smallest count from one per CPU up that the type accepts (pairs,
    // a messenger plus receivers, triples).
    (n..n + 6)
        .find(|&w| work.validate_workers(w).is_ok())
        .unwrap_or(n)
}

/// The text of `--list`, `--explain`, `--list-scenarios` or
/// `--print-scenario`, when one of them is asked for.
fn listing(args: &RunArgs) -> anyhow::Result<Option<String>> {
    if args.list {
        return catalog::render_list(args.json).map(Some);
    }
    if let Some(name) = &args.explain {
        let work = WorkType::from_name(name).map_err(|e| exit::usage(format!("--explain: {e}")))?;
        return catalog::render_explain(&work, args.json).map(Some);
    }
    if args.list_scenarios {
        return scenarios::render_list(args.json).map(Some);
    }
    args.print_scenario
        .as_deref()
        .map(scenarios::print)
        .transpose()
}

/// CgroupChurn and CgroupAttachStorm move tasks between child cgroups of
/// their group's cgroup: without cgroups they cannot do what they are
/// for, so the run is refused before it starts (CgroupChurn used to run
/// its whole duration and FAIL `setup_applied`).
fn refuse_churn_without_cgroups(scn: &Scenario, mode: CgroupMode) -> anyhow::Result<()> {
    let churn = scn.groups.iter().find(|g| {
        g.custom.is_none()
            && g.work.needs_own_cgroup()
            && (mode == CgroupMode::Off || g.cgroup.is_none())
    });
    match churn {
        Some(g) => Err(exit::usage(format!(
            "group {}: {} moves tasks between cgroups and needs one of its own; \
             drop --no-cgroups, or give the group a cgroup in the scenario",
            g.name,
            g.work.name()
        ))),
        None => Ok(()),
    }
}

/// Whether the run attaches to the kernel's text: a scheduler (the
/// scenario's, `has_scheduler`, or `--scheduler`), the per-task
/// recorder, the flight recorder and --runnable-wait each attach to its
/// tracepoints.
fn attaches_to_the_kernel(args: &RunArgs, has_scheduler: bool) -> bool {
    has_scheduler
        || !args.sched.scheduler.is_empty()
        || args.recorder_policy().is_ok()
        || args.flight_recorder.is_some()
        || args.runnable_wait
}

/// Runs the scenario and prints its report.
pub fn execute(args: RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(text) = listing(&args)? {
        crate::out!("{}", text);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(list) = vm::scenario_list(&args)? {
        args.vm.wanted()?;
        check_outputs(&args)?;
        let patches_text = attaches_to_the_kernel(&args, list.iter().any(|(_, s)| *s));
        let list: Vec<_> = list.into_iter().map(|(m, _)| m).collect();
        return vm::run_in_vm(&args, &list, patches_text);
    }
    let (mut scn, cgroups) = scenario_from_args(&args)?;
    if args.vm.wanted()? {
        check_outputs(&args)?;
        let patches_text = attaches_to_the_kernel(&args, scn.scheduler.is_some());
        let one = runq_vm::matrix::MatrixScenario {
            name: scn.name.clone(),
            run_for: scn.duration * args.repeat.max(1),
        };
        return vm::run_in_vm(&args, &[one], patches_text);
    }
    args.sched.apply(&mut scn)?;
    refuse_churn_without_cgroups(&scn, cgroups)?;
    if args.recorder_policy().is_ok() {
        runq_recorder::Tracepoints::from_env().map_err(|e| exit::usage(e.to_string()))?;
    }
    if let Some(SnapshotInterval(i)) = args.snapshot_interval {
        scn.snapshot_interval = i;
    }
    let plan = run_plan(&args, cgroups)?;
    check_outputs(&args)?;
    let interrupt = runq_kernel::signal::install().context("installing signal handlers")?;
    let mut ctprof = args
        .ctprof
        .as_deref()
        .map(crate::cmd::ctprof::run_hook::Recorder::new)
        .transpose()?;
    let evidence_dir = evidence::dir(args.evidence_dir.as_deref());
    let ran = repeats::run_repeats(
        &plan,
        &scn,
        args.json,
        interrupt,
        &mut ctprof,
        &evidence_dir,
    )?;
    let raw = if args.raw {
        RawSamples::Keep
    } else {
        RawSamples::Drop
    };
    let mut doc = RunDocument::from_outcomes(&scn, ran.outcomes, raw);
    doc.evidence = ran.evidence;
    let outcome = &doc.last;
    print_stderr_lines(&doc, &scn, args.json, cgroups);
    print_report(&doc, args.json)?;
    if let Some(path) = &args.output {
        doc.write(path)
            .map_err(|e| exit::run_error(format!("--output: {e}")))?;
    }
    if let Some(path) = &args.junit {
        crate::junit::write(&crate::junit::from_run(&doc), path)?;
    }
    if let Some(r) = ctprof {
        let text = r.finish(outcome, crate::style::color_enabled())?;
        if !args.json {
            crate::out!("{text}");
        }
    }
    Ok(exit::verdict_code(outcome))
}

/// How the repeats are run, from the flags (and `RUNQ_FAULT`).
fn run_plan(args: &RunArgs, cgroups: CgroupMode) -> anyhow::Result<RunPlan> {
    Ok(RunPlan {
        cgroups,
        collect_timeout: args.collect_timeout,
        fault: fault_from_env()?,
        repro: args.repro,
        max_workers_per_cpu: args.max_workers_per_cpu,
        repeats: args.repeat,
        runnable_wait: args.runnable_wait,
        flight_recorder: args.flight_recorder,
        freeze: !args.no_freeze,
        recorder: args.recorder_policy(),
    })
}

/// The lines on stderr before the report: a FAIL's first line (a run
/// error or an interrupt has its own) and, without `--json`, a run that
/// asked for cgroups and ran without them.
fn print_stderr_lines(doc: &RunDocument, scn: &Scenario, json: bool, cgroups: CgroupMode) {
    let outcome = &doc.last;
    if let Some(e) = &outcome.run_error {
        crate::errln!("runq: run ended early: {e}");
    }
    let plain_fail = outcome.run_error.is_none() && !outcome.interrupted;
    if let Some(line) =
        runq_results::evidence::headline::first_lines(outcome, doc.evidence.as_ref())
            .filter(|_| plain_fail)
    {
        crate::errln!("{line}");
    }
    if let Placement::Unplaced { reason } = &outcome.placement {
        if scn.wants_cgroups() && !json && cgroups != CgroupMode::Off {
            crate::errln!("runq: running workers without cgroups ({reason})");
        }
    }
}

/// Prints the document (`--json`) or the last repeat's report and the
/// repeats' summary.
fn print_report(doc: &RunDocument, json: bool) -> anyhow::Result<()> {
    if json {
        crate::outln!("{}", doc.to_json()?);
    } else {
        let text = runq_results::render::outcome(&doc.last, crate::style::color_enabled());
        crate::out!(
            "{}",
            runq_results::evidence::flight::with_report(text, doc.evidence.as_ref())
        );
        if let Some(s) = &doc.repeat_summary {
            crate::out!("{}", runq_results::render::repeat_summary(s));
        }
    }
    Ok(())
}

/// The fault injected by `RUNQ_FAULT` (tests and the guide's example in
/// `docs/guide/src/run/checks.md`), if set.
fn fault_from_env() -> anyhow::Result<Option<Fault>> {
    match std::env::var("RUNQ_FAULT") {
        Ok(text) => text
            .parse::<Fault>()
            .map(Some)
            .map_err(|e| exit::usage(format!("RUNQ_FAULT: {e}"))),
        Err(_) => Ok(None),
    }
}

/// Refuses, before the run, outputs that cannot be written and flags that
/// cannot go together.
fn check_outputs(args: &RunArgs) -> anyhow::Result<()> {
    if args.repeat > 1 && args.ctprof.is_some() {
        return Err(exit::usage(
            "--ctprof takes snapshots around one run; drop it or use --repeat 1",
        ));
    }
    crate::outfile::check_outputs(&[
        ("--output", args.output.as_deref()),
        ("--junit", args.junit.as_deref()),
    ])
}
