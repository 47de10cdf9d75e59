"""The `phalanx` command of an installed wheel: the executable packed beside this file
(phalanx/bin/phalanx), told which interpreter its script peers should use (this one, where the
package is installed)."""

import os
import sys


def main() -> None:
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "phalanx")
    if not os.access(binary, os.X_OK):
        sys.exit(f"phalanx: no executable at {binary}: this package was not installed from a "
                 "wheel (a build tree's is build/phalanx)")
    os.environ.setdefault("PHALANX_PYTHON", sys.executable)
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
