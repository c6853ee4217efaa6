"""How fast the machine is, second by second: a fixed piece of work, timed in CPU time.

``python -m bench.machine_speed [--every 1.0]`` runs :func:`reference_work` once every
``--every`` seconds and writes one line per run to stdout: the CPU milliseconds it took
(``time.process_time``, so waiting for a core is not counted — what is, is how fast the core
computes while it has it: its clock, a neighbour on the same physical core, caches).  The work
is what the sidecar spends its time on, in miniature: small dicts and lists, short strings
formatted and hashed, a little JSON; ~5 ms a run, half a percent of a core.

``make soak`` runs it beside the sidecar as a peer measured in the same run: a shared machine
changes speed over minutes (one 15-minute soak's sidecar spent 13 ms of CPU a run for its
first minute and 16-20 ms a run after it, the load and the code unchanged), and a latency
ratio between two minutes is as much the machine's as the sidecar's.  The soak reports each
window's median and the ratio of the pooled minutes it compares, beside the latency ratio: as
context, not a correction (the reference work runs on whichever core is free, and it and the
sidecar do not always slow down together).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["reference_work"]

_TEXT = "the quick brown fox jumps over the lazy dog " * 4


def reference_work(rounds: int = 1000) -> int:
    """A fixed amount of interpreter work (the same every call); returns a checksum."""
    total = 0
    for i in range(rounds):
        tags = [i, i + 1, i + 2]
        block: dict[str, object] = {"type": "text", "text": f"{_TEXT}{i}", "seq": i, "tags": tags}
        units = [(key, value) for key, value in block.items() if key != "tags"]
        encoded = json.dumps(block, separators=(",", ":"))
        total += len(encoded) + len(units) + hash(encoded) % 7 + sum(tags)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.machine_speed")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between runs")
    args = parser.parse_args(argv)
    out = sys.stdout
    while True:
        started = time.process_time()
        reference_work()
        spent = time.process_time() - started
        try:
            out.write(f"{spent * 1000:.4f}\n")
            out.flush()
        except (BrokenPipeError, ValueError):  # the soak is done with it
            return 0
        time.sleep(args.every)


if __name__ == "__main__":
    raise SystemExit(main())
