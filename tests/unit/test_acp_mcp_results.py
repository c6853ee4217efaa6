"""An MCP tool's answer as the model reads it (sidecar.acp.mcp_results): within the built-in
tools' token bound, saying what was cut; non-text blocks named, never shown, and counted."""

from __future__ import annotations

import base64

import pytest
from mcp import types as mcp_types

from sidecar.acp.mcp_results import DESCRIBED_BLOCKS, model_result
from sidecar.tools.bounds import DEFAULT_BOUNDS, count_tokens

pytestmark = pytest.mark.anyio


def _text(result: dict[str, object]) -> str:
    content = result["content"]
    assert isinstance(content, list) and len(content) == 1
    return str(content[0]["text"])


async def test_a_small_answer_is_kept_as_it_is() -> None:
    answer = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="42")])
    assert await model_result(answer, "calc__add") == {
        "content": [{"type": "text", "text": "42"}],
        "isError": False,
    }


async def test_a_large_answer_keeps_head_and_tail_within_the_bound() -> None:
    body = "".join(f"{i:06d} 7*6=42 {{'k': [1, 2, 3]}}\n" for i in range(100_000))
    answer = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=body)])
    text = _text(await model_result(answer, "db__query"))
    assert count_tokens(text) <= DEFAULT_BOUNDS.max_tokens
    assert text.startswith("000000 ") and "099999 " in text
    assert "characters cut from the middle; call db__query again asking for less" in text
    assert text.endswith(
        f"[the MCP result was cut: {len(body):,} characters (about "
        f"{len(body) // 3:,} tokens), of which its head and tail are kept, "
        f"within {DEFAULT_BOUNDS.max_tokens:,} tokens]"
    )


async def test_images_are_named_never_shown_and_counted_past_a_few() -> None:
    data = base64.b64encode(b"\x89PNG" + b"\x00" * 3000).decode()
    images = [
        mcp_types.ImageContent(type="image", data=data, mime_type="image/png") for _ in range(50)
    ]
    answer = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="two shots"), *images]
    )
    text = _text(await model_result(answer, "browser__shot"))
    assert data[:40] not in text
    assert text.count("[image/png content, 3,004 bytes, not shown]") == DESCRIBED_BLOCKS
    assert text.endswith(
        f"[{50 - DESCRIBED_BLOCKS} more non-text blocks (images, audio, resources), not shown]"
    )
    assert text.startswith("two shots\n")


async def test_structured_content_alone_is_its_json_bounded() -> None:
    answer = mcp_types.CallToolResult(
        content=[], structured_content={"rows": list(range(200_000))}, is_error=True
    )
    result = await model_result(answer, "db__rows")
    assert result["isError"] is True
    text = _text(result)
    assert text.startswith('{"rows": [0, 1, 2') and "the MCP result was cut" in text
    assert count_tokens(text) <= DEFAULT_BOUNDS.max_tokens
