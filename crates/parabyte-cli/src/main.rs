//! The `parabyte` binary: the whole program is `parabyte_cli::main_with`, which the Python
//! wheel's `parabyte` command calls too.

use std::process::ExitCode;

fn main() -> ExitCode {
    one_malloc_arena();
    ExitCode::from(parabyte_cli::main_with(std::env::args_os()))
}

/// glibc gives each thread that allocates an arena of its own, and memory freed in one is
/// not reused by another: with the run on the runtime's threads, 1000 small objects at 64
/// in flight peaked at 19.1 MiB against 16.9 MiB with one arena, for the same heap
/// (docs/PROFILE.md, stop 38). A run has at most one runtime thread a core, so the one
/// arena's lock is rarely contended. Only the binary's own process: the Python wheel's
/// command runs inside Python, whose allocator it leaves alone.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    // SAFETY: called first in `main`, before any other thread exists; `mallopt` only sets
    // a tunable of the allocator.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}
