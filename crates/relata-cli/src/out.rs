//! Standard output: the one path every command's output takes.
//!
//! `println!` panics when stdout is closed or full (`relata export | head`, `> /dev/full`);
//! here a failed write is an error that says so, and the command exits 2 with that
//! sentence instead of a backtrace.

use std::fmt;
use std::io::{self, Write};

/// The sentence for a failed write to standard output.
pub fn stdout_error(e: io::Error) -> anyhow::Error {
    anyhow::anyhow!("cannot write to standard output: {e}")
}

/// Write one line (and flush it: a pipe reader sees it, a full disk is noticed here).
pub fn line(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(stdout_error)
}

/// `println!` that returns an error instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// [`line`] for code that has no error path to return through (`relata model probe`'s
/// step lines): a failed write ends the process with exit 2 and the same sentence.
pub fn line_or_exit(args: fmt::Arguments<'_>) {
    if let Err(e) = line(args) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
