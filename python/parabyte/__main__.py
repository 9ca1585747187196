"""`python -m parabyte ...` runs the `parabyte` command line."""

import sys

from ._cli import main

sys.exit(main())
