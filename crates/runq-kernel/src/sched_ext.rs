//! `/sys/kernel/sched_ext/`: the state of the extensible scheduler class
//! (`CONFIG_SCHED_CLASS_EXT`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The sched_ext sysfs values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedExtSysfs {
    /// `state` (`enabled`, `disabled`, ...).
    pub state: String,
    /// `switch_all`: 1 when every fair task runs under the BPF scheduler.
    pub switch_all: u64,
    /// `nr_rejected`: tasks the scheduler rejected.
    pub nr_rejected: u64,
    /// `hotplug_seq`.
    pub hotplug_seq: u64,
    /// `enable_seq`: number of times a BPF scheduler was enabled.
    pub enable_seq: u64,
    /// `root/ops`: the name of the loaded scheduler, if any.
    pub ops: Option<String>,
}

/// Reads the sched_ext directory under `sys_root` (`/sys` on a live host);
/// `None` when the kernel has no sched_ext.
pub fn read_sched_ext(sys_root: &Path) -> Option<SchedExtSysfs> {
    let dir = sys_root.join("kernel/sched_ext");
    let state = std::fs::read_to_string(dir.join("state")).ok()?;
    let num = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    };
    Some(SchedExtSysfs {
        state: state.trim().to_string(),
        switch_all: num("switch_all"),
        nr_rejected: num("nr_rejected"),
        hotplug_seq: num("hotplug_seq"),
        enable_seq: num("enable_seq"),
        ops: std::fs::read_to_string(dir.join("root/ops"))
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
    })
}

/// Where a BPF scheduler started after sched_ext's `enable_seq` read
/// `before` stands, by one reading of sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachState {
    /// Nothing new was enabled yet (or the kernel has no sched_ext).
    Pending,
    /// sched_ext is `enabled` with a new `enable_seq` and a `root/ops`
    /// name: the kernel runs a scheduler enabled since `before`.
    Attached {
        /// The ops name (`qmap`, `rustland`).
        ops: String,
        /// `enable_seq` once it was enabled.
        enable_seq: u64,
    },
    /// A scheduler was enabled since `before` (the sequence moved) and
    /// sched_ext has left `enabled` already: it was ejected or
    /// unregistered before it was seen attached.
    Left {
        /// The state read (`disabling`, `disabled`).
        state: String,
    },
}

/// Classifies one reading `now` for a scheduler started when `enable_seq`
/// read `before` (`enable_seq` moves only once a scheduler reached
/// `enabled`: 6.12's `scx_ops_enable()` increments it last).
pub fn attach_state(before: u64, now: Option<&SchedExtSysfs>) -> AttachState {
    let Some(now) = now.filter(|s| s.enable_seq > before) else {
        return AttachState::Pending;
    };
    match (now.state.as_str(), &now.ops) {
        ("enabled", Some(ops)) => AttachState::Attached {
            ops: ops.clone(),
            enable_seq: now.enable_seq,
        },
        // Enabled, root/ops not read yet: the next reading decides.
        ("enabled", None) => AttachState::Pending,
        // Still enabling: `state` and `enable_seq` are two files, read one
        // after the other, so a reading can catch the sequence moved while
        // the state it read a moment before said `enabling`.
        ("enabling", _) => AttachState::Pending,
        (state, _) => AttachState::Left {
            state: state.to_string(),
        },
    }
}

/// How sched_ext no longer runs the scheduler that attached as `ops`
/// with `enable_seq`, by one reading `now`; `None` while it still does,
/// or when the state could not be read (which says nothing). A new
/// sequence number means another scheduler replaced it.
pub fn departure(ops: &str, enable_seq: u64, now: Option<&SchedExtSysfs>) -> Option<String> {
    let now = now?;
    if now.state != "enabled" {
        return Some(format!("sched_ext state {:?}", now.state));
    }
    if now.enable_seq != enable_seq || now.ops.as_deref().is_some_and(|o| o != ops) {
        return Some(format!(
            "sched_ext now runs {:?} (enable_seq {} -> {})",
            now.ops.as_deref().unwrap_or("?"),
            enable_seq,
            now.enable_seq
        ));
    }
    None
}

/// `root/events`: ops.select_cpu() picked a CPU the task may not run on,
/// and the kernel chose another.
pub const EV_SELECT_CPU_FALLBACK: &str = "SCX_EV_SELECT_CPU_FALLBACK";
/// `root/events`: ops.dispatch() gave the CPU nothing, so the task that
/// ran last kept it.
pub const EV_DISPATCH_KEEP_LAST: &str = "SCX_EV_DISPATCH_KEEP_LAST";

/// The event counters of `root/events` (kernels 6.15+), one `NAME value`
/// per line (`SCX_EV_SELECT_CPU_FALLBACK 0`); lines of another shape are
/// skipped.
pub fn parse_events(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (name, value) = l.trim().split_once(char::is_whitespace)?;
            Some((name.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// Reads the loaded scheduler's event counters under `sys_root`; `None`
/// without sched_ext, without a loaded scheduler or on a kernel that has
/// no events file.
pub fn read_events(sys_root: &Path) -> Option<BTreeMap<String, u64>> {
    let text = std::fs::read_to_string(sys_root.join("kernel/sched_ext/root/events")).ok()?;
    Some(parse_events(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_present() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_sched_ext(d.path()).is_none());
        let s = d.path().join("kernel/sched_ext");
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("state"), "enabled\n").unwrap();
        std::fs::write(s.join("enable_seq"), "3\n").unwrap();
        std::fs::write(s.join("switch_all"), "garbage\n").unwrap();
        let x = read_sched_ext(d.path()).unwrap();
        assert_eq!(x.state, "enabled");
        assert_eq!(x.enable_seq, 3);
        assert_eq!(x.switch_all, 0);
        assert_eq!(x.ops, None);
    }

    /// A `/sys` root holding a real 6.12 guest's `kernel/sched_ext`
    /// (`tests/fixtures/sched_ext/README.md`).
    fn guest(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sched_ext")
            .join(name)
    }

    #[test]
    fn a_real_6_12_guest_before_during_and_after_a_scheduler() {
        let idle = read_sched_ext(&guest("6.12-idle")).unwrap();
        assert_eq!(
            (idle.state.as_str(), idle.ops.as_deref()),
            ("disabled", None)
        );
        assert_eq!(
            (idle.enable_seq, idle.hotplug_seq, idle.nr_rejected),
            (0, 1, 0)
        );
        let simple = read_sched_ext(&guest("6.12-simple_ready")).unwrap();
        assert_eq!(simple.state, "enabled");
        assert_eq!(simple.ops.as_deref(), Some("simple"));
        assert_eq!((simple.enable_seq, simple.switch_all), (1, 1));
        let qmap = read_sched_ext(&guest("6.12-qmap_after")).unwrap();
        assert_eq!(
            (qmap.ops.as_deref(), qmap.enable_seq, qmap.nr_rejected),
            (Some("qmap"), 2, 0)
        );
        // The watchdog ejected qmap: sched_ext is off, root/ gone with it.
        let ejected = read_sched_ext(&guest("6.12-qmap_t_ejected")).unwrap();
        assert_eq!((ejected.state.as_str(), ejected.ops), ("disabled", None));
        assert_eq!((ejected.enable_seq, ejected.switch_all), (3, 0));
        for name in ["6.12-idle", "6.12-simple_ready", "6.12-qmap_t_ejected"] {
            assert_eq!(read_events(&guest(name)), None, "6.12 has no root/events");
        }
    }

    #[test]
    fn a_new_scheduler_is_attached_once_enabled_with_a_new_sequence_and_a_name() {
        let idle = read_sched_ext(&guest("6.12-idle"));
        assert_eq!(attach_state(0, idle.as_ref()), AttachState::Pending);
        assert_eq!(attach_state(0, None), AttachState::Pending);
        let simple = read_sched_ext(&guest("6.12-simple_ready"));
        assert_eq!(
            attach_state(0, simple.as_ref()),
            AttachState::Attached {
                ops: "simple".into(),
                enable_seq: 1
            }
        );
        // Already enabled before the start: someone else's scheduler.
        assert_eq!(attach_state(1, simple.as_ref()), AttachState::Pending);
        let mut nameless = simple.clone().unwrap();
        nameless.ops = None;
        assert_eq!(attach_state(0, Some(&nameless)), AttachState::Pending);
        // The state read just before the sequence moved: still enabling.
        let mut enabling = simple.clone().unwrap();
        enabling.state = "enabling".into();
        assert_eq!(attach_state(0, Some(&enabling)), AttachState::Pending);
        // scx_qmap -t 3 enabled (seq 2 -> 3) and ejected before a reading.
        let ejected = read_sched_ext(&guest("6.12-qmap_t_ejected"));
        assert_eq!(
            attach_state(2, ejected.as_ref()),
            AttachState::Left {
                state: "disabled".into()
            }
        );
    }

    #[test]
    fn a_departure_is_a_state_off_enabled_or_another_scheduler() {
        let qmap = read_sched_ext(&guest("6.12-qmap_after"));
        assert_eq!(departure("qmap", 2, qmap.as_ref()), None);
        let ejected = read_sched_ext(&guest("6.12-qmap_t_ejected"));
        assert_eq!(
            departure("qmap", 2, ejected.as_ref()).as_deref(),
            Some("sched_ext state \"disabled\"")
        );
        let simple = read_sched_ext(&guest("6.12-simple_ready"));
        assert_eq!(
            departure("qmap", 1, simple.as_ref()).as_deref(),
            Some("sched_ext now runs \"simple\" (enable_seq 1 -> 1)")
        );
        let mut disabling = qmap.unwrap();
        disabling.state = "disabling".into();
        assert!(departure("qmap", 2, Some(&disabling))
            .unwrap()
            .contains("disabling"));
        assert_eq!(departure("qmap", 2, None), None);
    }

    #[test]
    fn events() {
        // sysfs_emit_at(buf, at, "%s %llu\n", #kind, ...) in 6.15's ext.c.
        let m = parse_events("SCX_EV_SELECT_CPU_FALLBACK 4\nSCX_EV_BYPASS_DURATION 120\nbad\n");
        assert_eq!(m.len(), 2);
        assert_eq!(m["SCX_EV_SELECT_CPU_FALLBACK"], 4);
        let d = tempfile::tempdir().unwrap();
        assert!(read_events(d.path()).is_none());
    }
}
