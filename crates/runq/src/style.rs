//! Terminal styling: `--color auto` (the default) colours only a TTY and
//! never with `NO_COLOR`; `always` and `never` override both.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};

/// `--color`: when to use ANSI colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always, even into a pipe or file.
    Always,
    /// Never (the same as `NO_COLOR=1`, for every tool).
    Never,
}

static CHOICE: AtomicU8 = AtomicU8::new(ColorChoice::Auto as u8);

/// Records the command line's choice; every renderer is handed
/// [`color_enabled`]'s answer (hud's live view included).
pub fn set_choice(choice: ColorChoice) {
    CHOICE.store(choice as u8, Ordering::Relaxed);
}

/// Whether stdout should get ANSI colors.
pub fn color_enabled() -> bool {
    match CHOICE.load(Ordering::Relaxed) {
        c if c == ColorChoice::Always as u8 => true,
        c if c == ColorChoice::Never as u8 => false,
        _ => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
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
