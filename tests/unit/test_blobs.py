"""``sidecar.store.blobs``: content-addressed blobs that real ``git`` can read."""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest

from sidecar.errors import NotFoundError, StoreCorruptError
from sidecar.store.blobs import BlobStore, git_blob_id

SAMPLES = [b"", b"hello\n", "naïve 日本語 😀\n".encode(), bytes(range(256)) * 40]


def git(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> bytes:
    env = dict(
        os.environ,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def supports_sha256() -> bool:
    """``--object-format=sha256`` exists since git 2.29."""
    out = subprocess.run(["git", "--version"], capture_output=True, check=True).stdout.decode()
    major, minor = (int(x) for x in out.split()[2].split(".")[:2])
    return (major, minor) >= (2, 29)


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    store = BlobStore(tmp_path / "blobs")
    store.init()
    return store


def test_put_get_has_round_trip(blobs: BlobStore) -> None:
    ids = [blobs.put(data) for data in SAMPLES]
    assert len(set(ids)) == len(SAMPLES)
    for blob_id, data in zip(ids, SAMPLES, strict=True):
        assert len(blob_id) == 40
        assert blobs.has(blob_id)
        assert blobs.has(blob_id.upper())
        assert blobs.get(blob_id) == data
    assert not blobs.has(git_blob_id(b"never stored"))


def test_known_git_ids() -> None:
    # Printed by `git hash-object` for these bytes (well-known values).
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_put_is_idempotent(blobs: BlobStore) -> None:
    first = blobs.put(b"same bytes")
    path = blobs.root / "objects" / first[:2] / first[2:]
    before = path.stat()
    assert blobs.put(b"same bytes") == first
    after = path.stat()
    assert after.st_ino == before.st_ino  # not written again...
    assert after.st_mtime_ns >= before.st_mtime_ns  # ...but freshened: a gc elsewhere keeps it
    objects = [p for p in (blobs.root / "objects").rglob("*") if p.is_file()]
    assert objects == [path]


def test_git_cat_file_reads_stored_blobs(blobs: BlobStore) -> None:
    for data in SAMPLES:
        blob_id = blobs.put(data)
        assert git("--git-dir", str(blobs.root), "cat-file", "-t", blob_id) == b"blob\n"
        assert git("--git-dir", str(blobs.root), "cat-file", "-p", blob_id) == data
    git("--git-dir", str(blobs.root), "fsck", "--strict")


def test_ids_match_a_real_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", str(repo))
    files = {"a.txt": b"alpha\n", "src/b.py": b"print('b')\r\n", "empty": b""}
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    git("-c", "core.autocrlf=false", "add", ".", cwd=repo)
    git("commit", "-q", "-m", "init", cwd=repo)
    staged = {
        fields.split("\t")[1]: fields.split()[1]
        for fields in git("ls-files", "-s", cwd=repo).decode().splitlines()
    }
    store = BlobStore(tmp_path / "blobs")
    store.init()
    for rel, data in files.items():
        hashed = git("hash-object", rel, cwd=repo).decode().strip()
        assert git_blob_id(data) == hashed == staged[rel], rel
        assert store.put(data) == hashed
        assert store.get(hashed) == data


def test_get_missing_blob_is_not_found(blobs: BlobStore) -> None:
    missing = git_blob_id(b"absent")
    with pytest.raises(NotFoundError) as info:
        blobs.get(missing)
    assert info.value.code == "blob.not_found"
    assert info.value.details == {"blob": missing}


@pytest.mark.parametrize(
    "bad_id",
    ["", "abc", "z" * 40, "../../../../etc/passwd", "ce013625030ba8dba906f756967f9e9ca394464a0"],
    ids=["empty", "short", "not-hex", "traversal", "too-long"],
)
def test_malformed_id_is_not_found(blobs: BlobStore, bad_id: str) -> None:
    with pytest.raises(NotFoundError) as info:
        blobs.get(bad_id)
    assert info.value.code == "blob.not_found"
    assert not blobs.has(bad_id)


def _damage(path: Path, data: bytes) -> None:
    path.chmod(0o644)
    path.write_bytes(data)


def test_damaged_object_file_is_corrupt(blobs: BlobStore) -> None:
    blob_id = blobs.put(b"precious content " * 100)
    path = blobs.root / "objects" / blob_id[:2] / blob_id[2:]
    good = path.read_bytes()

    _damage(path, good[: len(good) // 2])  # truncated stream
    with pytest.raises(StoreCorruptError) as info:
        blobs.get(blob_id)
    assert info.value.code == "store.corrupt"

    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0xFF
    _damage(path, bytes(flipped))  # bit rot: zlib's checksum fails
    with pytest.raises(StoreCorruptError):
        blobs.get(blob_id)

    _damage(path, b"not zlib at all")
    with pytest.raises(StoreCorruptError):
        blobs.get(blob_id)


@pytest.mark.parametrize(
    "raw",
    [b"blob 5\0hello!", b"tree 5\0hello", b"blob five\0hello", b"no header at all"],
    ids=["wrong-length", "wrong-type", "bad-number", "no-nul"],
)
def test_object_with_a_bad_header_is_corrupt(blobs: BlobStore, raw: bytes) -> None:
    blob_id = blobs.put(b"hello")
    _damage(blobs.root / "objects" / blob_id[:2] / blob_id[2:], zlib.compress(raw))
    with pytest.raises(StoreCorruptError) as info:
        blobs.get(blob_id)
    assert info.value.code == "store.corrupt"


@pytest.mark.skipif(not supports_sha256(), reason="git without --object-format=sha256")
def test_sha256_store_matches_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", "--object-format=sha256", str(repo))
    data = b"sha256 world\n"
    (repo / "f.txt").write_bytes(data)
    hashed = git("hash-object", "f.txt", cwd=repo).decode().strip()
    assert len(hashed) == 64

    store = BlobStore(tmp_path / "blobs", "sha256")
    store.init()
    assert git_blob_id(data, "sha256") == hashed
    assert store.put(data) == hashed
    assert store.get(hashed) == data
    assert git("--git-dir", str(store.root), "cat-file", "-p", hashed) == data
    # A sha1 id is malformed in a sha256 store.
    assert not store.has(git_blob_id(data))
    with pytest.raises(NotFoundError):
        store.get(git_blob_id(data))
