//! Pressure Stall Information (`/proc/pressure/*`, `<cgroup>/*.pressure`).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One line of a pressure file (`some` or `full`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PsiLine {
    /// 10 s running average, percent.
    pub avg10: f64,
    /// 60 s running average, percent.
    pub avg60: f64,
    /// 300 s running average, percent.
    pub avg300: f64,
    /// Total stall time in µs.
    pub total_us: u64,
}

/// One resource's pressure: `some` and (when printed) `full`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PsiResource {
    /// Some task stalled.
    pub some: Option<PsiLine>,
    /// All non-idle tasks stalled.
    pub full: Option<PsiLine>,
}

/// Pressure of the four resources; a missing file stays `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Psi {
    /// `cpu.pressure`.
    pub cpu: Option<PsiResource>,
    /// `memory.pressure`.
    pub memory: Option<PsiResource>,
    /// `io.pressure`.
    pub io: Option<PsiResource>,
    /// `irq.pressure` (kernels with `CONFIG_IRQ_TIME_ACCOUNTING`).
    pub irq: Option<PsiResource>,
}

fn parse_line(rest: &str) -> Option<PsiLine> {
    let mut line = PsiLine::default();
    let mut seen = 0;
    for kv in rest.split_ascii_whitespace() {
        let (k, v) = kv.split_once('=')?;
        match k {
            "avg10" => line.avg10 = v.parse().ok()?,
            "avg60" => line.avg60 = v.parse().ok()?,
            "avg300" => line.avg300 = v.parse().ok()?,
            "total" => line.total_us = v.parse().ok()?,
            _ => continue,
        }
        seen += 1;
    }
    (seen == 4).then_some(line)
}

/// Parses a pressure file; `None` if neither line parses.
pub fn parse_pressure(text: &str) -> Option<PsiResource> {
    let mut out = PsiResource::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("some ") {
            out.some = parse_line(rest);
        } else if let Some(rest) = line.strip_prefix("full ") {
            out.full = parse_line(rest);
        }
    }
    (out.some.is_some() || out.full.is_some()).then_some(out)
}

/// Reads `<dir>/<prefix>cpu<suffix>` etc.: host files are
/// `/proc/pressure/cpu`, cgroup files `<cgroup>/cpu.pressure`.
pub fn read_psi(dir: &Path, suffix: &str) -> Psi {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(format!("{name}{suffix}")))
            .ok()
            .and_then(|t| parse_pressure(&t))
    };
    Psi {
        cpu: read("cpu"),
        memory: read("memory"),
        io: read("io"),
        irq: read("irq"),
    }
}

/// Host-wide pressure from `<proc_root>/pressure/`.
pub fn read_host_psi(proc_root: &Path) -> Psi {
    read_psi(&proc_root.join("pressure"), "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_some_and_full() {
        let r = parse_pressure(
            "some avg10=1.50 avg60=0.00 avg300=0.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n",
        )
        .unwrap();
        assert_eq!(r.some.unwrap().avg10, 1.5);
        assert_eq!(r.some.unwrap().total_us, 12345);
        assert_eq!(r.full.unwrap().total_us, 7);
        assert!(parse_pressure("some avg10=x").is_none());
        assert!(parse_pressure("").is_none());
    }

    #[test]
    fn reads_tree_and_live() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("pressure")).unwrap();
        std::fs::write(
            d.path().join("pressure/cpu"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=9\n",
        )
        .unwrap();
        let p = read_host_psi(d.path());
        assert_eq!(p.cpu.unwrap().some.unwrap().total_us, 9);
        assert!(p.memory.is_none());
        if Path::new("/proc/pressure/cpu").exists() {
            assert!(read_host_psi(Path::new("/proc")).cpu.is_some());
        }
    }
}
