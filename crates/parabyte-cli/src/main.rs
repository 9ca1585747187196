//! The `parabyte` binary: the whole program is `parabyte_cli::main_with`, which the Python
//! wheel's `parabyte` command calls too.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(parabyte_cli::main_with(std::env::args_os()))
}
