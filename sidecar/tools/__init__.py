"""The built-in tools: list, glob, grep, read, write, edit, shell over the workspace, and
``recall`` over the session's masked results (:mod:`sidecar.tools.recall`) — plain Python.

Every tool works inside a :class:`Workspace` (the session's roots, confinement checked on real
paths) and returns a :class:`ToolOutput` whose text is already bounded for the context window:
a cut always says what was cut and how to get the rest (an offset, a narrower pattern).  A
tool that cannot do what it was asked raises :class:`ToolError`; the caller turns it into an
error result the model can read (it is never a protocol error).

The faces (``sidecar.rpc``, ``sidecar.acp``) call into this package; it imports neither.
"""

from __future__ import annotations

from sidecar.tools.bounds import Bounds
from sidecar.tools.confine import Workspace
from sidecar.tools.edit import Edit, edit_file, write_file
from sidecar.tools.errors import ToolError
from sidecar.tools.grep import GrepMode, grep
from sidecar.tools.listing import glob_files, list_dir
from sidecar.tools.output import ToolOutput
from sidecar.tools.read import number_lines, read_file
from sidecar.tools.shell import run_command

__all__ = [
    "Bounds",
    "Edit",
    "GrepMode",
    "ToolError",
    "ToolOutput",
    "Workspace",
    "edit_file",
    "glob_files",
    "grep",
    "list_dir",
    "number_lines",
    "read_file",
    "run_command",
    "write_file",
]
