//! Standard output for every command. A reader that goes away early
//! (`runq … | head`) ends the output quietly: the first EPIPE closes it
//! for the rest of the process, with no panic and no message, and the
//! command still finishes its own cleanup. Any other write error is
//! reported once on stderr.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes formatted text to stdout (see the module doc); used through
/// [`out!`](crate::out) and [`outln!`](crate::outln).
pub fn write_stdout(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprint_line(&format!("runq: writing to stdout: {e}"));
        }
    }
}

/// Writes one line to stderr; a closed stderr (`runq … 2>&1 | head -1`)
/// is a quiet end, never a panic.
pub fn eprint_line(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}").and_then(|()| err.flush());
}

/// `eprintln!` that ends quietly on a closed stderr.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::eprint_line(&format!($($arg)*))
    };
}

/// Writes raw bytes to stdout, like [`write_stdout`].
pub fn write_stdout_bytes(bytes: &[u8]) {
    write_stdout(format_args!("{}", String::from_utf8_lossy(bytes)));
}

/// `print!` to stdout that ends quietly on a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` to stdout that ends quietly on a closed pipe.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
