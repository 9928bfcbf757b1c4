"""`python -m bench.learning`: the learning benchmark (bench/learning/cli.py)."""

import sys

from bench.learning.cli import main

sys.exit(main())
