"""Memory actor benchmark as a script: `python bench/memory.py --items 100000 --json`.

Same as `evokernel bench memory`; prints one JSON line last.
"""

import sys

from launch.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "memory", *sys.argv[1:]]))
