"""The `parabyte` command that `pip install` puts on PATH (and `python -m parabyte`): the
Rust command line itself, run in this process from the extension, so the wheel carries
one copy of the engine and both faces behave the same."""

from __future__ import annotations

import signal
import sys

from ._native import run_cli


def main() -> int:
    # The command line handles Ctrl-C and SIGTERM itself (temporary files removed, exit 130
    # or 143); Python's handler would also raise KeyboardInterrupt once it returns.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # "parabyte", not the script's path, so usage lines read as they do for the binary.
    return run_cli(["parabyte", *sys.argv[1:]])
