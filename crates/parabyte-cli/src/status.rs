//! How a run ends and what it says on the way: the exit statuses `--help` documents, and
//! `tell`, one line on stderr.

use std::io::Write;

use crate::escape::terminal_safe;

/// Exit statuses, as documented in `--help`.
pub(crate) const SUCCESS: u8 = 0;
pub(crate) const SOME_FAILED: u8 = 1;
pub(crate) const FATAL: u8 = 2;

/// One line on stderr, the one way a message reaches it: text from a store or a name in it
/// is made terminal-safe here (`escape::terminal_safe`). `eprintln!` panics when stderr is
/// a pipe nobody reads; a message nobody can read is no reason to end with a panic.
pub(crate) fn tell(line: std::fmt::Arguments) {
    let line = line.to_string();
    let _ = writeln!(std::io::stderr(), "{}", terminal_safe(&line));
}
