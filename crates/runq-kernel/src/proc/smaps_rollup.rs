//! `/proc/<pid>/smaps_rollup`: the process's memory summed over its
//! mappings, in kB per key.

use std::collections::BTreeMap;

use super::{kv_lines, parse_u64, trim};

/// Parses smaps_rollup text into `key -> kB` (the header line is skipped).
pub fn parse_smaps_rollup(text: &[u8]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, v) in kv_lines(text, b':') {
        let Some(num) = v.strip_suffix(b"kB").map(trim) else {
            continue;
        };
        if let (Some(n), Ok(key)) = (parse_u64(num), std::str::from_utf8(k)) {
            out.insert(key.to_string(), n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kb_lines() {
        let m = parse_smaps_rollup(
            b"55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss:                 410 kB\nPss:  100 kB\nTHPeligible: 0\n",
        );
        assert_eq!(m.get("Rss"), Some(&410));
        assert_eq!(m.get("Pss"), Some(&100));
        assert_eq!(m.len(), 2);
    }
}
