"""``python -m sidecar`` = ``context-sidecar``."""

from __future__ import annotations

import sys

from sidecar.cli import main

sys.exit(main())
