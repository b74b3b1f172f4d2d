//! Scenario files (TOML). Every error names the file, the line and the key:
//! unknown keys, wrong types, impossible cpusets, negative or zero
//! durations. `scenarios/annotated.toml` in the repository documents every key.

mod references;
mod scheduler;
mod series;
mod values;

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runq_kernel::cgroup::CgroupLimits;
use serde::Deserialize;
use toml::Spanned;

use crate::checks::CheckConfig;
use crate::placement::WorkerSetup;
use crate::scenario::{CgroupSpec, GroupSpec, Scenario, Step, StepAction};
use crate::spawn::CloneMode;
use crate::worktype::WorkType;
use runq_common::duration::parse_duration;

pub(crate) use values::{parse_affinity, parse_mempolicy};
pub use values::{parse_cpu_max, parse_policy};

/// A scenario file that cannot be used, located to its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {}{message}", path.display(), if *line > 0 { format!(":{line}") } else { String::new() }, key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default())]
pub struct ScenarioFileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line of the offending value (0: the file as a whole, e.g.
    /// unreadable; the message then names no line).
    pub line: usize,
    /// The key, when known.
    pub key: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawDuration {
    Text(String),
    Seconds(f64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    duration: Spanned<RawDuration>,
    snapshot_interval: Option<Spanned<RawDuration>>,
    scheduler: Option<Spanned<toml::Value>>,
    #[serde(default)]
    cgroup: Vec<RawCgroup>,
    #[serde(default)]
    group: Vec<RawGroup>,
    #[serde(default)]
    step: Vec<RawStep>,
    #[serde(default)]
    checks: CheckConfig,
}

/// The limit keys shared by `[[cgroup]]` and limit steps (not flattened:
/// serde's flatten loses the spans errors need).
struct RawLimits<'a> {
    cpuset: &'a Option<Spanned<String>>,
    cpu_max: &'a Option<Spanned<String>>,
    weight: &'a Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCgroup {
    name: Spanned<String>,
    cpuset: Option<Spanned<String>>,
    cpu_max: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
}

impl RawCgroup {
    fn limits(&self) -> RawLimits<'_> {
        RawLimits {
            cpuset: &self.cpuset,
            cpu_max: &self.cpu_max,
            weight: &self.weight,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Spanned<String>,
    work_type: Spanned<String>,
    params: Option<Spanned<toml::Table>>,
    workers: Spanned<i64>,
    cgroup: Option<Spanned<String>>,
    affinity: Option<Spanned<String>>,
    policy: Option<Spanned<String>>,
    nice: Option<Spanned<i64>>,
    mempolicy: Option<Spanned<String>>,
    #[serde(default)]
    clone_mode: CloneMode,
    #[serde(default)]
    deferred: bool,
    #[serde(default)]
    series_check: Vec<series::RawSeriesCheck>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    at: Spanned<RawDuration>,
    add_group: Option<Spanned<String>>,
    remove_group: Option<Spanned<String>>,
    cgroup: Option<Spanned<String>>,
    cpuset: Option<Spanned<String>>,
    cpu_max: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
}

impl RawStep {
    fn limits(&self) -> RawLimits<'_> {
        RawLimits {
            cpuset: &self.cpuset,
            cpu_max: &self.cpu_max,
            weight: &self.weight,
        }
    }
}

/// Turns spans into line numbers and builds located errors.
struct Locator<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Locator<'_> {
    /// The line of the group whose quoted name `message` mentions (the
    /// first line of the file when it names none): where a rule checked
    /// after parsing points its error.
    fn line_of_group_named_in(&self, raw: &RawScenario, message: &str) -> usize {
        raw.group
            .iter()
            .find(|g| message.contains(&format!("{:?}", g.name.get_ref())))
            .map_or(1, |g| self.line(g.name.span()))
    }

    fn line(&self, span: Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn err<T>(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> Result<T, ScenarioFileError> {
        Err(ScenarioFileError {
            path: self.path.to_path_buf(),
            line: self.line(span),
            key: Some(key.to_string()),
            message: message.into(),
        })
    }

    fn duration(&self, d: &Spanned<RawDuration>, key: &str) -> Result<Duration, ScenarioFileError> {
        let parsed = match d.get_ref() {
            RawDuration::Text(t) => parse_duration(t).map_err(|e| e.to_string()),
            RawDuration::Seconds(s) => parse_duration(&s.to_string()).map_err(|e| e.to_string()),
        };
        parsed.or_else(|e| self.err(d.span(), key, e))
    }

    fn limits(
        &self,
        raw: &RawLimits<'_>,
        online: &BTreeSet<usize>,
    ) -> Result<CgroupLimits, ScenarioFileError> {
        let mut limits = CgroupLimits::default();
        if let Some(c) = raw.cpuset {
            let cpus = runq_kernel::cpulist::parse_cpu_list(c.get_ref())
                .or_else(|e| self.err(c.span(), "cpuset", e.to_string()))?;
            if cpus.is_empty() || !cpus.is_subset(online) {
                let online = runq_kernel::cpulist::CpuListDisplay(online);
                return self.err(
                    c.span(),
                    "cpuset",
                    format!(
                        "CPUs {:?} are not all online (online: {online})",
                        c.get_ref()
                    ),
                );
            }
            limits.cpuset = Some(cpus);
        }
        if let Some(m) = raw.cpu_max {
            limits.cpu_max =
                parse_cpu_max(m.get_ref()).or_else(|e| self.err(m.span(), "cpu_max", e))?;
        }
        if let Some(w) = raw.weight {
            if !(1..=10_000).contains(w.get_ref()) {
                return self.err(w.span(), "weight", "weight must be between 1 and 10000");
            }
            limits.weight = Some(*w.get_ref() as u64);
        }
        Ok(limits)
    }

    fn group(
        &self,
        g: &RawGroup,
        online: &BTreeSet<usize>,
    ) -> Result<GroupSpec, ScenarioFileError> {
        let mut work = WorkType::from_name(g.work_type.get_ref())
            .or_else(|e| self.err(g.work_type.span(), "work_type", e.to_string()))?;
        if let Some(p) = &g.params {
            let params: Vec<(String, String)> = p
                .get_ref()
                .iter()
                .map(|(k, v)| (k.clone(), toml_value_text(v)))
                .collect();
            work = work
                .with_params(&params)
                .or_else(|e| self.err(p.span(), "params", e.to_string()))?;
        }
        let workers = usize::try_from(*g.workers.get_ref())
            .or_else(|_| self.err(g.workers.span(), "workers", "must be a positive number"))?;
        if let Err(e) = work.validate_workers(workers) {
            return self.err(g.workers.span(), "workers", e.to_string());
        }
        let mut setup = WorkerSetup::default();
        if let Some(a) = &g.affinity {
            setup.affinity =
                parse_affinity(a.get_ref()).or_else(|e| self.err(a.span(), "affinity", e))?;
            values::check_affinity_online(&setup.affinity, online)
                .or_else(|e| self.err(a.span(), "affinity", e))?;
        }
        if let Some(p) = &g.policy {
            setup.policy =
                parse_policy(p.get_ref()).or_else(|e| self.err(p.span(), "policy", e))?;
        }
        if let Some(m) = &g.mempolicy {
            setup.mempolicy =
                parse_mempolicy(m.get_ref()).or_else(|e| self.err(m.span(), "mempolicy", e))?;
        }
        if let Some(n) = &g.nice {
            setup.nice = Some(i32::try_from(*n.get_ref()).unwrap_or(i32::MAX));
        }
        if let Err(e) = setup.validate() {
            return self.err(g.name.span(), "group", e);
        }
        Ok(GroupSpec {
            name: g.name.get_ref().clone(),
            work,
            workers,
            cgroup: g.cgroup.as_ref().map(|c| c.get_ref().clone()),
            setup,
            clone_mode: g.clone_mode,
            deferred: g.deferred,
            custom: None,
            series_checks: Vec::new(),
        })
    }

    fn step(&self, s: &RawStep, online: &BTreeSet<usize>) -> Result<Step, ScenarioFileError> {
        let at = self.duration(&s.at, "at")?;
        let action = match (&s.add_group, &s.remove_group, &s.cgroup) {
            (Some(g), None, None) => StepAction::AddGroup(g.get_ref().clone()),
            (None, Some(g), None) => StepAction::RemoveGroup(g.get_ref().clone()),
            (None, None, Some(c)) => {
                let limits = self.limits(&s.limits(), online)?;
                if limits.is_empty() {
                    return self.err(
                        c.span(),
                        "cgroup",
                        "a limit step needs cpuset, cpu_max or weight",
                    );
                }
                StepAction::SetLimits {
                    cgroup: c.get_ref().clone(),
                    limits,
                }
            }
            _ => {
                return self.err(
                    s.at.span(),
                    "step",
                    "a step needs exactly one of add_group, remove_group or cgroup",
                )
            }
        };
        Ok(Step { at, action })
    }
}

/// Renders a TOML value as the text [`WorkType::with_params`] parses: a
/// string as itself, anything else as JSON (so arrays and tables, such as
/// Sequence's `phases = [{ kind = "Sleep", ms = 3000 }]`, keep their
/// shape).
fn toml_value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// The key of the `key = value` line holding byte `at`, when it is one
/// (a type error's span is the value; its message does not name the key).
fn key_at(text: &str, at: usize) -> Option<String> {
    let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let simple = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    simple.then(|| key.to_string())
}

/// Parses scenario text; `path` is only used in messages. Named
/// references and semantic rules are checked by [`Scenario::validate`].
pub fn parse_scenario(path: &Path, text: &str) -> Result<Scenario, ScenarioFileError> {
    let loc = Locator { path, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| ScenarioFileError {
        path: path.to_path_buf(),
        line: e.span().map_or(0, |s| loc.line(s)),
        key: e.span().and_then(|s| key_at(text, s.start)),
        message: e.message().trim().to_string(),
    })?;
    references::check(&loc, &raw)?;
    let online = runq_kernel::cpulist::online_cpus();
    let duration = loc.duration(&raw.duration, "duration")?;
    let cgroups = raw
        .cgroup
        .iter()
        .map(|c| {
            Ok(CgroupSpec {
                name: c.name.get_ref().clone(),
                limits: loc.limits(&c.limits(), &online)?,
            })
        })
        .collect::<Result<Vec<_>, ScenarioFileError>>()?;
    let mut groups = raw
        .group
        .iter()
        .map(|g| loc.group(g, &online))
        .collect::<Result<Vec<_>, _>>()?;
    for (g, r) in groups.iter_mut().zip(&raw.group) {
        g.series_checks = series::checks(&loc, &r.series_check, duration)?;
    }
    let snapshot_interval = series::interval(&loc, raw.snapshot_interval.as_ref())?;
    let mut steps = raw
        .step
        .iter()
        .map(|s| loc.step(s, &online))
        .collect::<Result<Vec<_>, _>>()?;
    steps.sort_by_key(|s| s.at);
    let scheduler = raw
        .scheduler
        .as_ref()
        .map(|v| {
            let spec = scheduler::parse_scheduler(v.get_ref())
                .and_then(|s| s.validate().map(|()| s))
                .or_else(|e| loc.err(v.span(), "scheduler", e))?;
            Ok(spec)
        })
        .transpose()?;
    let name = raw.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned())
    });
    let scn = Scenario {
        name,
        duration,
        cgroups,
        groups,
        steps,
        checks: raw.checks.clone(),
        scheduler,
        snapshot_interval,
    };
    scn.validate().map_err(|e| {
        let message = e.to_string();
        ScenarioFileError {
            path: path.to_path_buf(),
            line: loc.line_of_group_named_in(&raw, &message),
            key: None,
            message,
        }
    })?;
    Ok(scn)
}

/// The largest scenario file read (a real one is a few KiB).
pub const MAX_SCENARIO_BYTES: u64 = 1 << 20;

/// Reads and parses a scenario file: a regular file of at most
/// [`MAX_SCENARIO_BYTES`] (a FIFO would block and a device never end).
pub fn load_scenario(path: &Path) -> Result<Scenario, ScenarioFileError> {
    let fail = |message: String| ScenarioFileError {
        path: path.to_path_buf(),
        line: 0,
        key: None,
        message,
    };
    let text = read_bounded(path).map_err(fail)?;
    parse_scenario(path, &text)
}

/// The file's text, refusing anything but a regular file of at most
/// [`MAX_SCENARIO_BYTES`].
fn read_bounded(path: &Path) -> Result<String, String> {
    use runq_common::infile::{read_text, InputError};
    read_text(path, MAX_SCENARIO_BYTES, "a scenario file").map_err(|e| match e {
        InputError::NotRegular { kind, .. } => {
            format!("{kind}, not a file; give a scenario file (or - for stdin)")
        }
        InputError::TooLarge { .. } => format!(
            "larger than {} KiB; a scenario file is a few KiB of TOML",
            MAX_SCENARIO_BYTES / 1024
        ),
        InputError::Io { source, .. } => format!("cannot read the scenario file: {source}"),
    })
}

#[cfg(test)]
mod tests;
