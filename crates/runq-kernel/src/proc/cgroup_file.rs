//! `/proc/<pid>/task/<tid>/cgroup`: the v2 path and v1 paths of a task.

use std::collections::BTreeMap;

/// A task's cgroup membership.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskCgroups {
    /// The unified (v2) path from the `0::` line, if present.
    pub v2: Option<String>,
    /// v1 paths by controller name (`cpu`, `memory`, `name=systemd`, ...).
    pub v1: BTreeMap<String, String>,
}

/// Parses the `hierarchy-id:controllers:path` lines.
pub fn parse_task_cgroup(text: &[u8]) -> TaskCgroups {
    let mut out = TaskCgroups::default();
    for line in text.split(|&b| b == b'\n') {
        let mut parts = line.splitn(3, |&b| b == b':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = String::from_utf8_lossy(path).into_owned();
        if id == b"0" && ctrls.is_empty() {
            out.v2 = Some(path);
        } else {
            for c in ctrls.split(|&b| b == b',').filter(|c| !c.is_empty()) {
                out.v1
                    .insert(String::from_utf8_lossy(c).into_owned(), path.clone());
            }
        }
    }
    out
}

/// Parses only the v2 path (the cheap path used per thread).
pub fn parse_v2_path(text: &[u8]) -> Option<&[u8]> {
    text.split(|&b| b == b'\n')
        .find_map(|line| line.strip_prefix(b"0::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_file() {
        let t = parse_task_cgroup(b"4:memory:/a/b\n2:cpu,cpuacct:/c\n1:name=systemd:/\n0::/u/x\n");
        assert_eq!(t.v2.as_deref(), Some("/u/x"));
        assert_eq!(t.v1.get("memory").map(String::as_str), Some("/a/b"));
        assert_eq!(t.v1.get("cpuacct").map(String::as_str), Some("/c"));
        assert_eq!(parse_v2_path(b"1:cpu:/\n0::/u/x\n"), Some(&b"/u/x"[..]));
        assert_eq!(parse_task_cgroup(b"junk"), TaskCgroups::default());
    }
}
