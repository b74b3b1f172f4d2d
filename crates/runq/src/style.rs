//! Terminal styling: colors only on a TTY and never with `NO_COLOR`.

use std::io::IsTerminal;

/// Whether stdout should get ANSI colors.
pub fn color_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// Whether stdout is an interactive terminal (for the live view).
pub fn stdout_is_tty() -> bool {
    // SAFETY: isatty on a standard descriptor.
    unsafe { libc::isatty(1) == 1 }
}

/// True when stderr is a terminal.
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Wraps `text` in an ANSI color when `on`; `code` is an SGR number.
pub fn paint(text: &str, code: u8, on: bool) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}
