"""What an MCP tool's answer becomes for the model: one text, bounded as every built-in tool
result is.

- Text blocks (and the text of embedded resources) are joined and cut to the built-in
  tools' token bound (``DEFAULT_BOUNDS.max_tokens``, real cl100k tokens) with the same
  function the editor tools cut a command's output with
  (:func:`sidecar.tools.bounds.fit_head_tail`: head and tail kept, the middle replaced by a
  line saying how many characters went and that the tool can be asked for less), and a last
  line saying how large the answer was and what was kept.  What the run stores and what the
  editor's ``tool_call_update`` shows is that text, never the whole answer.
- Non-text blocks (images, audio, binary resources) are never shown to the model: each is
  named with its type and size, at most :data:`DESCRIBED_BLOCKS` of them, the rest counted on
  one line.  Resource links are named by their URI (cut to a line's bound).
- No content but ``structuredContent``: its JSON, bounded the same way.

How large one answer may be on the wire at all is the transport's bound
(:data:`sidecar.acp.mcp_stdio.MAX_MESSAGE_BYTES`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from sidecar.tools.bounds import DEFAULT_BOUNDS, cut_line, fit_head_tail

if TYPE_CHECKING:
    from mcp import types as mcp_types

__all__ = ["DESCRIBED_BLOCKS", "error_result", "model_result"]

#: Non-text blocks named one by one; the rest are counted.
DESCRIBED_BLOCKS = 20
_URI_CHARS = 500
_NOTE_TOKENS = 60
"""Kept for the last line of a cut result: the whole stays within the bound."""


def error_result(text: str) -> dict[str, Any]:
    """A ``ToolExecuteResult`` saying why the call failed."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _decoded_size(data: str) -> int:
    """Bytes of base64 ``data`` once decoded (without decoding it)."""
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


def _describe_block(block: Any) -> tuple[str, bool]:
    """The block as text, and whether it is text the model reads (not a placeholder)."""
    from mcp import types as mcp_types

    if isinstance(block, mcp_types.TextContent):
        return block.text, True
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.mime_type} content, {_decoded_size(block.data):,} bytes, not shown]", False
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {cut_line(str(block.uri), _URI_CHARS)}]", False
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        uri = cut_line(str(resource.uri), _URI_CHARS)
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"{uri}:\n{resource.text}", True
        return f"[resource {uri}, binary, {_decoded_size(resource.blob):,} bytes, not shown]", False
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]", False


def _joined(answer: mcp_types.CallToolResult) -> str:
    parts: list[str] = []
    described = hidden = 0
    for block in answer.content:
        text, readable = _describe_block(block)
        if readable:
            parts.append(text)
        elif described < DESCRIBED_BLOCKS:
            parts.append(text)
            described += 1
        else:
            hidden += 1
    if hidden:
        parts.append(f"[{hidden} more non-text blocks (images, audio, resources), not shown]")
    if not parts and answer.structured_content is not None:
        parts.append(json.dumps(answer.structured_content, ensure_ascii=False))
    return "\n".join(parts) or "(no content)"


def _bounded(text: str, tool: str) -> str:
    max_tokens = DEFAULT_BOUNDS.max_tokens
    hint = f"call {tool} again asking for less (a narrower query, a page or a limit)"
    kept, cut = fit_head_tail(text, max_tokens - _NOTE_TOKENS, hint)
    if not cut:
        return text
    return (
        f"{kept.rstrip()}\n[the MCP result was cut: {len(text):,} characters (about "
        f"{len(text) // 3:,} tokens), of which its head and tail are kept, within "
        f"{max_tokens:,} tokens]"
    )


async def model_result(answer: mcp_types.CallToolResult, tool: str) -> dict[str, Any]:
    """``answer`` as a ``ToolExecuteResult`` (wire JSON) within the built-in tools' bound;
    ``tool`` is its name as the model calls it (the cut says to call it again)."""
    text = await anyio.to_thread.run_sync(lambda: _bounded(_joined(answer), tool))
    return {"content": [{"type": "text", "text": text}], "isError": bool(answer.is_error)}
