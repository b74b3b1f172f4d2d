//! The print macros of every command, over [`runq_common::output`]: a
//! reader that goes away early (`runq … | head`) ends the output quietly,
//! and any other write error is reported once on stderr.

/// `eprintln!` that ends quietly on a closed stderr.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        runq_common::output::eprint_line(&format!($($arg)*))
    };
}

/// `print!` to stdout that ends quietly on a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        runq_common::output::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` to stdout that ends quietly on a closed pipe.
#[macro_export]
macro_rules! outln {
    () => {
        runq_common::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        runq_common::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
