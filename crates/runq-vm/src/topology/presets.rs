//! Named topology presets, spelled as ktstr's gauntlet spells them:
//! `[Nnuma-]Xcpu-Yllc-(smt|nosmt)` — X vCPUs in Y last-level caches spread
//! evenly over N NUMA nodes (1 when absent), two threads per core with
//! `smt`. Any name of that form parses; [`GAUNTLET`] lists the 25 shapes
//! a gauntlet covers (`--topology gauntlet`), from 4 CPUs in one LLC to
//! 252 CPUs in 14 and 4 nodes of 48 CPUs.

use super::Topology;

/// The gauntlet's presets, smallest first within each kind: odd and prime
/// LLC counts, SMT and not, several NUMA nodes, up to qemu's vCPU limit.
pub const GAUNTLET: [&str; 25] = [
    "4cpu-1llc-nosmt",
    "4cpu-2llc-nosmt",
    "9cpu-3llc-nosmt",
    "14cpu-7llc-nosmt",
    "15cpu-5llc-nosmt",
    "32cpu-4llc-nosmt",
    "64cpu-8llc-nosmt",
    "128cpu-4llc-nosmt",
    "128cpu-8llc-nosmt",
    "240cpu-15llc-nosmt",
    "252cpu-14llc-nosmt",
    "8cpu-2llc-smt",
    "12cpu-3llc-smt",
    "32cpu-4llc-smt",
    "64cpu-8llc-smt",
    "128cpu-4llc-smt",
    "128cpu-8llc-smt",
    "240cpu-15llc-smt",
    "252cpu-14llc-smt",
    "2numa-16cpu-4llc-nosmt",
    "2numa-32cpu-2llc-smt",
    "2numa-128cpu-8llc-nosmt",
    "2numa-128cpu-8llc-smt",
    "4numa-32cpu-8llc-nosmt",
    "4numa-192cpu-12llc-smt",
];

/// The word `--topology` takes for every preset of [`GAUNTLET`].
pub const GAUNTLET_WORD: &str = "gauntlet";

/// Parses a preset name; `None` when `text` is not spelled as one (the
/// counts spelling, then), an error when it is but does not divide.
pub fn parse_name(text: &str) -> Option<Result<Topology, String>> {
    let mut parts: Vec<&str> = text.split('-').collect();
    let smt = match parts.pop()? {
        "smt" => true,
        "nosmt" => false,
        _ => return None,
    };
    let nodes = match parts.first()?.strip_suffix("numa") {
        Some(n) => {
            parts.remove(0);
            Some(n)
        }
        None => None,
    };
    let [cpus, llcs] = parts[..] else {
        return None;
    };
    let cpus = cpus.strip_suffix("cpu")?;
    let llcs = llcs.strip_suffix("llc")?;
    Some(shape(text, nodes.unwrap_or("1"), cpus, llcs, smt))
}

/// The topology of a preset's counts, when they divide evenly.
fn shape(text: &str, nodes: &str, cpus: &str, llcs: &str, smt: bool) -> Result<Topology, String> {
    let num = |s: &str, what: &str| match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("preset {text:?}: {what} {s:?} is not a count")),
    };
    let (nodes, cpus, llcs) = (
        num(nodes, "NUMA nodes")?,
        num(cpus, "CPUs")?,
        num(llcs, "LLCs")?,
    );
    let threads = if smt { 2 } else { 1 };
    let uneven = |what: &str| {
        Err(format!(
            "preset {text:?}: {what} do not divide evenly; name X CPUs in Y LLCs over N nodes \
             where N divides Y and Y divides X{}",
            if smt { " / 2" } else { "" }
        ))
    };
    if llcs % nodes != 0 {
        return uneven("the LLCs over the NUMA nodes");
    }
    if cpus % (llcs * threads) != 0 {
        return uneven("the CPUs over the LLCs");
    }
    Ok(Topology {
        nodes,
        llcs: llcs / nodes,
        cores: cpus / (llcs * threads),
        threads,
        distance: None,
    })
}

/// One preset as `runq vm presets` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PresetRow {
    /// The preset's name.
    pub name: &'static str,
    /// The same topology in the counts spelling (`1n2l2c2t`).
    pub topology: String,
    /// vCPUs.
    pub cpus: u32,
    /// NUMA nodes.
    pub numa_nodes: u32,
    /// Last-level caches in all.
    pub llcs: u32,
    /// Hardware threads per core.
    pub threads_per_core: u32,
}

/// `runq vm presets --json` (schemas/vm-presets.schema.json).
#[derive(Debug, serde::Serialize)]
pub struct PresetsDocument {
    /// Every preset of the gauntlet.
    pub presets: Vec<PresetRow>,
}

impl runq_common::json::JsonDocument for PresetsDocument {
    const TOOL: &'static str = "runq vm presets";
    const SCHEMA_VERSION: u32 = 1;
}

/// Every preset of [`GAUNTLET`], in its order.
pub fn table() -> Vec<PresetRow> {
    GAUNTLET
        .iter()
        .filter_map(|&name| {
            let t = Topology::parse(name).ok()?;
            Some(PresetRow {
                name,
                topology: t.to_string(),
                cpus: t.cpus(),
                numa_nodes: t.nodes,
                llcs: t.nodes * t.llcs,
                threads_per_core: t.threads,
            })
        })
        .collect()
}

/// The presets as a table.
pub fn render(rows: &[PresetRow]) -> String {
    let mut out = format!(
        "{:<24} {:>5} {:>5} {:>5} {:>7}  {}\n",
        "preset", "vCPUs", "nodes", "LLCs", "threads", "topology"
    );
    for r in rows {
        out += &format!(
            "{:<24} {:>5} {:>5} {:>5} {:>7}  {}\n",
            r.name, r.cpus, r.numa_nodes, r.llcs, r.threads_per_core, r.topology
        );
    }
    out
}

/// The preset name of `t` (`Xcpu-Yllc-smt`, `2numa-…` with several nodes).
pub fn name_of(t: &Topology) -> String {
    let numa = if t.nodes > 1 {
        format!("{}numa-", t.nodes)
    } else {
        String::new()
    };
    let smt = if t.threads > 1 { "smt" } else { "nosmt" };
    format!("{numa}{}cpu-{}llc-{smt}", t.cpus(), t.nodes * t.llcs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gauntlet_preset_parses_and_names_itself() {
        let mut seen = std::collections::BTreeSet::new();
        for name in GAUNTLET {
            let t = Topology::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(name_of(&t), name);
            assert!(seen.insert(t.to_string()), "{name} repeats a shape");
            assert!(t.cpus() <= super::super::MAX_CPUS, "{name}");
        }
        assert_eq!(seen.len(), 25);
        let rows = table();
        assert_eq!(rows.len(), 25);
        let text = render(&rows);
        assert!(text.contains("8cpu-2llc-smt"), "{text}");
        assert!(
            text.lines()
                .nth(20)
                .unwrap()
                .contains("   2     4       1  2n2l4c1t"),
            "{text}"
        );
    }

    #[test]
    fn presets_give_nodes_llcs_cores_and_threads() {
        let t = Topology::parse("2numa-16cpu-4llc-nosmt").unwrap();
        assert_eq!((t.nodes, t.llcs, t.cores, t.threads), (2, 2, 4, 1));
        let t = Topology::parse("252cpu-14llc-smt").unwrap();
        assert_eq!(
            (t.nodes, t.llcs, t.cores, t.threads, t.cpus()),
            (1, 14, 9, 2, 252)
        );
        let t = Topology::parse("4numa-192cpu-12llc-smt").unwrap();
        assert_eq!((t.nodes, t.llcs, t.cores, t.threads), (4, 3, 8, 2));
    }

    #[test]
    fn names_that_do_not_divide_say_so() {
        for (name, says) in [
            ("2numa-15cpu-3llc-nosmt", "LLCs over the NUMA nodes"),
            ("10cpu-4llc-nosmt", "CPUs over the LLCs"),
            ("6cpu-2llc-smt", "CPUs over the LLCs"),
            ("0cpu-1llc-nosmt", "not a count"),
        ] {
            let err = parse_name(name).unwrap().unwrap_err();
            assert!(err.contains(says), "{name}: {err}");
        }
        assert!(parse_name("2n2c2t").is_none());
        assert!(parse_name("4cpu-smt").is_none());
    }
}
