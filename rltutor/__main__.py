"""``python -m rltutor``: the same command line as ``rltutor``."""

import sys

from rltutor.cli import main

sys.exit(main())
