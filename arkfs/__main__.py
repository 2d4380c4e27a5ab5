"""`python -m arkfs` runs the command line."""

import sys

from arkfs.cli import main

sys.exit(main())
