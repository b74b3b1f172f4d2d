//! Plain-text layout for terminal output: word wrapping within a width,
//! and names made safe to print ([`printable`]).

use std::borrow::Cow;
use std::fmt::Write as _;

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

/// Whether `c` must not reach a terminal as it is: a C0 control (NUL,
/// BEL, BS, TAB, LF, CR, ESC, ...), DEL, a C1 control (U+0080-U+009F; U+009B
/// is a CSI on some terminals), a bidirectional override or isolate,
/// which reorders the text shown after it, or a Unicode line or paragraph
/// separator.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `s` made safe to print in a text report: every control character (C0,
/// DEL, C1) and bidirectional override is written as a visible escape
/// (`\n`, `\r`, `\t`, `\x1b`, `\x7f`, `\u{9b}`, `\u{202e}`), so a thread
/// name set with prctl(PR_SET_NAME), a group name or a symbol can neither
/// move the cursor, recolour or clear the screen, ring the bell, nor break
/// a table row. Borrowed (no copy) when there is nothing to escape. JSON
/// output needs none of this: serde escapes control characters itself.
pub fn printable(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find(is_unsafe) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && is_unsafe(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`printable`] of an owned string, reusing it when nothing needs
/// escaping.
pub fn printable_owned(s: String) -> String {
    match printable(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(escaped) => escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_every_control_character_visibly() {
        assert_eq!(printable("\x1b[2Jwiped"), "\\x1b[2Jwiped");
        assert_eq!(printable("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(printable("\0\x07\x08\x7f"), "\\x00\\x07\\x08\\x7f");
        assert_eq!(printable("x\u{9b}31m\u{85}"), "x\\u{9b}31m\\u{85}");
        assert_eq!(printable("evil\u{202e}gpj.exe"), "evil\\u{202e}gpj.exe");
        let escaped = printable("tok\x1b]0;title\x07io-\n");
        assert!(!escaped.chars().any(is_unsafe), "{escaped}");
    }

    #[test]
    fn printable_borrows_safe_text_and_keeps_unicode() {
        for safe in [
            "",
            "tokio-runtime-w",
            "µs → 12",
            "kworker/0:1",
            "日本語",
            "a\\x1b",
        ] {
            assert!(matches!(printable(safe), Cow::Borrowed(_)), "{safe}");
            assert_eq!(printable(safe), safe);
        }
        assert_eq!(printable_owned("plain".into()), "plain");
        assert_eq!(printable_owned("\x1b".into()), "\\x1b");
    }

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
