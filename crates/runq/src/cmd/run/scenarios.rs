//! `runq run --list-scenarios`, `--print-scenario NAME` and `runq run
//! NAME`: the ready-made scenarios of `runq_workload::catalog`, fitted to
//! this host.

use std::path::Path;

use runq_common::text::{hanging, wrap, LIST_WIDTH};
use runq_workload::catalog::{find, HostShape, CATALOG};
use runq_workload::Scenario;
use serde_json::json;

use crate::exit;

/// `runq run --list-scenarios --json`: every scenario under `scenarios`.
#[derive(serde::Serialize)]
struct ScenarioList {
    scenarios: Vec<serde_json::Value>,
}

impl runq_common::json::JsonDocument for ScenarioList {
    const TOOL: &'static str = "runq run --list-scenarios";
    const SCHEMA_VERSION: u32 = 1;
}

/// Every ready-made scenario with what it exposes (or a JSON document).
pub fn render_list(json: bool) -> anyhow::Result<String> {
    if json {
        let scenarios = CATALOG
            .iter()
            .map(|c| json!({"name": c.name, "summary": c.summary()}))
            .collect();
        let doc = ScenarioList { scenarios };
        return Ok(runq_common::json::to_pretty(&doc)? + "\n");
    }
    let width = CATALOG.iter().map(|c| c.name.len()).max().unwrap_or(8);
    let indent = width + 2;
    let mut out = format!("{:<width$}  what it exposes\n", "scenario");
    for c in CATALOG {
        let lines = wrap(c.summary(), LIST_WIDTH - indent);
        let first = format!("{:<width$}  {}", c.name, lines[0]);
        out.push_str(&hanging(&first, &lines[1..], indent));
    }
    out.push('\n');
    let footer = "`runq run NAME` runs one, fitted to this host's CPUs and caches; \
                  `runq run --print-scenario NAME > my.toml` copies one out to edit.";
    for line in wrap(footer, LIST_WIDTH) {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// The TOML of the ready-made scenario `name`, fitted to this host.
pub fn print(name: &str) -> anyhow::Result<String> {
    let c = find(name).ok_or_else(|| unknown(name, "--print-scenario"))?;
    Ok(c.fitted(&HostShape::read(Path::new("/sys"))))
}

/// The ready-made scenario `name`, if there is one by that name.
pub fn load(name: &str) -> Option<anyhow::Result<Scenario>> {
    let c = find(name)?;
    Some(
        c.scenario(&HostShape::read(Path::new("/sys")))
            .map_err(anyhow::Error::from),
    )
}

/// True when `name` reads as a file path rather than a scenario name.
pub fn looks_like_a_path(name: &str) -> bool {
    name.contains('/') || name.contains('.')
}

/// The error for a name that is neither a file nor a ready-made scenario.
pub fn unknown(name: &str, what: &str) -> anyhow::Error {
    let names: Vec<&str> = CATALOG.iter().map(|c| c.name).collect();
    let hint = match runq_common::closest(name, names, 3) {
        Some(near) => format!("did you mean `{near}`? "),
        None => String::new(),
    };
    exit::usage(format!(
        "{what}: no scenario file or ready-made scenario {name:?}; {hint}\
         `runq run --list-scenarios` lists the ready-made ones"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_every_scenario_within_100_columns() {
        let text = render_list(false).unwrap();
        for c in CATALOG {
            assert!(text.contains(c.name), "{}", c.name);
        }
        assert!(
            text.lines().all(|l| l.chars().count() <= LIST_WIDTH),
            "{text}"
        );
    }

    #[test]
    fn a_mistyped_name_gets_a_suggestion() {
        let e = unknown("stedy", "runq run").to_string();
        assert!(e.contains("did you mean `steady`"), "{e}");
        assert!(looks_like_a_path("a/b.toml") && !looks_like_a_path("steady"));
    }

    #[test]
    fn a_printed_scenario_is_fitted_toml() {
        let text = print("cpuset_clear").unwrap();
        assert!(!text.contains("{cpus"), "{text}");
        assert!(text.starts_with("# "), "{text}");
    }
}
