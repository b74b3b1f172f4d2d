//! The host context of a view as `key = value` rows, and which of them
//! differ between the two snapshots of a compare.

use std::collections::BTreeMap;

use crate::model::{CtprofSnapshot, HostContext};
use crate::registry::Unit;
use runq_common::units::fmt_scaled;

use crate::view::HostRow;

/// Flattens a snapshot's host context and capability states into
/// `key -> value`; empty when the snapshot recorded neither.
pub fn host_pairs(snap: &CtprofSnapshot) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Some(h) = &snap.host {
        context_pairs(h, &mut m);
    }
    for c in snap.capabilities.iter().flat_map(|c| &c.host) {
        m.insert(format!("capability.{}", c.name), c.state.clone());
    }
    m
}

fn context_pairs(h: &HostContext, m: &mut BTreeMap<String, String>) {
    let mut put = |k: &str, v: String| {
        m.insert(k.to_string(), v);
    };
    put("hostname", h.hostname.clone());
    put("kernel_release", h.kernel_release.clone());
    put("kernel_version", h.kernel_version.clone());
    put("arch", h.arch.clone());
    put("cpu_model", h.cpu_model.clone());
    put("online_cpus", h.online_cpus.to_string());
    let mem = h.mem_total_kb.saturating_mul(1024) as f64;
    put("mem_total", fmt_scaled(mem, Unit::Bytes));
    put("user_hz", h.user_hz.to_string());
    put("cmdline", h.cmdline.clone());
    for (node, cpus) in &h.numa_nodes {
        put(&format!("numa.node{node}"), cpus.clone());
    }
    for (k, v) in &h.sched_tunables {
        put(&format!("sched.{k}"), v.clone());
    }
    for (k, v) in &h.sched_debugfs {
        put(&format!("sched_debugfs.{k}"), v.clone());
    }
    if let Some(why) = &h.sched_debugfs_unavailable {
        put("sched_debugfs", format!("unavailable: {why}"));
    }
}

/// Every key of either side, with its values and whether they differ.
pub fn host_rows(base: &CtprofSnapshot, cand: Option<&CtprofSnapshot>) -> Vec<HostRow> {
    let b = host_pairs(base);
    let c = cand.map(host_pairs).unwrap_or_default();
    let mut keys: Vec<&String> = b.keys().chain(c.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let (bv, cv) = (b.get(k).cloned(), c.get(k).cloned());
            HostRow {
                key: k.clone(),
                differs: cand.is_some() && bv != cv,
                baseline: bv,
                candidate: cv,
            }
        })
        .collect()
}
