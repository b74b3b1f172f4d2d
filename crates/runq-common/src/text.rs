//! Plain-text layout for terminal output: word wrapping within a width.

/// The width listings keep within: a 100-column terminal.
pub const LIST_WIDTH: usize = 100;

/// The words of `text` in lines of at most `width` columns (a word longer
/// than the width stands on a line of its own). Always at least one line.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `first` then each of `rest` on its own line, the continuation lines
/// indented by `indent` columns.
pub fn hanging(first: &str, rest: &[String], indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = format!("{first}\n");
    for line in rest {
        out.push_str(&pad);
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_whole_within_the_width() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("toolongword x", 4), vec!["toolongword", "x"]);
        assert_eq!(wrap("", 10), vec![""]);
    }

    #[test]
    fn hanging_indents_the_continuation() {
        assert_eq!(hanging("a b", &["c".into()], 2), "a b\n  c\n");
    }
}
