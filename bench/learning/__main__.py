"""`python -m bench.learning`: the learning benchmark (bench/learning/cli.py). From any directory,
`python <repository>/bench/learning ...` works too (the root goes on the path); `-m` needs the
repository root as the working directory or on PYTHONPATH (Python looks the package up first)."""

import sys
from pathlib import Path

if not __package__:  # run as a folder path: the repository root on the path, so `bench` imports
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.learning.cli import main  # noqa: E402

sys.exit(main())
