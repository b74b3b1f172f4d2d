//! The OpenMetrics (and Prometheus text) exposition's one rule both
//! exporters need: a label value with `\`, `"` and newlines escaped.

/// Appends `v` to `out` as an OpenMetrics label value (without its
/// quotes): `\` as `\\`, `"` as `\"`, a newline as `\n`.
pub fn escape_label(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// [`escape_label`] into a new string.
pub fn escaped_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    escape_label(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslashes_quotes_and_newlines_are_escaped() {
        assert_eq!(escaped_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escaped_label("plain"), "plain");
    }
}
