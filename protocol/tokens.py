"""Params and results of ``tokens/count``."""

from __future__ import annotations

from pydantic import Field

from protocol._base import WireModel

__all__ = ["TokenizerInfo", "TokensCountParams", "TokensCountResult"]


class TokenizerInfo(WireModel):
    id: str
    """Stable id used in caches and answers, e.g. ``cl100k_base``, ``o200k_base``, ``estimate``."""
    exact: bool
    """False for the byte-length estimate used only when no real encoding loads."""
    available: bool = True
    description: str = ""


class TokensCountParams(WireModel):
    texts: list[str] = Field(min_length=1, max_length=10_000)
    tokenizer: str | None = None
    """Tokenizer id; default: the server's default (``initialize`` lists them)."""


class TokensCountResult(WireModel):
    tokenizer: TokenizerInfo
    """The tokenizer that produced these counts."""
    counts: list[int]
    """One per input text, in order."""
    total: int
