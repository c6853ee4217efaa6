"""``context-sidecar serve`` that notes which modules are loaded as it writes each answer.

Started by ``tests/e2e/test_first_answer.py`` in place of ``python -m sidecar``: as each
answer goes out, one line ``{"id": ..., "modules": [...]}`` is appended to
``$FIRST_ANSWER_RECORD``.  The timing is taken out of the picture, so that what is loaded
is what the answer needed, on any machine, however loaded: nothing starts loading behind the
first requests (a minute of grace), and ``$FIRST_ANSWER_STEP`` says where the test's
request is answered —

- ``before-loop``: by :mod:`sidecar.rpc.first_requests`, which waits as long as it takes for
  the frames after ``initialize``;
- ``in-loop``: by :mod:`sidecar.rpc.early` (the step before the event loop does not wait).
"""

from __future__ import annotations

import json
import os
import sys

import protocol.framing


def main() -> None:
    record = os.environ["FIRST_ANSWER_RECORD"]
    encode = protocol.framing.encode_frame

    def noting(body: bytes) -> bytes:
        message = json.loads(body)
        if isinstance(message, dict) and "id" in message and "method" not in message:
            with open(record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": message["id"], "modules": sorted(sys.modules)}) + "\n")
        return encode(body)

    # before anything imports it by name
    protocol.framing.encode_frame = noting

    from sidecar.rpc import first_requests, serve

    serve.FIRST_REQUESTS_GRACE_S = 60.0
    step = os.environ["FIRST_ANSWER_STEP"]
    if step == "before-loop":
        first_requests.QUIET_S = first_requests.MAX_S = 60.0
    elif step == "in-loop":
        first_requests.MAX_S = 0.0
    else:
        raise SystemExit(f"FIRST_ANSWER_STEP={step!r}")

    from sidecar.cli import main as cli

    sys.exit(cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
