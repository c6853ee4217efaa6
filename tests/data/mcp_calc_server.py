"""A tiny MCP stdio server built with the ``mcp`` SDK (``MCPServer``: FastMCP's name since mcp
2), for the ACP tests (Python and node): ``python mcp_calc_server.py PID_FILE``.  It writes
its pid so a test can see it end with the agent."""

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
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


server.run()
