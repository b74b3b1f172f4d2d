//! Parsers for the compact value strings of scenario files: affinity,
//! scheduling policy, memory policy, cpu.max and node lists.

use std::collections::BTreeSet;

use runq_kernel::cgroup::UNLIMITED;
use runq_kernel::cpulist::parse_cpu_list;

use crate::placement::{Affinity, MemPolicy, SchedPolicy};

/// `inherit`, a CPU list (`0-3,6`), `single:N` or `random:N`.
pub(crate) fn parse_affinity(s: &str) -> Result<Affinity, String> {
    let s = s.trim();
    if s == "inherit" {
        return Ok(Affinity::Inherit);
    }
    if let Some(n) = s.strip_prefix("single:") {
        return n
            .trim()
            .parse()
            .map(Affinity::Single)
            .map_err(|_| format!("bad CPU number {n:?}"));
    }
    if let Some(n) = s.strip_prefix("random:") {
        return n
            .trim()
            .parse()
            .map(Affinity::Random)
            .map_err(|_| format!("bad CPU count {n:?}"));
    }
    let cpus = parse_cpu_list(s)
        .map_err(|e| format!("{e}; use inherit, a CPU list, single:N or random:N"))?;
    Ok(Affinity::Cpus(cpus))
}

/// Refuses an affinity this host cannot give: a CPU that is not online,
/// or more random CPUs than are online.
pub(crate) fn check_affinity_online(a: &Affinity, online: &BTreeSet<usize>) -> Result<(), String> {
    let shown = runq_kernel::cpulist::CpuListDisplay(online);
    match a {
        Affinity::Inherit => Ok(()),
        Affinity::Single(cpu) if !online.contains(cpu) => {
            Err(format!("CPU {cpu} is not online (online: {shown})"))
        }
        Affinity::Cpus(cpus) if cpus.is_empty() || !cpus.is_subset(online) => {
            let cpus = runq_kernel::cpulist::CpuListDisplay(cpus);
            Err(format!("CPUs {cpus} are not all online (online: {shown})"))
        }
        Affinity::Random(n) if *n == 0 || *n > online.len() => Err(format!(
            "random:{n} needs 1 to {} CPUs (online: {shown})",
            online.len()
        )),
        _ => Ok(()),
    }
}

/// `normal`, `batch`, `idle`, `ext` (SCHED_EXT), `fifo:PRIO`, `rr:PRIO`
/// or `deadline:RUNTIME_US/DEADLINE_US/PERIOD_US`.
pub fn parse_policy(s: &str) -> Result<SchedPolicy, String> {
    let s = s.trim();
    let prio = |p: &str| {
        p.trim()
            .parse::<u32>()
            .map_err(|_| format!("bad priority {p:?}"))
    };
    match s {
        "normal" | "other" => return Ok(SchedPolicy::Normal),
        "batch" => return Ok(SchedPolicy::Batch),
        "idle" => return Ok(SchedPolicy::Idle),
        "ext" | "sched_ext" => return Ok(SchedPolicy::Ext),
        _ => {}
    }
    if let Some(p) = s.strip_prefix("fifo:") {
        return prio(p).map(SchedPolicy::Fifo);
    }
    if let Some(p) = s.strip_prefix("rr:") {
        return prio(p).map(SchedPolicy::Rr);
    }
    if let Some(rest) = s.strip_prefix("deadline:") {
        let parts: Vec<u64> = rest
            .split('/')
            .map(|p| p.trim().parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("bad deadline parameters {rest:?}"))?;
        if let [runtime_us, deadline_us, period_us] = parts[..] {
            return Ok(SchedPolicy::Deadline {
                runtime_us,
                deadline_us,
                period_us,
            });
        }
        return Err("deadline needs runtime_us/deadline_us/period_us".into());
    }
    Err(format!(
        "unknown policy {s:?}; use normal, batch, idle, ext, fifo:PRIO, rr:PRIO or deadline:R/D/P"
    ))
}

fn nodes(list: &str) -> Result<BTreeSet<usize>, String> {
    let set = parse_cpu_list(list).map_err(|e| e.to_string())?;
    if set.is_empty() {
        return Err("empty node list".into());
    }
    Ok(set)
}

/// `default`, `bind:NODES`, `preferred:NODE` or `interleave:NODES`.
pub(crate) fn parse_mempolicy(s: &str) -> Result<MemPolicy, String> {
    let s = s.trim();
    if s == "default" {
        return Ok(MemPolicy::Default);
    }
    if let Some(n) = s.strip_prefix("bind:") {
        return nodes(n).map(MemPolicy::Bind);
    }
    if let Some(n) = s.strip_prefix("interleave:") {
        return nodes(n).map(MemPolicy::Interleave);
    }
    if let Some(n) = s.strip_prefix("preferred:") {
        return n
            .trim()
            .parse()
            .map(MemPolicy::Preferred)
            .map_err(|_| format!("bad node {n:?}"));
    }
    Err(format!(
        "unknown memory policy {s:?}; use default, bind:NODES, preferred:NODE or interleave:NODES"
    ))
}

/// `QUOTA_US PERIOD_US`, `max` (no limit: quota [`UNLIMITED`]), or `P%`
/// of one CPU (100 ms period).
pub fn parse_cpu_max(s: &str) -> Result<Option<(u64, u64)>, String> {
    let s = s.trim();
    if s == "max" {
        return Ok(Some((UNLIMITED, 100_000)));
    }
    if let Some(pct) = s.strip_suffix('%') {
        let pct: f64 = pct
            .trim()
            .parse()
            .map_err(|_| format!("bad percentage {pct:?}"))?;
        if !(pct > 0.0 && pct <= 100_000.0) {
            return Err("percentage must be above 0".into());
        }
        return Ok(Some(((pct * 1000.0).round() as u64, 100_000)));
    }
    let mut it = s.split_whitespace().map(str::parse::<u64>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(q)), Some(Ok(p)), None) if q >= 1000 && (1000..=1_000_000).contains(&p) => {
            Ok(Some((q, p)))
        }
        (Some(Ok(_)), Some(Ok(_)), None) => {
            Err("quota must be at least 1000 µs and the period 1000..=1000000 µs".into())
        }
        _ => Err(format!(
            "bad cpu_max {s:?}; use \"QUOTA_US PERIOD_US\", \"max\" or \"50%\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_forms() {
        assert_eq!(parse_affinity("inherit").unwrap(), Affinity::Inherit);
        assert_eq!(
            parse_affinity("0-1").unwrap(),
            Affinity::Cpus([0, 1].into())
        );
        assert_eq!(parse_affinity("single:1").unwrap(), Affinity::Single(1));
        let online: BTreeSet<usize> = [0, 1].into();
        assert!(check_affinity_online(&Affinity::Single(1), &online).is_ok());
        let e = check_affinity_online(&Affinity::Single(5), &online).unwrap_err();
        assert!(e.contains("CPU 5 is not online (online: 0-1)"), "{e}");
        assert!(check_affinity_online(&parse_affinity("0,5").unwrap(), &online).is_err());
        assert!(check_affinity_online(&Affinity::Random(3), &online).is_err());
        assert!(check_affinity_online(&Affinity::Random(2), &online).is_ok());
        assert_eq!(parse_affinity("random:2").unwrap(), Affinity::Random(2));
        assert!(parse_affinity("single:x").is_err());
        assert!(parse_affinity("everywhere").is_err());
    }

    #[test]
    fn policy_forms() {
        assert_eq!(parse_policy("batch").unwrap(), SchedPolicy::Batch);
        assert_eq!(parse_policy("ext").unwrap(), SchedPolicy::Ext);
        assert_eq!(parse_policy("fifo:10").unwrap(), SchedPolicy::Fifo(10));
        assert_eq!(parse_policy("rr:5").unwrap(), SchedPolicy::Rr(5));
        assert_eq!(
            parse_policy("deadline:1000/5000/10000").unwrap(),
            SchedPolicy::Deadline {
                runtime_us: 1000,
                deadline_us: 5000,
                period_us: 10000
            }
        );
        assert!(parse_policy("deadline:1/2").is_err());
        assert!(parse_policy("realtime").is_err());
    }

    #[test]
    fn mempolicy_forms() {
        assert_eq!(
            parse_mempolicy("bind:0").unwrap(),
            MemPolicy::Bind([0].into())
        );
        assert_eq!(
            parse_mempolicy("preferred:1").unwrap(),
            MemPolicy::Preferred(1)
        );
        assert_eq!(
            parse_mempolicy("interleave:0-1").unwrap(),
            MemPolicy::Interleave([0, 1].into())
        );
        assert!(parse_mempolicy("bind:").is_err());
    }

    #[test]
    fn cpu_max_forms() {
        assert_eq!(
            parse_cpu_max("50000 100000").unwrap(),
            Some((50_000, 100_000))
        );
        assert_eq!(parse_cpu_max("50%").unwrap(), Some((50_000, 100_000)));
        assert_eq!(parse_cpu_max("max").unwrap(), Some((UNLIMITED, 100_000)));
        assert!(parse_cpu_max("10 100000").is_err());
        assert!(parse_cpu_max("-5%").is_err());
        assert!(parse_cpu_max("lots").is_err());
    }
}
