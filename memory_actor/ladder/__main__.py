"""`python -m memory_actor.ladder --write-signatures`: render every rung task's signature into
memory_actor/ladder/signatures.yaml (after adding or changing a task)."""

from __future__ import annotations

import sys

from memory_actor.ladder import write_signatures

if __name__ == "__main__":
    if sys.argv[1:] != ["--write-signatures"]:
        sys.exit("usage: python -m memory_actor.ladder --write-signatures")
    print(write_signatures())
