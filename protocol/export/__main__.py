"""``python -m protocol.export [--check] [--root DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from protocol.export import ROOT, check, write_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.export", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if artefacts are stale")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the repository root the artefacts live under"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = check(args.root)
        if stale:
            sys.stderr.write(
                "generated protocol files are stale or stray: "
                + ", ".join(stale)
                + "\nrun `python -m protocol.export` and commit the result\n"
            )
            return 1
        sys.stderr.write("generated protocol files are up to date\n")
        return 0
    for rel in write_all(args.root):
        sys.stderr.write(f"wrote {rel}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
