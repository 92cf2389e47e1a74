"""The `flashref` console script: runs the command bundled in the wheel (or the CMake build's, in a checkout)."""

from __future__ import annotations

import os
import sys


def main() -> int:
    from ._lib import cli_path
    exe = cli_path()
    if exe is None:
        print("flashref: the flashref command is not bundled with this installation", file=sys.stderr)
        return 2
    os.execv(exe, [exe] + sys.argv[1:])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
