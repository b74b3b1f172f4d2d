//! VM topologies (`2n2c2t`: NUMA nodes, LLCs per node, cores per LLC,
//! threads per core, and optionally the distance between nodes; or a
//! named preset such as `2numa-16cpu-4llc-nosmt`, see [`presets`])
//! and guest memory sizes, validated and turned into virtme-ng's
//! arguments.

use std::fmt;

pub mod presets;

/// The most vCPUs a topology may ask for: qemu's x86 machines give up to
/// 255 without an IOMMU, and the largest preset has 252. Under software
/// emulation (TCG) every vCPU runs on the host's cores, so a guest of a
/// hundred vCPUs boots in minutes, not seconds.
pub const MAX_CPUS: u32 = 252;

/// The distance qemu gives between two NUMA nodes unless told (the ACPI
/// SLIT's default for a remote node; a node's distance to itself is 10).
pub const DEFAULT_REMOTE_DISTANCE: u32 = 20;

/// The least memory per NUMA node that boots the guest and runs a scenario.
pub const MIN_NODE_MIB: u64 = 256;

/// A guest topology: `nodes` NUMA nodes, each of `llcs` sockets (one last
/// level cache each) of `cores` cores of `threads` hardware threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// NUMA nodes.
    pub nodes: u32,
    /// Sockets (each its own LLC) per node.
    pub llcs: u32,
    /// Cores per socket.
    pub cores: u32,
    /// Hardware threads per core (SMT siblings when 2 or more).
    pub threads: u32,
    /// The distance between every two NUMA nodes (qemu's `-numa dist`),
    /// when not qemu's default of 20.
    pub distance: Option<u32>,
}

impl Topology {
    /// Every vCPU of the guest.
    pub fn cpus(&self) -> u32 {
        self.nodes * self.llcs * self.cores * self.threads
    }

    /// Parses a topology: a named preset (`8cpu-2llc-smt`,
    /// `2numa-16cpu-4llc-nosmt`: see [`presets`]) or counts with the
    /// suffixes `n` (NUMA nodes), `l` (LLCs per node), `c` (cores per LLC,
    /// required), `t` (threads per core) and `d` (the distance between
    /// nodes, 11 to 254), in that order, e.g. `4c`, `2n2c2t`, `2n2l4c1t31d`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let topo = match presets::parse_name(text.trim()) {
            Some(named) => named?,
            None => Self::parse_counts(text)?,
        };
        topo.check().map_err(|why| {
            format!("topology {text:?}: {why}; `runq vm presets` lists the named presets")
        })?;
        Ok(topo)
    }

    /// Parses the counts spelling (`2n2l4c1t31d`).
    fn parse_counts(text: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "topology {text:?}: {why}; write NUMA nodes, LLCs per node, cores per LLC and \
                 threads per core as e.g. 2n2c2t, 1n2l4c or 4c, or name a preset such as \
                 8cpu-2llc-smt"
            )
        };
        let mut counts = [1, 1, 0, 1, 0];
        let mut rest = text.trim();
        let mut last = None;
        while !rest.is_empty() {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let suffix = rest[digits..]
                .chars()
                .next()
                .ok_or_else(|| bad("a count lacks its letter"))?;
            let count: u32 = rest[..digits]
                .parse()
                .map_err(|_| bad("each letter needs a count before it"))?;
            let slot = "nlctd"
                .find(suffix)
                .ok_or_else(|| bad(&format!("unknown letter {suffix:?}")))?;
            if last.is_some_and(|l| slot <= l) {
                return Err(bad("letters go in the order n, l, c, t, d, each once"));
            }
            if count == 0 {
                return Err(bad(&format!("0{suffix} gives no CPU")));
            }
            counts[slot] = count;
            last = Some(slot);
            rest = &rest[digits + suffix.len_utf8()..];
        }
        if counts[2] == 0 {
            return Err(bad("the cores (`c`) are required"));
        }
        let [nodes, llcs, cores, threads, distance] = counts;
        Ok(Topology {
            nodes,
            llcs,
            cores,
            threads,
            distance: (distance > 0).then_some(distance),
        })
    }

    /// What qemu cannot give, or a guest not worth booting.
    fn check(&self) -> Result<(), String> {
        if self.threads > 4 {
            return Err(format!(
                "{} threads per core: x86 guests see at most 4 SMT siblings here",
                self.threads
            ));
        }
        if self.nodes > 8 {
            return Err(format!("{} NUMA nodes: at most 8", self.nodes));
        }
        if let Some(d) = self.distance {
            if self.nodes < 2 {
                return Err("a NUMA distance needs 2 or more nodes".to_string());
            }
            if !(11..=254).contains(&d) {
                return Err(format!(
                    "NUMA distance {d}: give 11 to 254 (10 is a node's own)"
                ));
            }
        }
        let cpus = u64::from(self.nodes)
            * u64::from(self.llcs)
            * u64::from(self.cores)
            * u64::from(self.threads);
        if cpus > u64::from(MAX_CPUS) {
            return Err(format!(
                "{cpus} vCPUs: at most {MAX_CPUS} (each is emulated on the host's cores)"
            ));
        }
        Ok(())
    }

    /// The CPUs of NUMA node `node` (qemu numbers vCPUs socket by socket,
    /// and each node holds `llcs` consecutive sockets).
    fn node_cpus(&self, node: u32) -> (u32, u32) {
        let per = self.llcs * self.cores * self.threads;
        (node * per, (node + 1) * per - 1)
    }

    /// virtme-ng's arguments for this topology with `memory_mib` of guest
    /// memory: `--cpus` with qemu's `-smp` layout, `--memory`, one `--numa`
    /// per node, and an Intel CPU model under TCG when there are SMT
    /// siblings (the guest sees threads only with one).
    pub fn vng_args(&self, memory_mib: u64, tcg: bool) -> Result<Vec<String>, String> {
        let per_node = memory_mib / u64::from(self.nodes);
        if per_node < MIN_NODE_MIB {
            return Err(format!(
                "--memory {memory_mib}M gives each of {} NUMA nodes {per_node}M; give at least \
                 {}M",
                self.nodes,
                MIN_NODE_MIB * u64::from(self.nodes)
            ));
        }
        let mut args = vec![
            "--cpus".to_string(),
            format!(
                "{},sockets={},cores={},threads={}",
                self.cpus(),
                self.nodes * self.llcs,
                self.cores,
                self.threads
            ),
            "--memory".to_string(),
            format!("{}M", per_node * u64::from(self.nodes)),
        ];
        if self.nodes > 1 {
            for node in 0..self.nodes {
                let (first, last) = self.node_cpus(node);
                args.push("--numa".to_string());
                args.push(format!("{per_node}M,cpus={first}-{last}"));
            }
        }
        if let Some(d) = self.distance {
            for a in 0..self.nodes {
                for b in a + 1..self.nodes {
                    args.push("--numa-distance".to_string());
                    args.push(format!("{a},{b}={d}"));
                }
            }
        }
        if tcg && self.threads > 1 {
            args.push("--qemu-opts=-cpu max,vendor=GenuineIntel".to_string());
        }
        Ok(args)
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}n", self.nodes)?;
        if self.llcs > 1 {
            write!(f, "{}l", self.llcs)?;
        }
        write!(f, "{}c{}t", self.cores, self.threads)?;
        match self.distance {
            Some(d) => write!(f, "{d}d"),
            None => Ok(()),
        }
    }
}

/// Parses a memory size: `2G`, `512M`, `1536` (MiB), into MiB.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'G' | 'g')) => (&t[..i], 1024),
        Some((i, 'M' | 'm')) => (&t[..i], 1),
        _ => (t, 1),
    };
    let mib = num
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&m| m > 0)
        .ok_or_else(|| format!("--memory {text:?}: give a size such as 2G or 512M"))?;
    Ok(mib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_with_defaults() {
        let t = Topology::parse("2n2c2t").unwrap();
        assert_eq!(
            (t.nodes, t.llcs, t.cores, t.threads, t.cpus()),
            (2, 1, 2, 2, 8)
        );
        let t = Topology::parse("4c").unwrap();
        assert_eq!((t.nodes, t.llcs, t.cores, t.threads), (1, 1, 4, 1));
        assert_eq!(Topology::parse("1n2l4c").unwrap().cpus(), 8);
        assert_eq!(Topology::parse("1n2l4c").unwrap().to_string(), "1n2l4c1t");
    }

    #[test]
    fn bad_presets_say_what_is_wrong() {
        for (text, says) in [
            ("", "cores"),
            ("2n", "cores"),
            ("2t2c", "order"),
            ("2c2c", "order"),
            ("0c", "no CPU"),
            ("2x", "unknown letter"),
            ("c", "count"),
            ("2", "letter"),
            ("2c8t", "SMT"),
            ("16n1c", "NUMA"),
            ("8n8l4c4t", "at most 252"),
            ("1n2c1t30d", "2 or more nodes"),
            ("2n2c1t10d", "11 to 254"),
            ("2numa-15cpu-4llc-nosmt", "divide"),
        ] {
            let err = Topology::parse(text).unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn smt_numa_preset_gives_smp_numa_and_an_intel_model() {
        let t = Topology::parse("2n2c2t").unwrap();
        assert_eq!(
            t.vng_args(2048, true).unwrap(),
            [
                "--cpus",
                "8,sockets=2,cores=2,threads=2",
                "--memory",
                "2048M",
                "--numa",
                "1024M,cpus=0-3",
                "--numa",
                "1024M,cpus=4-7",
                "--qemu-opts=-cpu max,vendor=GenuineIntel",
            ]
        );
        let kvm = t.vng_args(2048, false).unwrap();
        assert!(!kvm.iter().any(|a| a.contains("vendor")), "{kvm:?}");
    }

    #[test]
    fn llcs_are_sockets_inside_a_node() {
        let t = Topology::parse("2n2l2c").unwrap();
        let args = t.vng_args(1024, true).unwrap();
        assert_eq!(args[1], "8,sockets=4,cores=2,threads=1");
        assert_eq!(&args[5], "512M,cpus=0-3");
        assert_eq!(&args[7], "512M,cpus=4-7");
        assert!(!args.iter().any(|a| a.contains("vendor")));
    }

    #[test]
    fn one_node_has_no_numa_and_memory_is_checked_per_node() {
        let args = Topology::parse("2c").unwrap().vng_args(512, true).unwrap();
        assert!(!args.contains(&"--numa".to_string()), "{args:?}");
        let err = Topology::parse("4n1c")
            .unwrap()
            .vng_args(512, true)
            .unwrap_err();
        assert!(err.contains("at least 1024M"), "{err}");
    }

    #[test]
    fn a_distance_goes_to_every_pair_of_nodes() {
        let t = Topology::parse("3n1c1t31d").unwrap();
        assert_eq!(
            (t.nodes, t.distance, t.to_string().as_str()),
            (3, Some(31), "3n1c1t31d")
        );
        let args = t.vng_args(768, true).unwrap();
        let dists: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--numa-distance")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(dists, ["0,1=31", "0,2=31", "1,2=31"]);
        let plain = Topology::parse("2n1c")
            .unwrap()
            .vng_args(512, true)
            .unwrap();
        assert!(!plain.contains(&"--numa-distance".to_string()), "{plain:?}");
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory("2G").unwrap(), 2048);
        assert_eq!(parse_memory("512M").unwrap(), 512);
        assert_eq!(parse_memory("768").unwrap(), 768);
        for bad in ["", "0G", "2T", "G", "-1G"] {
            assert!(parse_memory(bad).is_err(), "{bad:?}");
        }
    }
}
