//! Cross-references in a scenario file: every cgroup a group or a step
//! names is declared by a `[[cgroup]]`, every group a step adds or removes
//! exists. A mistyped name is an error at its own line, with the closest
//! declared name as a suggestion (a typo must not run a group in a new
//! cgroup without the limits it was meant to have).

use toml::Spanned;

use super::{Locator, RawScenario, ScenarioFileError};
use runq_common::closest;

/// Checks every name `raw` refers to against what it declares.
pub(super) fn check(loc: &Locator<'_>, raw: &RawScenario) -> Result<(), ScenarioFileError> {
    let cgroups: Vec<&str> = raw
        .cgroup
        .iter()
        .map(|c| c.name.get_ref().as_str())
        .collect();
    let groups: Vec<&str> = raw
        .group
        .iter()
        .map(|g| g.name.get_ref().as_str())
        .collect();
    for g in &raw.group {
        if let Some(c) = &g.cgroup {
            known(loc, c, "cgroup", &cgroups)?;
        }
    }
    for s in &raw.step {
        for (name, key) in [
            (&s.add_group, "add_group"),
            (&s.remove_group, "remove_group"),
        ] {
            if let Some(n) = name {
                known(loc, n, key, &groups)?;
            }
        }
        if let Some(c) = &s.cgroup {
            known(loc, c, "cgroup", &cgroups)?;
        }
    }
    Ok(())
}

/// `name` (under `key`) is one of `declared`, or an error that says what
/// is declared and which declared name is closest.
fn known(
    loc: &Locator<'_>,
    name: &Spanned<String>,
    key: &str,
    declared: &[&str],
) -> Result<(), ScenarioFileError> {
    let n = name.get_ref();
    if declared.contains(&n.as_str()) {
        return Ok(());
    }
    let what = if key == "cgroup" { "cgroup" } else { "group" };
    let hint = match closest(n, declared.iter().copied(), 2) {
        Some(near) => format!("did you mean {near:?}?"),
        None if declared.is_empty() && what == "cgroup" => {
            "declare it in a [[cgroup]] table (name = ...)".to_string()
        }
        None if declared.is_empty() => "the scenario declares no groups".to_string(),
        None => format!("declared: {}", declared.join(", ")),
    };
    loc.err(name.span(), key, format!("unknown {what} {n:?} ({hint})"))
}
