"""``python -m gavel ARGS...`` runs the gavel binary with ARGS, unchanged."""

from __future__ import annotations

import os
import sys

from ._binary import binary


def main() -> None:
    """Replaces this process with the gavel binary, passing the arguments through."""
    try:
        path = binary()
    except FileNotFoundError as e:
        print(f"gavel: {e}", file=sys.stderr)
        sys.exit(1)
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
