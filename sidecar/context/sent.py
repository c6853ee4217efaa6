"""The cache shape of a request body as it is sent: what the prompt-cache prediction is made on.

A lowered body (:mod:`sidecar.context.lower`) is cut into the units providers cache, in prefix
order — each tool, each system block, each message — and each unit is kept as its bytes (the
compact JSON the transport writes, keys in the body's own order): two requests share a unit
only when they send the same bytes.  Anthropic's ``cache_control`` markers are not part of a
unit (they move to the newest content every turn and are not part of the cached prefix); the
markers the body carries are read from them, with their TTL.

A unit's tokens are the tokens of its blocks' JSON text, counted with the profile's tokenizer
(an image's base64 data counts :data:`~sidecar.context.tokens.IMAGE_TOKENS` instead: providers
bill images by pixels).  Counts are memoised by the block's bytes, so a long session counts
each block once; and a session's blocks of strings only (a text block, a Gemini text part) are
kept with their bytes and tokens by the identity of their strings (:data:`SentBlocks`), so the
next body of the session, whose messages are lowered from the same validated parts, encodes and
hashes only its new blocks: a 2,000-message session's prediction cost an assembly a third of
its time, every time.  The same rule is what the reference simulators of the tests and the bench
count with, so prediction and simulation can be compared token for token.

Per target (``system-as-user`` and ``openai-chat`` have no separate system: it is a message):

- ``anthropic-messages``: ``tools[i]``; ``system`` blocks (a string: one text block); each
  content block of ``messages[i]`` (a string: one text block), the first with the message's
  role: Anthropic's entries end at a block, and the sidecar marks a block inside a message
  when many parallel tool results would put the previous entry out of the look-back;
- ``openai-chat`` / ``system-as-user``: ``tools[i]``; ``messages[i]`` (one block each);
- ``openai-responses``: ``tools[i]``; ``instructions`` (one system unit); ``input[i]``;
- ``gemini``: each function declaration of ``tools``; ``systemInstruction``; ``contents[i]``
  (one block per part).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import xxhash

from sidecar.context.cache_accounting import Marker, RequestShape, Unit
from sidecar.context.tokens import IMAGE_TOKENS
from sidecar.jsonbytes import dumps_bytes

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sidecar.context.tokens import Tokenizer

__all__ = ["PROVIDER_TARGET", "SentBlocks", "block_tokens", "count_marked_prefixes", "sent_shape"]

#: The lowering a run sends for each provider (the cache rules are the provider's).
PROVIDER_TARGET = {"anthropic": "anthropic-messages", "openai": "openai-chat", "gemini": "gemini"}

Block = Any

SentBlocks = dict[tuple[str, tuple[str, ...], tuple[int, ...]], tuple[tuple[str, ...], bytes, int]]
"""A session's blocks of strings as its last body sent them: (tokenizer, the block's keys, the
identities of its values) -> (its values, its bytes, its tokens).  The values are held, so an
identity cannot be reused while its entry lives; only the last body's blocks are kept."""

_COUNTS: dict[tuple[str, str], int] = {}
_COUNTS_MAX = 65_536
_LOCK = threading.Lock()


def _bare(block: Block) -> tuple[Block, int]:
    """``block`` without its cache marker and image data, and the images it held."""
    images: list[int] = []
    return _strip(block, images), len(images)


def _strip(node: Any, images: list[int]) -> Any:
    """:func:`_bare`'s walk (not a closure: a recursive inner function is a reference cycle,
    garbage for the cyclic collector at every call); one item in ``images`` per image."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "cache_control":
                continue
            if isinstance(value, str) and _is_image_data(node, key, value):
                images.append(1)
                out[key] = ""
                continue
            out[key] = _strip(value, images)
        return out
    if isinstance(node, list):
        return [_strip(v, images) for v in node]
    return node


def _is_image_data(node: dict[str, Any], key: str, value: str) -> bool:
    if value.startswith("data:image/") and ";base64," in value[:64]:
        return True  # OpenAI image_url / input_image
    # Anthropic {"type": "base64", "media_type", "data"}; Gemini inlineData {mimeType, data}
    return key == "data" and ("media_type" in node or "mimeType" in node)


def block_tokens(tokenizer: Tokenizer, block: Block) -> tuple[bytes, int]:
    """(the block's bytes as a cache compares them, its tokens)."""
    bare, images = _bare(block)
    data = dumps_bytes(bare)
    key = (tokenizer.info.id, xxhash.xxh3_128_hexdigest(data))
    with _LOCK:
        hit = _COUNTS.get(key)
    if hit is None:
        hit = tokenizer.count(data.decode("utf-8", "surrogatepass"))
        with _LOCK:
            if len(_COUNTS) >= _COUNTS_MAX:
                _COUNTS.clear()
            _COUNTS[key] = hit
    return data, hit + images * IMAGE_TOKENS


def _marker(blocks: Iterable[Block]) -> Marker | None:
    ttl: str | None = None
    found = False
    for block in blocks:
        control = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(control, dict):
            found = True
            ttl = "1h" if control.get("ttl") == "1h" else "5m"
    return Marker(0, ttl) if found else None


class _Builder:
    def __init__(self, tokenizer: Tokenizer, memo: SentBlocks | None) -> None:
        self.tokenizer = tokenizer
        self.units: list[Unit] = []
        self.names: list[str] = []
        self.markers: list[Marker] = []
        self.memo = memo
        self.kept: SentBlocks = {}
        """This body's entries of :attr:`memo` (what the next body can reuse)."""

    def add(self, name: str, blocks: Sequence[Block], role: str | None = None) -> None:
        """One unit of ``blocks`` (the cache's blocks); ``role`` is part of what must match
        (a message's), not a block."""
        pieces = [self._tokens(b) for b in blocks]
        head = [role.encode()] if role is not None else []
        value = b"\x1e".join([*head, *(data for data, _ in pieces)])
        marker = _marker(blocks)
        if marker is not None:
            self.markers.append(Marker(len(self.units), marker.ttl))
        self.units.append(Unit(value, sum(n for _, n in pieces), max(len(pieces), 1)))
        self.names.append(name)

    def _tokens(self, block: Block) -> tuple[bytes, int]:
        """:func:`block_tokens`, from :attr:`memo` for a block of strings whose strings are
        the very objects it was computed from, under the same keys in the same order (the
        same bytes)."""
        memo = self.memo
        if memo is None or type(block) is not dict:
            return block_tokens(self.tokenizer, block)
        values = tuple(block.values())
        if not all(type(v) is str for v in values):
            return block_tokens(self.tokenizer, block)  # a marker, nested content, a number
        # an entry holds its values: while it lives, no other object has their identities
        key = (self.tokenizer.info.id, tuple(block), tuple(map(id, values)))
        hit = memo.get(key)
        if hit is None:
            data, tokens = block_tokens(self.tokenizer, block)
            hit = (values, data, tokens)
        self.kept[key] = hit
        return hit[1], hit[2]


def _text_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else [content]


def _tools(target: str, body: dict[str, Any]) -> list[Block]:
    if target == "gemini":
        return [d for t in body.get("tools", []) for d in t.get("functionDeclarations", [t])]
    return list(body.get("tools", []))


def sent_shape(
    target: str,
    body: dict[str, Any],
    model: str,
    tokenizer: Tokenizer,
    memo: SentBlocks | None = None,
) -> RequestShape:
    """The cache units of ``body`` (lowered for ``target``), in prefix order; ``memo``: the
    session's blocks as its previous body sent them, replaced by this body's."""
    b = _Builder(tokenizer, memo)
    tools = _tools(target, body)
    for tool in tools:
        name = tool.get("name") or tool.get("function", {}).get("name") or "?"
        b.add(f"tool {name}", [tool])
    first_system = len(b.units)
    if target == "anthropic-messages":
        for index, block in enumerate(_text_blocks(body.get("system", []))):
            b.add(f"system block {index}", [block])
        system = len(b.units) - first_system
        for index, message in enumerate(body.get("messages", [])):
            blocks = _text_blocks(message.get("content", ""))
            role = str(message.get("role"))
            b.add(f"message {index}", blocks[:1], role)
            for number, block in enumerate(blocks[1:], start=1):
                b.add(f"message {index}, block {number}", [block])
    elif target == "openai-responses":
        if "instructions" in body:
            b.add("the instructions", [body["instructions"]])
        system = len(b.units) - first_system
        for index, item in enumerate(body.get("input", [])):
            b.add(f"input item {index}", [item])
    elif target == "gemini":
        if "systemInstruction" in body:
            b.add("the system instruction", [body["systemInstruction"]])
        system = len(b.units) - first_system
        for index, content in enumerate(body.get("contents", [])):
            b.add(f"content {index}", content.get("parts", []), str(content.get("role")))
    else:  # openai-chat, system-as-user: the system prompt is a message
        system = 0
        for index, message in enumerate(body.get("messages", [])):
            b.add(f"message {index}", [message])
    if memo is not None:
        memo.clear()
        memo.update(b.kept)
    return RequestShape(
        model=str(body.get("model") or model),
        units=tuple(b.units),
        tools=len(tools),
        system=system,
        markers=tuple(b.markers),
        names=tuple(b.names),
    )


def count_marked_prefixes(breakpoints: Sequence[dict[str, Any]], shape: RequestShape) -> None:
    """Give the breakpoints a body renders as markers (Anthropic's ``cache_control``) the
    ``prefixTokens`` of the body as sent, so they add up with the prediction; in place.  The
    markers are the breakpoints with an Anthropic TTL, in order (the lowering renders each of
    them; an OpenAI retention is no marker)."""
    marked = [point for point in breakpoints if point.get("ttl") in ("5m", "1h")]
    if not shape.markers or len(marked) != len(shape.markers):
        return
    through = shape.tokens_through()
    for point, marker in zip(marked, shape.markers, strict=True):
        point["prefixTokens"] = through[marker.unit]
