"""Small JSON documents by id (profiles, presets): one file each, replaced atomically."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from sidecar.errors import NotFoundError
from sidecar.ids import new_id
from sidecar.jsonbytes import dumps_bytes
from sidecar.store.jsonl import write_file_atomic

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DocumentStore"]


class DocumentStore:
    """Documents of one kind under ``root``; ids are ``<prefix>_`` + a time-ordered suffix."""

    def __init__(self, root: Path, prefix: str, not_found_code: str) -> None:
        self.root = root
        self.prefix = prefix
        self._code = not_found_code
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, doc_id: str) -> Path:
        if not doc_id.startswith(self.prefix + "_") or not doc_id.replace("_", "").isalnum():
            raise self._missing(doc_id)
        return self.root / f"{doc_id}.json"

    def _missing(self, doc_id: str) -> NotFoundError:
        return NotFoundError(
            self._code, f"no {self.prefix} document {doc_id!r}", details={"id": doc_id}
        )

    def create(self, body: dict[str, Any], key: str) -> dict[str, Any]:
        doc_id = new_id(self.prefix)
        doc = {key: doc_id, **body}
        write_file_atomic(self.root / f"{doc_id}.json", dumps_bytes(doc))
        return doc

    def put(self, doc_id: str, body: dict[str, Any], key: str) -> dict[str, Any]:
        path = self._path(doc_id)
        if not path.exists():
            raise self._missing(doc_id)
        doc = {key: doc_id, **body}
        write_file_atomic(path, dumps_bytes(doc))
        return doc

    def get(self, doc_id: str) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._path(doc_id).read_bytes())
        except FileNotFoundError:
            raise self._missing(doc_id) from None
        return data

    def list(self) -> list[dict[str, Any]]:
        names = sorted(n for n in os.listdir(self.root) if n.endswith(".json"))
        return [json.loads((self.root / n).read_bytes()) for n in names]

    def delete(self, doc_id: str) -> None:
        path = self._path(doc_id)
        try:
            path.unlink()
        except FileNotFoundError:
            raise self._missing(doc_id) from None
