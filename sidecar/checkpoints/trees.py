"""Git tree objects: a directory's entries as git writes them, and back.

A tree is ``<mode> <name>\\0<binary object id>`` per entry, sorted by name as git sorts them
(a directory as ``name/``), so a tree written here has the id ``git write-tree`` gives the
same directory.  Modes are git's: ``100644`` a file, ``100755`` an executable one, ``120000``
a symlink (its blob holds the link's target), ``40000`` a directory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal

__all__ = [
    "DIR",
    "EXEC",
    "FILE",
    "LINK",
    "Entry",
    "TreeReader",
    "decode_tree",
    "encode_tree",
    "flatten",
]

FILE = "100644"
EXEC = "100755"
LINK = "120000"
DIR = "40000"

Entry = tuple[str, str, str]
"""``(name, mode, object id)``."""
TreeReader = Callable[[str], bytes]
"""The bytes of a tree object, by id."""
Kind = Literal["blob", "tree"]


def _sort_key(entry: Entry) -> bytes:
    name, mode, _ = entry
    return name.encode("utf-8", "surrogateescape") + (b"/" if mode == DIR else b"")


def encode_tree(entries: list[Entry]) -> bytes:
    """The body of a tree object holding ``entries`` (any order)."""
    out = bytearray()
    for name, mode, oid in sorted(entries, key=_sort_key):
        out += b"%s %s\0" % (mode.encode(), name.encode("utf-8", "surrogateescape"))
        out += bytes.fromhex(oid)
    return bytes(out)


def decode_tree(data: bytes, hex_len: int = 40) -> list[Entry]:
    """The entries of a tree object's body."""
    size = hex_len // 2
    out: list[Entry] = []
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = data[pos:space].decode()
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        oid = data[nul + 1 : nul + 1 + size].hex()
        out.append((name, mode, oid))
        pos = nul + 1 + size
    return out


def flatten(read: TreeReader, tree_id: str, prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """Every file of a tree, depth first: ``(path with / separators, mode, blob id)``."""
    for name, mode, oid in decode_tree(read(tree_id), len(tree_id)):
        if mode == DIR:
            yield from flatten(read, oid, f"{prefix}{name}/")
        else:
            yield f"{prefix}{name}", mode, oid
