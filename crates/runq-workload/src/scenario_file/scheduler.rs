//! The `scheduler` key of a scenario file: a command string (ready once
//! the kernel reports the BPF scheduler it enabled, or after 100 ms on a
//! kernel without sched_ext), or a `[scheduler]` table naming the command
//! and how to tell it is ready.

use std::time::Duration;

use crate::scheduler::{Readiness, SchedulerSpec};
use runq_common::duration::parse_duration;

const KEYS: &str = "command, ready_after, ready_pattern, ready_sched_ext, ready_timeout, watchdog";

/// A duration written as text ("500ms") or plain seconds (0.5).
fn duration_of(key: &str, v: &toml::Value) -> Result<Duration, String> {
    let text = match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        _ => return Err(format!("{key}: expected a duration such as \"500ms\"")),
    };
    parse_duration(&text).map_err(|e| format!("{key}: {e}"))
}

fn string_of<'a>(key: &str, v: &'a toml::Value) -> Result<&'a str, String> {
    v.as_str()
        .ok_or_else(|| format!("{key}: expected a string"))
}

/// The readiness the table names (at most one), or the default.
fn readiness(t: &toml::Table) -> Result<Readiness, String> {
    let mut found = Vec::new();
    if let Some(v) = t.get("ready_after") {
        found.push(Readiness::After(duration_of("ready_after", v)?));
    }
    if let Some(v) = t.get("ready_pattern") {
        found.push(Readiness::Pattern(
            string_of("ready_pattern", v)?.to_string(),
        ));
    }
    if let Some(v) = t.get("ready_sched_ext") {
        match v.as_bool() {
            Some(true) => found.push(Readiness::SchedExt),
            Some(false) => {}
            None => return Err("ready_sched_ext: expected true or false".into()),
        }
    }
    match found.len() {
        0 => Ok(SchedulerSpec::new("").ready),
        1 => Ok(found.remove(0)),
        _ => Err("name one of ready_after, ready_pattern or ready_sched_ext".into()),
    }
}

/// Reads the `scheduler` value; the spec is not validated yet.
pub(super) fn parse_scheduler(v: &toml::Value) -> Result<SchedulerSpec, String> {
    let t = match v {
        toml::Value::String(cmd) => return Ok(SchedulerSpec::new(cmd)),
        toml::Value::Table(t) => t,
        _ => {
            return Err(
                "expected a command string or a [scheduler] table with command = \"...\"".into(),
            )
        }
    };
    if let Some(k) = t
        .keys()
        .find(|k| !KEYS.split(", ").any(|known| known == k.as_str()))
    {
        return Err(format!("unknown key `{k}` (expected one of {KEYS})"));
    }
    let command = t
        .get("command")
        .ok_or("the [scheduler] table needs command = \"...\"")
        .and_then(|c| string_of("command", c).map_err(|_| "command: expected a string"))?;
    let mut spec = SchedulerSpec::new(command);
    spec.ready = readiness(t)?;
    if let Some(v) = t.get("ready_timeout") {
        spec.ready_timeout = duration_of("ready_timeout", v)?;
    }
    if let Some(v) = t.get("watchdog") {
        spec.watchdog = duration_of("watchdog", v)?;
        if spec.watchdog < std::time::Duration::from_millis(100) {
            return Err("watchdog: give a stall bound of at least 100ms".into());
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Value {
        toml::Value::Table(text.parse::<toml::Table>().unwrap())
    }

    #[test]
    fn a_string_is_a_command_with_default_readiness() {
        let s = parse_scheduler(&toml::Value::String("scx_rusty -v".into())).unwrap();
        assert_eq!(s, SchedulerSpec::new("scx_rusty -v"));
    }

    #[test]
    fn a_table_names_readiness_and_timeout() {
        let s = parse_scheduler(&table(
            "command = \"scx_rusty\"\nready_pattern = \"^ready\"\nready_timeout = \"3s\"",
        ))
        .unwrap();
        assert_eq!(s.ready, Readiness::Pattern("^ready".into()));
        assert_eq!(s.ready_timeout, Duration::from_secs(3));
        let s = parse_scheduler(&table("command = \"x\"\nwatchdog = \"500ms\"")).unwrap();
        assert_eq!(s.watchdog, Duration::from_millis(500));
        assert!(parse_scheduler(&table("command = \"x\"\nwatchdog = \"1ms\"")).is_err());
        let s = parse_scheduler(&table("command = \"x\"\nready_after = 0.25")).unwrap();
        assert_eq!(s.ready, Readiness::After(Duration::from_millis(250)));
        let s = parse_scheduler(&table("command = \"x\"\nready_sched_ext = true")).unwrap();
        assert_eq!(s.ready, Readiness::SchedExt);
    }

    #[test]
    fn bad_tables_say_what_is_wrong() {
        let cases = [
            ("ready_pattern = \"x\"", "needs command"),
            ("command = 3", "command: expected a string"),
            (
                "command = \"x\"\nready_patern = \"y\"",
                "unknown key `ready_patern`",
            ),
            (
                "command = \"x\"\nready_after = \"1s\"\nready_pattern = \"y\"",
                "name one of",
            ),
            (
                "command = \"x\"\nready_timeout = \"-1s\"",
                "ready_timeout: invalid duration",
            ),
            ("command = \"x\"\nready_sched_ext = 1", "true or false"),
        ];
        for (text, want) in cases {
            let e = parse_scheduler(&table(text)).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(parse_scheduler(&toml::Value::Integer(1)).is_err());
    }
}
