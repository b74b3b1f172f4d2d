//! Edit distance, for "did you mean" suggestions on mistyped names.

/// Levenshtein distance between `a` and `b`, in chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `name` (ASCII case ignored), if it is within
/// `max` edits: the usual "did you mean" rule.
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&name, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= max)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("run_time", "run_time_ns"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn closest_within_the_bound() {
        let names = ["SpinWait", "PipeIo", "Bursty"];
        assert_eq!(closest("pipeio", names, 2), Some("PipeIo"));
        assert_eq!(closest("Bursti", names, 2), Some("Bursty"));
        assert_eq!(closest("nothing", names, 2), None);
    }
}
