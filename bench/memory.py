"""Memory actor benchmark as a script: `python bench/memory.py --items 100000`.

Same as `evokernel bench memory --json`: progress on stderr, one JSON line on stdout.
"""

import sys

from launch.cli import main

if __name__ == "__main__":
    flags = sys.argv[1:]
    sys.exit(main(["bench", "memory", *flags, *([] if "--json" in flags else ["--json"])]))
