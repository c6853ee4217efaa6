"""context-sidecar: the server.  See README.md and DESIGN.md for the picture.

Packages: ``rpc`` (pygls wiring, the only place that knows JSON-RPC), ``store`` (sessions,
blobs), ``context`` (token counting, later the pipeline), ``client`` (a Python client that
starts the sidecar as a subprocess), ``cli`` (``context-sidecar serve|call|demo``).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
