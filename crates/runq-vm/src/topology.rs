//! VM topology presets (`2n2c2t`: NUMA nodes, LLCs per node, cores per
//! LLC, threads per core) and guest memory sizes, validated and turned
//! into virtme-ng's arguments.

use std::fmt;

/// The most vCPUs a preset may ask for: software emulation (TCG) runs
/// every vCPU on the host's cores, and a run on more is not worth waiting.
pub const MAX_CPUS: u32 = 64;

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
}

impl Topology {
    /// Every vCPU of the guest.
    pub fn cpus(&self) -> u32 {
        self.nodes * self.llcs * self.cores * self.threads
    }

    /// Parses a preset: counts with the suffixes `n` (NUMA nodes), `l`
    /// (LLCs per node), `c` (cores per LLC, required) and `t` (threads per
    /// core), in that order, e.g. `4c`, `2n2c2t`, `1n2l4c1t`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "topology {text:?}: {why}; write NUMA nodes, LLCs per node, cores per LLC and \
                 threads per core as e.g. 2n2c2t, 1n2l4c or 4c"
            )
        };
        let mut topo = Topology {
            nodes: 1,
            llcs: 1,
            cores: 0,
            threads: 1,
        };
        let mut rest = text.trim();
        let mut last = 0;
        while !rest.is_empty() {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let suffix = rest[digits..]
                .chars()
                .next()
                .ok_or_else(|| bad("a count lacks its letter"))?;
            let count: u32 = rest[..digits]
                .parse()
                .map_err(|_| bad("each letter needs a count before it"))?;
            let (order, slot) = match suffix {
                'n' => (1, &mut topo.nodes),
                'l' => (2, &mut topo.llcs),
                'c' => (3, &mut topo.cores),
                't' => (4, &mut topo.threads),
                other => return Err(bad(&format!("unknown letter {other:?}"))),
            };
            if order <= last {
                return Err(bad("letters go in the order n, l, c, t, each once"));
            }
            if count == 0 {
                return Err(bad(&format!("0{suffix} gives no CPU")));
            }
            *slot = count;
            last = order;
            rest = &rest[digits + 1..];
        }
        if topo.cores == 0 {
            return Err(bad("the cores (`c`) are required"));
        }
        topo.check().map_err(|why| bad(&why))?;
        Ok(topo)
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
        write!(f, "{}c{}t", self.cores, self.threads)
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
            ("8n4c4t", "at most 64"),
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
    fn memory_sizes() {
        assert_eq!(parse_memory("2G").unwrap(), 2048);
        assert_eq!(parse_memory("512M").unwrap(), 512);
        assert_eq!(parse_memory("768").unwrap(), 768);
        for bad in ["", "0G", "2T", "G", "-1G"] {
            assert!(parse_memory(bad).is_err(), "{bad:?}");
        }
    }
}
