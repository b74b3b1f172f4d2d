//! `/proc/vmstat`: the kernel's global VM event counters.

use std::path::Path;

/// Finds the value of `key` in vmstat-formatted text (`name value` lines).
pub fn parse_vmstat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

/// Reads one counter from the vmstat file at `path`.
pub fn read_vmstat_field(path: &Path, key: &str) -> Option<u64> {
    parse_vmstat_field(&std::fs::read_to_string(path).ok()?, key)
}

/// The host's `numa_pages_migrated` counter (0 when the kernel lacks it).
pub fn numa_pages_migrated() -> u64 {
    read_vmstat_field(Path::new("/proc/vmstat"), "numa_pages_migrated").unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exact_key() {
        let text = "numa_hit 5\nnuma_pages_migrated_x 9\nnuma_pages_migrated 42\n";
        assert_eq!(parse_vmstat_field(text, "numa_pages_migrated"), Some(42));
        assert_eq!(parse_vmstat_field(text, "missing"), None);
    }
}
