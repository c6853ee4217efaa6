"""A tiny MCP stdio server built with the ``mcp`` SDK (``MCPServer``: FastMCP's name since mcp
2), for the ACP tests (Python and node): ``python mcp_calc_server.py PID_FILE [--junk N]``.
It writes its pid so a test can see it end with the agent; with ``--junk N`` it first prints
N lines to stdout that are not JSON-RPC (as a server printing its banner or debug output
there does), then serves as usual; with ``--stderr N`` it first logs to stderr its
configuration with a token in it, a coloured line, a 100,000-character line and N debug
lines."""

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
if "--junk" in sys.argv:
    count = int(sys.argv[sys.argv.index("--junk") + 1])
    out = sys.stdout.buffer
    out.write(b"".join(b"DEBUG calc: warming up the abacus, step %d\n" % i for i in range(count)))
    out.flush()
if "--stderr" in sys.argv:
    count = int(sys.argv[sys.argv.index("--stderr") + 1])
    err = sys.stderr.buffer
    err.write(b"calc: config api_key=sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\n")
    err.write(b"\x1b[31mcalc: red alert\x1b[0m\x07\n")
    err.write(b"calc: " + b"x" * 100_000 + b"\n")
    err.write(b"".join(b"DEBUG calc: request %d handled\n" % i for i in range(count)))
    err.flush()
server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek() -> str:
    """Look without touching anything."""
    return "nothing changed"


@server.tool()
def crash() -> str:
    """Exit without answering."""
    os._exit(1)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def huge(megabytes: float) -> str:
    """Numbered lines, about this many megabytes of them."""
    lines = int(megabytes * 1024 * 1024) // 32
    return "".join(f"line {i:09d} of a huge answer\n" for i in range(lines))  # 32 bytes


server.run()
