//! `runq run --scheduler CMD` and its readiness flags.

use runq_common::duration::parse_duration;
use runq_workload::scheduler::{Readiness, SchedulerSpec};
use runq_workload::Scenario;

use crate::exit;

/// The scheduler under test.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Scheduler under test")]
pub struct SchedulerArgs {
    /// Start CMD before the workers, watch it during the run (a worker
    /// stalled 2 s sends it SIGUSR2; if it dies, or sched_ext stops
    /// running it whether its process lives or not, the run FAILs with
    /// the kernel's reason, its exit status and stderr's error lines),
    /// and stop it after the
    /// run (SIGINT, SIGTERM after 2 s, SIGKILL after 1 s more). CMD is
    /// split into words like a shell would (quotes, backslashes) and run
    /// directly; use `sh -c '...'` for shell syntax. Replaces a scenario
    /// file's `scheduler`. With --vm-matrix, given twice or more it makes
    /// a scheduler axis (`kernel`: the kernel's own, no BPF scheduler).
    #[arg(long, value_name = "CMD")]
    pub scheduler: Vec<String>,
    /// Ready once a line of its stdout or stderr (where Rust schedulers
    /// log) matches REGEX, e.g. `--scheduler-ready-pattern 'started'`.
    #[arg(long, value_name = "REGEX", group = "scheduler_ready")]
    pub scheduler_ready_pattern: Option<String>,
    /// Ready once it has stayed up DURATION. By default a scheduler is
    /// ready once the kernel reports the BPF scheduler it enabled
    /// (sched_ext `enabled` with a new enable_seq and an ops name), or,
    /// on a kernel without sched_ext, once it has stayed up 100ms.
    #[arg(long, value_name = "DURATION", group = "scheduler_ready")]
    pub scheduler_ready_after: Option<String>,
    /// Ready once the kernel reports the BPF scheduler it enabled
    /// (/sys/kernel/sched_ext/state `enabled`, a new enable_seq, an ops
    /// name); the default on a kernel with sched_ext, an error on one
    /// without.
    #[arg(long, group = "scheduler_ready")]
    pub scheduler_ready_sched_ext: bool,
    /// How long to wait for readiness before giving up with exit code 3
    /// [default: 15s].
    #[arg(long, value_name = "DURATION")]
    pub scheduler_ready_timeout: Option<String>,
}

impl SchedulerArgs {
    fn tunes_readiness(&self) -> bool {
        self.scheduler_ready_pattern.is_some()
            || self.scheduler_ready_after.is_some()
            || self.scheduler_ready_sched_ext
            || self.scheduler_ready_timeout.is_some()
    }

    /// The readiness the flags name, if any.
    fn readiness(&self) -> anyhow::Result<Option<Readiness>> {
        if let Some(p) = &self.scheduler_ready_pattern {
            return Ok(Some(Readiness::Pattern(p.clone())));
        }
        if let Some(text) = &self.scheduler_ready_after {
            let d = parse_duration(text)
                .map_err(|e| exit::usage(format!("--scheduler-ready-after: {e}")))?;
            return Ok(Some(Readiness::After(d)));
        }
        Ok(self
            .scheduler_ready_sched_ext
            .then_some(Readiness::SchedExt))
    }

    /// Sets (or adjusts) the scenario's scheduler from the flags and
    /// checks it: a usage error (exit 2) for an empty command, a program
    /// that does not exist, or a bad pattern.
    pub fn apply(&self, scn: &mut Scenario) -> anyhow::Result<()> {
        if self.scheduler.len() > 1 {
            return Err(exit::usage(format!(
                "--scheduler is given {} times: several schedulers are an axis of --vm-matrix; \
                 add --vm-matrix or name one",
                self.scheduler.len()
            )));
        }
        if let Some(cmd) = self.scheduler.first() {
            scn.scheduler = Some(SchedulerSpec::new(cmd));
        }
        let Some(spec) = scn.scheduler.as_mut() else {
            if self.tunes_readiness() {
                return Err(exit::usage(
                    "the --scheduler-ready-* flags need --scheduler CMD \
                     (or a scheduler in the scenario file)",
                ));
            }
            return Ok(());
        };
        if let Some(ready) = self.readiness()? {
            spec.ready = ready;
        }
        if let Some(text) = &self.scheduler_ready_timeout {
            spec.ready_timeout = parse_duration(text)
                .map_err(|e| exit::usage(format!("--scheduler-ready-timeout: {e}")))?;
        }
        spec.validate()
            .map_err(|e| exit::usage(format!("--scheduler: {e}")))
    }
}
