//! Parser for `/proc/self/mountinfo`, keeping the cgroup mounts.

use std::path::PathBuf;

/// One mounted cgroup hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    /// Where it is mounted, e.g. `/sys/fs/cgroup/cpu`.
    pub mount_point: PathBuf,
    /// `None` for cgroup2; for cgroup v1 the controllers bound to it
    /// (e.g. `["cpu"]`, or `["cpu", "cpuacct"]` when co-mounted).
    pub v1_controllers: Option<Vec<String>>,
}

/// Un-escapes the octal sequences (`\040` for space) mountinfo uses.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            if let Ok(v) = u8::from_str_radix(field.get(i + 1..i + 4).unwrap_or(""), 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Extracts cgroup and cgroup2 mounts from mountinfo text. Lines that do not
/// have the documented shape are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<CgroupMount> {
    // 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    let (left, right) = line.split_once(" - ")?;
    let mount_point = left.split(' ').nth(4)?;
    let mut right = right.split(' ');
    let fstype = right.next()?;
    let _source = right.next()?;
    let super_opts = right.next().unwrap_or("");
    let mount_point = PathBuf::from(unescape(mount_point));
    match fstype {
        "cgroup2" => Some(CgroupMount {
            mount_point,
            v1_controllers: None,
        }),
        "cgroup" => {
            let known = [
                "cpu",
                "cpuacct",
                "cpuset",
                "memory",
                "pids",
                "blkio",
                "io",
                "freezer",
                "devices",
                "net_cls",
                "net_prio",
                "perf_event",
                "hugetlb",
                "rdma",
                "misc",
            ];
            let controllers = super_opts
                .split(',')
                .filter(|opt| known.contains(opt))
                .map(str::to_string)
                .collect();
            Some(CgroupMount {
                mount_point,
                v1_controllers: Some(controllers),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
25 30 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
28 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct
29 25 0:27 / /sys/fs/cgroup/cpuset rw,nosuid shared:13 - cgroup cgroup rw,cpuset
30 25 0:28 / /sys/fs/cgroup/systemd rw shared:14 - cgroup cgroup rw,xattr,name=systemd
31 25 0:29 / /mnt/with\\040space rw shared:15 - cgroup cgroup rw,memory
";

    #[test]
    fn finds_v2_and_v1() {
        let mounts = parse_mountinfo(HYBRID);
        assert_eq!(mounts.len(), 5);
        assert_eq!(
            mounts[0].mount_point,
            PathBuf::from("/sys/fs/cgroup/unified")
        );
        assert_eq!(mounts[0].v1_controllers, None);
        assert_eq!(
            mounts[1].v1_controllers.as_deref(),
            Some(&["cpu".to_string(), "cpuacct".to_string()][..])
        );
        assert_eq!(mounts[3].v1_controllers.as_deref(), Some(&[][..]));
        assert_eq!(mounts[4].mount_point, PathBuf::from("/mnt/with space"));
    }

    #[test]
    fn skips_malformed() {
        assert!(parse_mountinfo("garbage\n1 2 3\n - cgroup2").is_empty());
    }
}
