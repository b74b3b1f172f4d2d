//! ANSI colour for the text reports; whether to colour at all is the
//! caller's (the binary's `--color` and `NO_COLOR`).

/// Wraps `text` in an ANSI colour when `on`; `code` is an SGR number
/// (1 bold, 31 red, 32 green, 33 yellow).
pub fn paint(text: &str, code: u8, on: bool) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paints_only_when_on() {
        assert_eq!(paint("FAIL", 31, true), "\x1b[31mFAIL\x1b[0m");
        assert_eq!(paint("FAIL", 31, false), "FAIL");
    }
}
