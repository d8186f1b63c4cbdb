"""``python -m kgtool.docs [--check]``: rewrite the generated pages (see :mod:`kgtool.docs`)."""

from __future__ import annotations

import sys

from kgtool.docs import stale, write


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        old = stale()
        for rel in old:
            print(f"stale: {rel} (run python -m kgtool.docs)", file=sys.stderr)
        return 1 if old else 0
    if argv:
        print("usage: python -m kgtool.docs [--check]", file=sys.stderr)
        return 2
    for rel in write():
        print(rel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
