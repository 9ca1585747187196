//! `parabyte completions SHELL`: the shell completion script.

use std::io::Write;

use crate::args::command;
use crate::status::{tell, FATAL, SUCCESS};

/// `parabyte completions SHELL`: the completion script on stdout.
pub(crate) fn print_completions(shell: clap_complete::Shell) -> u8 {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "parabyte", &mut script);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Ok(()) => SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => SUCCESS,
        Err(error) => {
            tell(format_args!(
                "error: cannot write the completions to stdout: {error}"
            ));
            FATAL
        }
    }
}
