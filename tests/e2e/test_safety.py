"""Path and secret safety over real stdio (DESIGN.md §8, §6 "Secrets").

Paths: every method whose params name a file, a directory or a stored object is attacked
with traversal (``../``, absolute paths outside the workspace, ``..%2f``, ids with slashes,
NUL bytes) and with symlinks that escape the workspace (a linked file, a linked directory,
a linked ``AGENTS.md``, skill directory, ``SKILL.md``, skills root, skill reference and
fragment override).  Each attack must end in a JSON-RPC error with a dotted ``data.code``,
or, for discovery scans, in the escaping file being skipped and reported, and the content
outside (a canary string) must never reach a response, the store or a log.  ``ROWS`` is the
table; :func:`test_table_covers_every_path_field` fails when a method or field that looks
like a path has no row.

Secrets: a key passed where credentials are accepted (``connectionRef`` naming an
environment variable or a secret file) is really sent to the provider, and echoed back by
it; where credentials are refused (generation parameters) the request is refused.  Then
every byte the sidecar wrote (store, trace, log) is searched for the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import pytest
from pydantic import BaseModel

from protocol.methods import ALL_METHODS
from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory

pytestmark = pytest.mark.anyio

CANARY = "c4n4ry-0ut5ide-w0rkspace-77e1"
"""The content of every file outside the workspace: it must never be read."""

KEY_ENV = "CS_SAFETY_PROVIDER_KEY"
ENV_SECRET = "sk-live-env-5afe7y-0a1b2c3d4e5f"
FILE_SECRET = "sk-live-file-5afe7y-9f8e7d6c5b4a"


# --- the world: a workspace with escaping symlinks, files outside it --------------------------


@dataclass(frozen=True)
class World:
    workspace: Path
    outside: Path
    home: Path


def _skill(directory: Path, name: str, body: str, description: str = "A skill.") -> None:
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"
    )


@pytest.fixture
def world(tmp_path: Path) -> World:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text(CANARY)
    (outside / "AGENTS.md").write_text(f"# {CANARY}\n")
    (outside / "fragment.md").write_text(CANARY)
    (outside / "dir").mkdir()
    (outside / "dir" / "AGENTS.md").write_text(CANARY)
    (outside / "dir" / "canary.txt").write_text(CANARY)
    _skill(outside / "skill", "escaped", CANARY, description=CANARY)
    _skill(outside / "skills-root" / "rootskill", "rootskill", CANARY, description=CANARY)

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / "AGENTS.md").write_text("# project rules\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('inside')\n")
    (ws / "link-file.txt").symlink_to(outside / "canary.txt")
    (ws / "link-dir").symlink_to(outside / "dir")
    (ws / "nested").mkdir()
    (ws / "nested" / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    skills = ws / ".agents" / "skills"
    _skill(
        skills / "good",
        "good",
        "Use [the reference](ref.md), [the secret](../../../../outside/canary.txt) "
        "and [the link](leak.md).",
    )
    (skills / "good" / "ref.md").write_text("inside reference\n")
    (skills / "good" / "leak.md").symlink_to(outside / "canary.txt")
    (skills / "escaped").symlink_to(outside / "skill")
    (skills / "mdlink").mkdir()
    (skills / "mdlink" / "SKILL.md").symlink_to(outside / "skill" / "SKILL.md")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "skills").symlink_to(outside / "skills-root")
    fragments = ws / ".context-sidecar" / "fragments"
    fragments.mkdir(parents=True)
    (fragments / "base_identity.md").symlink_to(outside / "fragment.md")

    home = tmp_path / "home"
    home.mkdir()
    return World(workspace=ws, outside=outside, home=home)


# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ctx:
    """What rows build their params from: a session in the world and valid stored ids."""

    sid: str
    world: World
    input_id: str
    snapshot_id: str
    run_id: str
    profile_id: str
    preset_id: str

    def fill(self, template: str) -> str:
        """A hostile value: ``{outside}``/``{workspace}`` and id-shaped traversals filled in."""
        return template.format(
            outside=self.world.outside,
            workspace=self.world.workspace,
            ses=_shaped("ses_", len(self.sid)),
            run=_shaped("run_", len(self.run_id)),
            prf=_shaped("prf_", len(self.profile_id)),
            pst=_shaped("pst_", len(self.preset_id)),
            blob=_shaped("", len(self.input_id)),
        )


def _shaped(prefix: str, length: int) -> str:
    """An id of the right prefix and length made of ``../``: passes naive length checks."""
    return prefix + ("../" * length)[: length - len(prefix)]


Params = Callable[[Ctx, str], dict[str, Any]]
Then = Callable[[Ctx], tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Refused:
    """A JSON-RPC error whose ``data.code`` is one of ``codes``."""

    codes: tuple[str, ...]


@dataclass(frozen=True)
class Reported:
    """Success, and the answer has a diagnostic with ``code`` naming each of ``names`` (a
    substring of its path; ``{value}`` is the hostile value): the escaping file was skipped
    and said so (discovery scans never fail the request)."""

    code: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Unused:
    """Success: the value is only compared with known names or kept as data, never opened."""

    why: str


@dataclass(frozen=True)
class Deferred:
    """Accepted and recorded (a pin, a blob reference); the call that later reads it
    (``then``, on the same fresh session) refuses or reports."""

    then: Then
    expect: Refused | Reported


Expect = Refused | Reported | Unused | Deferred


@dataclass(frozen=True)
class Row:
    method: str
    field: str
    """Dotted wire path of the field under attack (``<scan>``: the workspace itself)."""
    params: Params
    values: tuple[str, ...]
    expect: Expect
    fresh: bool = False
    """Run each value on a new session of the world (rows that leave state behind)."""


def refused(*codes: str) -> Refused:
    return Refused(codes)


INVALID = refused("params.invalid")
OUTSIDE = refused("context.path_outside_workspace")
NUL = ("src/app.py\x00../../outside/canary.txt",)
ESCAPING_FILES = (
    "../outside/canary.txt",
    "{outside}/canary.txt",
    "src/../../outside/canary.txt",
    "link-file.txt",
    "link-dir/canary.txt",
)
ESCAPING_DIRS = ("{outside}", "{workspace}/../outside", "{workspace}/link-dir")
MENTIONS = ("../outside/canary.txt", "{outside}/dir", "link-dir", "..%2foutside%2fcanary.txt")
TRAVERSAL_IDS = (
    "..",
    "../../outside/canary.txt",
    "{outside}/canary.txt",
    "..%2f..%2foutside%2fcanary.txt",
    "a/../../b",
    "x\x00y",
)
SLASHED_IDS = tuple(v for v in TRAVERSAL_IDS if v != "..")
"""For ids limited to a safe alphabet (``..`` is a harmless name there)."""
SESSION_IDS = (*TRAVERSAL_IDS, "{ses}", "ses_../../outside", "ses_..%2f..%2fx", "ses_ab\x00cd")
RUN_IDS = (*TRAVERSAL_IDS, "{run}", "run_../../x", "run_..%2fx")
PROFILE_IDS = (*TRAVERSAL_IDS, "{prf}", "prf_../../x", "prf_..%2fx")
PRESET_IDS = (*TRAVERSAL_IDS, "{pst}", "pst_../../x", "pst_..%2fx")
BLOB_IDS = (*TRAVERSAL_IDS, "{blob}", "../" * 13 + "x")
TOKENIZERS = ("../../outside/canary", "{outside}/canary.txt", "cl100k_base/../../x", "a\x00b")
BAD_REFS = (
    "secret:../outside/canary.txt",
    "secret:{outside}/canary.txt",
    "env:../x",
    "{outside}/canary.txt",
    "secret:a/b",
)
FILE_URLS = ("file://{outside}/canary.txt", "{outside}/canary.txt")
BLOB_REF_WHY = "kept as a reference; a blob is only ever looked up by 40 hex digits"


def turn(text: str = "hi") -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def image(blob: str) -> dict[str, Any]:
    return {"type": "image", "blob": blob, "mediaType": "image/png"}


def image_result(blob: str) -> dict[str, Any]:
    return {"type": "toolResult", "callId": "c1", "content": [image(blob)]}


REASONING_ID_WHY = "the provider's id of its reasoning item, sent back to it verbatim; never opened"


def reasoning(item_id: str) -> dict[str, Any]:
    return {"type": "reasoning", "text": "t", "provider": "openai-responses", "id": item_id}


def _with_reasoning(scripted: bool, c: Ctx, v: str) -> dict[str, Any]:
    params = {"sessionId": c.sid, "userTurn": [*turn(), reasoning(v)]}
    return {**params, "script": SCRIPT} if scripted else params


def note() -> list[dict[str, Any]]:
    return [{"kind": "note", "text": "n"}]


SCRIPT = {"rounds": [{"text": "done"}]}


def _assemble_lowered(c: Ctx) -> tuple[str, dict[str, Any]]:
    return "context/assemble", {
        "sessionId": c.sid,
        "userTurn": turn(),
        "tools": [{"name": "read"}],  # a call of a known tool is lowered natively, images too
        "lowerTo": "anthropic-messages",
    }


def _assemble(c: Ctx) -> tuple[str, dict[str, Any]]:
    return "context/assemble", {"sessionId": c.sid, "userTurn": turn()}


def _freeze(c: Ctx) -> tuple[str, dict[str, Any]]:
    return "input/freeze", {"sessionId": c.sid, "userTurn": turn()}


PIN_READ = Deferred(_assemble, Reported("context.path_outside_workspace", ("{value}",)))
PIN_READ_FROZEN = Deferred(_freeze, Reported("context.path_outside_workspace", ("{value}",)))
INSTRUCTIONS_SKIPPED = Reported("instructions.outside_workspace", ("nested/AGENTS.md", "link-dir"))
SKILLS_SKIPPED = Reported(
    "skills.outside_root", ("skills/escaped", "mdlink/SKILL.md", ".claude/skills")
)
FRAGMENT_SKIPPED = Reported("context.path_outside_workspace", ("fragments/base_identity.md",))
IMAGE_READ = Deferred(_assemble_lowered, refused("blob.not_found"))


def _openai(**binding: Any) -> dict[str, Any]:
    return {"provider": "openai", "modelId": "gpt-4o", "connectionRef": f"env:{KEY_ENV}", **binding}


#: Every method that takes a session id, with params where only the session id is wrong.
SESSION_ID_PARAMS: dict[str, Params] = {
    "session/get": lambda c, v: {"sessionId": v},
    "session/read": lambda c, v: {"sessionId": v},
    "session/append": lambda c, v: {"sessionId": v, "entries": note()},
    "session/fork": lambda c, v: {"sessionId": v},
    "session/rename": lambda c, v: {"sessionId": v, "title": "t"},
    "session/delete": lambda c, v: {"sessionId": v},
    "session/release": lambda c, v: {"sessionId": v},
    "session/compact": lambda c, v: {"sessionId": v, "summary": "s", "throughSeq": 0},
    **{
        f"session/{verb}": (
            lambda c, v: {
                "sessionId": v,
                "target": {"kind": "range", "fromSeq": 1, "throughSeq": 1},
            }
        )
        for verb in ("pin", "unpin", "drop", "recover")
    },
    "context/sources": lambda c, v: {"sessionId": v},
    "context/assemble": lambda c, v: {"sessionId": v, "userTurn": turn()},
    "context/registerSource": lambda c, v: {"sessionId": v, "source": {"id": "r", "text": "t"}},
    "context/unregisterSource": lambda c, v: {"sessionId": v, "id": "r"},
    "skills/list": lambda c, v: {"sessionId": v},
    "skills/activate": lambda c, v: {"sessionId": v, "name": "good"},
    "input/freeze": lambda c, v: {"sessionId": v, "userTurn": turn()},
    "run/start": lambda c, v: {"sessionId": v, "userTurn": turn(), "script": SCRIPT},
}


ROWS: tuple[Row, ...] = (
    # --- session ids: directory names in the store ---------------------------------------
    *(
        Row(method, "sessionId", build, SESSION_IDS, refused("session.not_found"))
        for method, build in SESSION_ID_PARAMS.items()
    ),
    Row(
        "snapshot/assemble",
        "sessionId",
        lambda c, v: {"sessionId": v, "inputId": c.input_id},
        SESSION_IDS,
        refused("input.not_found"),  # the input is looked up first: another session's
    ),
    Row(
        "run/list",
        "sessionId",
        lambda c, v: {"sessionId": v},
        SESSION_IDS,
        Unused("a filter compared with each run's session id"),
    ),
    # --- workspace roots -----------------------------------------------------------------
    Row(
        "session/create",
        "workspaceRoots",
        lambda c, v: {"workspaceRoots": [v]},
        ("../outside", "outside", "./ws/../outside", "{workspace}\x00/../outside"),
        INVALID,
    ),
    Row(
        "session/create",
        "profileId",
        lambda c, v: {"profileId": v},
        PROFILE_IDS,
        Unused("kept as session metadata; profiles are read from a request's own profileId"),
    ),
    Row("session/list", "cursor", lambda c, v: {"cursor": v}, SESSION_IDS, Unused("compared")),
    Row(
        "session/read",
        "tokenizer",
        lambda c, v: {"sessionId": c.sid, "withTokens": True, "tokenizer": v},
        TOKENIZERS,
        refused("tokens.unknown_tokenizer"),
    ),
    Row(
        "tokens/count",
        "tokenizer",
        lambda c, v: {"texts": ["x"], "tokenizer": v},
        TOKENIZERS,
        refused("tokens.unknown_tokenizer"),
    ),
    # --- history entries that name files or blobs ------------------------------------------
    Row(
        "session/append",
        "entries.target.locator",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [{"kind": "pin", "target": {"kind": "file", "locator": v}}],
        },
        NUL,
        INVALID,
    ),
    Row(
        "session/append",
        "entries.target.locator",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [{"kind": "pin", "target": {"kind": "file", "locator": v}}],
        },
        ESCAPING_FILES,
        PIN_READ,
        fresh=True,
    ),
    Row(
        "session/append",
        "entries.path",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [{"kind": "skillActivated", "name": "good", "path": v}],
        },
        ("{outside}/skill", "../outside/skill"),
        Unused("recorded only; activation reads the skill discovery found, never this path"),
    ),
    Row(
        "session/append",
        "entries.blob",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [{"kind": "skillActivated", "name": "good", "blob": v}],
        },
        tuple(b for b in BLOB_IDS if b != "{blob}"),
        Deferred(_assemble, Reported("skills.activation_missing", ("good",))),
        fresh=True,
    ),
    Row(
        "session/append",
        "entries.content.blob",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [{"kind": "message", "role": "user", "content": [image(v)]}],
        },
        BLOB_IDS,
        IMAGE_READ,
        fresh=True,
    ),
    Row(
        "session/append",
        "entries.content.content.blob",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [
                {"kind": "message", "role": "user", "content": turn("read it")},
                {
                    "kind": "message",
                    "role": "assistant",
                    "content": [
                        {"type": "toolCall", "callId": "c1", "name": "read", "arguments": {}}
                    ],
                },
                {"kind": "message", "role": "user", "content": [image_result(v)]},
            ],
        },
        BLOB_IDS,
        IMAGE_READ,
        fresh=True,
    ),
    # --- a reasoning part's id: the provider's own (``rs_…``), sent back to it verbatim ------
    *(
        Row(
            method,
            "userTurn.id",
            partial(_with_reasoning, method == "run/start"),
            (*ESCAPING_FILES, *TRAVERSAL_IDS),
            Unused(REASONING_ID_WHY),
            fresh=True,
        )
        for method in ("context/assemble", "input/freeze", "run/start")
    ),
    Row(
        "session/append",
        "entries.content.id",
        lambda c, v: {
            "sessionId": c.sid,
            "entries": [
                {"kind": "message", "role": "assistant", "content": [reasoning(v)]},
            ],
        },
        (*ESCAPING_FILES, *TRAVERSAL_IDS),
        Unused(REASONING_ID_WHY),
        fresh=True,
    ),
    # --- ledger controls -----------------------------------------------------------------------
    *(
        Row(
            f"session/{verb}",
            "target.locator",
            lambda c, v: {"sessionId": c.sid, "target": {"kind": "file", "locator": v}},
            NUL,
            INVALID,
        )
        for verb in ("pin", "unpin", "drop", "recover")
    ),
    Row(
        "session/pin",
        "target.locator",
        lambda c, v: {"sessionId": c.sid, "target": {"kind": "file", "locator": v}},
        ESCAPING_FILES,
        PIN_READ,
        fresh=True,
    ),
    Row(
        "session/pin",
        "target.locator",
        lambda c, v: {"sessionId": c.sid, "target": {"kind": "file", "locator": v}},
        ESCAPING_FILES,
        PIN_READ_FROZEN,
        fresh=True,
    ),
    *(
        Row(
            f"session/{verb}",
            "target.locator",
            lambda c, v: {"sessionId": c.sid, "target": {"kind": "file", "locator": v}},
            ESCAPING_FILES,
            Unused("compared with the locators of earlier pins and drops"),
        )
        for verb in ("unpin", "drop", "recover")
    ),
    # --- sources and assembly ----------------------------------------------------------------
    Row(
        "context/sources",
        "cwd",
        lambda c, v: {"sessionId": c.sid, "cwd": v},
        ESCAPING_DIRS,
        OUTSIDE,
    ),
    Row("context/sources", "cwd", lambda c, v: {"sessionId": c.sid, "cwd": v}, NUL, INVALID),
    Row(
        "context/sources",
        "mentionedPaths",
        lambda c, v: {"sessionId": c.sid, "mentionedPaths": [v]},
        MENTIONS,
        Unused("matched against instruction scopes inside the workspace, never opened"),
    ),
    Row(
        "context/sources",
        "mentionedPaths",
        lambda c, v: {"sessionId": c.sid, "mentionedPaths": [v]},
        NUL,
        INVALID,
    ),
    *(
        Row("context/sources", "<scan>", lambda c, v: {"sessionId": c.sid}, ("",), expect)
        for expect in (INSTRUCTIONS_SKIPPED, SKILLS_SKIPPED)
    ),
    Row(
        "context/assemble",
        "cwd",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "cwd": v},
        ESCAPING_DIRS,
        OUTSIDE,
    ),
    Row(
        "context/assemble",
        "cwd",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "cwd": v},
        NUL,
        INVALID,
    ),
    Row(
        "context/assemble",
        "mentionedPaths",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "mentionedPaths": [v]},
        MENTIONS,
        Unused("matched against instruction scopes inside the workspace, never opened"),
    ),
    Row(
        "context/assemble",
        "mentionedPaths",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "mentionedPaths": [v]},
        NUL,
        INVALID,
    ),
    Row(
        "context/assemble",
        "sources.id",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "sources": [{"id": v, "text": "t"}]},
        SLASHED_IDS,
        INVALID,
    ),
    Row(
        "context/assemble",
        "userTurn.blob",
        lambda c, v: {"sessionId": c.sid, "userTurn": [image(v)], "lowerTo": "openai-chat"},
        BLOB_IDS,
        refused("blob.not_found"),
    ),
    Row(
        "context/assemble",
        "userTurn.content.blob",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": [image_result(v)],
            "lowerTo": "anthropic-messages",
        },
        BLOB_IDS,
        Unused("a result with no call before it is lowered as text: images become placeholders"),
    ),
    # --- the turn in progress (a host's own loop): its messages, as the user turn's parts ------
    Row(
        "context/assemble",
        "turn.content.blob",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "turn": [
                {"role": "assistant", "content": [{"type": "text", "text": "look"}]},
                {"role": "user", "content": [image(v)]},
            ],
            "lowerTo": "openai-chat",
        },
        BLOB_IDS,
        refused("blob.not_found"),
    ),
    Row(
        "context/assemble",
        "turn.content.content.blob",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "turn": [
                {
                    "role": "assistant",
                    "content": [{"type": "toolCall", "callId": "c1", "name": "t", "arguments": {}}],
                },
                {"role": "user", "content": [image_result(v)]},
            ],
            "tools": [{"name": "t"}],
            "lowerTo": "anthropic-messages",
        },
        BLOB_IDS,
        refused("blob.not_found"),
    ),
    Row(
        "context/assemble",
        "turn.content.id",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "turn": [
                {"role": "assistant", "content": [reasoning(v), {"type": "text", "text": "a"}]}
            ],
        },
        (*ESCAPING_FILES, *TRAVERSAL_IDS),
        Unused(REASONING_ID_WHY),
    ),
    *(
        Row(
            "context/assemble",
            "<scan>",
            lambda c, v: {"sessionId": c.sid, "userTurn": turn()},
            ("",),
            expect,
        )
        for expect in (INSTRUCTIONS_SKIPPED, SKILLS_SKIPPED, FRAGMENT_SKIPPED)
    ),
    Row(
        "context/registerSource",
        "source.id",
        lambda c, v: {"sessionId": c.sid, "source": {"id": v, "text": "t"}},
        SLASHED_IDS,
        INVALID,
    ),
    Row(
        "context/unregisterSource",
        "id",
        lambda c, v: {"sessionId": c.sid, "id": v},
        TRAVERSAL_IDS,
        Unused("a key of the session's in-memory host sources"),
    ),
    Row("skills/list", "<scan>", lambda c, v: {"sessionId": c.sid}, ("",), SKILLS_SKIPPED),
    Row(
        "skills/activate",
        "name",
        lambda c, v: {"sessionId": c.sid, "name": v},
        ("escaped", "rootskill", "mdlink", "../outside/skill", "{outside}/skill", "good/../../x"),
        refused("skills.not_found"),
    ),
    Row(
        "skills/activate",
        "<scan>",
        lambda c, v: {"sessionId": c.sid, "name": "good"},
        ("",),
        Reported("skills.reference_outside", ("../../../../outside/canary.txt", "leak.md")),
    ),
    # --- frozen inputs ----------------------------------------------------------------------
    Row(
        "input/freeze",
        "attachments.path",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "attachments": [{"kind": "file", "path": v}],
        },
        (*ESCAPING_FILES, "link-dir"),
        OUTSIDE,
    ),
    Row(
        "input/freeze",
        "attachments.path",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "attachments": [{"kind": "file", "path": v}],
        },
        ("..%2foutside%2fcanary.txt", "src", *NUL),
        INVALID,  # no such file / a directory / a NUL byte
    ),
    Row(
        "input/freeze",
        "cwd",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "cwd": v},
        ESCAPING_DIRS,
        OUTSIDE,
    ),
    Row(
        "input/freeze",
        "cwd",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "cwd": v},
        NUL,
        INVALID,
    ),
    Row(
        "input/freeze",
        "mentionedPaths",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "mentionedPaths": [v]},
        MENTIONS,
        Unused("matched against instruction scopes inside the workspace, never opened"),
    ),
    Row(
        "input/freeze",
        "mentionedPaths",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "mentionedPaths": [v]},
        NUL,
        INVALID,
    ),
    Row(
        "input/freeze",
        "activatedEntries.id",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "activatedEntries": [{"id": v, "text": "t"}],
        },
        SLASHED_IDS,
        INVALID,
    ),
    Row(
        "input/freeze",
        "modelConnection.connectionRef",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "modelConnection": _openai(connectionRef=v),
        },
        BAD_REFS,
        INVALID,
    ),
    Row(
        "input/freeze",
        "modelConnection.baseUrl",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "modelConnection": _openai(baseUrl=v),
        },
        FILE_URLS,
        Unused("an HTTP endpoint for runs; a freeze fetches nothing"),
    ),
    Row(
        "input/freeze",
        "userTurn.blob",
        lambda c, v: {"sessionId": c.sid, "userTurn": [image(v)]},
        BLOB_IDS,
        Unused(BLOB_REF_WHY),
    ),
    Row(
        "input/freeze",
        "userTurn.content.blob",
        lambda c, v: {"sessionId": c.sid, "userTurn": [image_result(v)]},
        BLOB_IDS,
        Unused(BLOB_REF_WHY),
    ),
    *(
        Row(
            "input/freeze",
            "<scan>",
            lambda c, v: {"sessionId": c.sid, "userTurn": turn()},
            ("",),
            expect,
        )
        for expect in (INSTRUCTIONS_SKIPPED, SKILLS_SKIPPED, FRAGMENT_SKIPPED)
    ),
    Row("input/get", "inputId", lambda c, v: {"inputId": v}, BLOB_IDS, refused("input.not_found")),
    # --- snapshots, blobs --------------------------------------------------------------------
    Row(
        "snapshot/assemble",
        "inputId",
        lambda c, v: {"sessionId": c.sid, "inputId": v},
        BLOB_IDS,
        refused("input.not_found"),
    ),
    Row(
        "snapshot/assemble",
        "profileId",
        lambda c, v: {"sessionId": c.sid, "inputId": c.input_id, "profileId": v},
        PROFILE_IDS,
        refused("profile.not_found"),
    ),
    Row(
        "snapshot/assemble",
        "profile.preset.presetId",
        lambda c, v: {
            "sessionId": c.sid,
            "inputId": c.input_id,
            "profile": {"preset": {"mode": "ref", "presetId": v}},
        },
        PRESET_IDS,
        refused("preset.not_found"),
    ),
    Row(
        "snapshot/assemble",
        "profile.modelBinding.connectionRef",
        lambda c, v: {
            "sessionId": c.sid,
            "inputId": c.input_id,
            "profile": {"modelBinding": _openai(connectionRef=v)},
        },
        BAD_REFS,
        INVALID,
    ),
    Row(
        "snapshot/assemble",
        "profile.modelBinding.baseUrl",
        lambda c, v: {
            "sessionId": c.sid,
            "inputId": c.input_id,
            "profile": {"modelBinding": _openai(baseUrl=v)},
        },
        FILE_URLS,
        Unused("an HTTP endpoint for runs; assembly fetches nothing"),
    ),
    Row(
        "snapshot/get",
        "snapshotId",
        lambda c, v: {"snapshotId": v},
        BLOB_IDS,
        refused("snapshot.not_found"),
    ),
    Row(
        "snapshot/lower",
        "snapshotId",
        lambda c, v: {"snapshotId": v, "target": "openai-chat"},
        BLOB_IDS,
        refused("snapshot.not_found"),
    ),
    Row("snapshot/diff", "to", lambda c, v: {"to": v}, BLOB_IDS, refused("snapshot.not_found")),
    Row(
        "snapshot/diff",
        "from",
        lambda c, v: {"to": c.snapshot_id, "from": v},
        BLOB_IDS,
        refused("snapshot.not_found"),
    ),
    Row("blob/read", "blob", lambda c, v: {"blob": v}, BLOB_IDS, refused("blob.not_found")),
    # --- profiles and presets: file names in the store -------------------------------------
    Row(
        "profile/create",
        "modelBinding.connectionRef",
        lambda c, v: {"modelBinding": _openai(connectionRef=v)},
        BAD_REFS,
        INVALID,
    ),
    Row(
        "profile/create",
        "modelBinding.baseUrl",
        lambda c, v: {"modelBinding": _openai(baseUrl=v)},
        FILE_URLS,
        Unused("an HTTP endpoint for runs; stored, fetched by nothing here"),
    ),
    Row(
        "profile/create",
        "preset.presetId",
        lambda c, v: {"preset": {"mode": "ref", "presetId": v}},
        PRESET_IDS,
        Unused("stored; read by id when assembling (see the snapshot/assemble row)"),
    ),
    *(
        Row(f"profile/{verb}", "id", build, PROFILE_IDS, refused("profile.not_found"))
        for verb, build in (
            ("get", lambda c, v: {"id": v}),
            ("delete", lambda c, v: {"id": v}),
            ("update", lambda c, v: {"id": v, "profile": {}}),
        )
    ),
    Row(
        "profile/update",
        "profile.modelBinding.connectionRef",
        lambda c, v: {"id": c.profile_id, "profile": {"modelBinding": _openai(connectionRef=v)}},
        BAD_REFS,
        INVALID,
    ),
    Row(
        "profile/update",
        "profile.modelBinding.baseUrl",
        lambda c, v: {"id": c.profile_id, "profile": {"modelBinding": _openai(baseUrl=v)}},
        FILE_URLS,
        Unused("an HTTP endpoint for runs; stored, fetched by nothing here"),
    ),
    Row(
        "profile/update",
        "profile.preset.presetId",
        lambda c, v: {"id": c.profile_id, "profile": {"preset": {"mode": "ref", "presetId": v}}},
        PRESET_IDS,
        Unused("stored; read by id when assembling (see the snapshot/assemble row)"),
    ),
    *(
        Row(f"preset/{verb}", "id", build, PRESET_IDS, refused("preset.not_found"))
        for verb, build in (
            ("get", lambda c, v: {"id": v}),
            ("delete", lambda c, v: {"id": v}),
            ("update", lambda c, v: {"id": v, "preset": {}}),
        )
    ),
    # --- runs ---------------------------------------------------------------------------------
    Row(
        "run/start",
        "inputId",
        lambda c, v: {"sessionId": c.sid, "inputId": v, "script": SCRIPT},
        BLOB_IDS,
        refused("input.not_found"),
    ),
    Row(
        "run/start",
        "profileId",
        lambda c, v: {"sessionId": c.sid, "userTurn": turn(), "profileId": v, "script": SCRIPT},
        PROFILE_IDS,
        refused("profile.not_found"),
    ),
    Row(
        "run/start",
        "profile.preset.presetId",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "profile": {"preset": {"mode": "ref", "presetId": v}},
            "script": SCRIPT,
        },
        PRESET_IDS,
        refused("preset.not_found"),
    ),
    Row(
        "run/start",
        "profile.modelBinding.connectionRef",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "profile": {"modelBinding": _openai(connectionRef=v)},
        },
        BAD_REFS,
        INVALID,
    ),
    Row(
        "run/start",
        "profile.modelBinding.connectionRef",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "profile": {"modelBinding": _openai(connectionRef=v)},
        },
        ("secret:..", "secret:...", "secret:-.-"),  # pass the wire pattern; not file names
        refused("model.auth_failed"),
    ),
    Row(
        "run/start",
        "profile.modelBinding.baseUrl",
        lambda c, v: {
            "sessionId": c.sid,
            "userTurn": turn(),
            "profile": {"modelBinding": _openai(baseUrl=v)},
        },
        FILE_URLS,
        Unused("the provider's HTTP endpoint: httpx refuses anything but http(s)"),
        fresh=True,
    ),
    Row(
        "run/start",
        "userTurn.blob",
        lambda c, v: {"sessionId": c.sid, "userTurn": [image(v)], "script": SCRIPT},
        BLOB_IDS,
        Unused(BLOB_REF_WHY),
        fresh=True,
    ),
    Row(
        "run/start",
        "userTurn.content.blob",
        lambda c, v: {"sessionId": c.sid, "userTurn": [image_result(v)], "script": SCRIPT},
        BLOB_IDS,
        Unused(BLOB_REF_WHY),
        fresh=True,
    ),
    *(
        Row(method, "runId", lambda c, v: {"runId": v}, RUN_IDS, refused("run.not_found"))
        for method in ("run/get", "run/subscribe", "run/unsubscribe", "run/cancel", "run/resume")
    ),
)


# --- which fields look like paths -------------------------------------------------------------

PATH_LIKE = re.compile(
    r"(Id|Path|Paths|Root|Roots|Ref|Blob|Url|Locator)$"  # sessionId, workspaceRoots, ...
    r"|^(id|path|cwd|blob|locator|to|from|tokenizer|cursor|uri)$"
)
"""Wire names of fields that name a file, a directory, a stored object or an endpoint."""
NOT_A_PATH = {
    "callId": "pairs a tool call with its result in memory",
    "itemId": "names a ledger item, compared in memory",
    "modelId": "a model name sent to the provider",
}
EXTRA_FIELDS = {"<scan>", "name"}
"""Row fields that are not params fields: the workspace scan, and skill names."""


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    if get_origin(annotation) is Annotated:
        yield from _models(get_args(annotation)[0])
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    else:
        for arg in get_args(annotation):
            yield from _models(arg)


def fields_where(
    model: type[BaseModel], wanted: Callable[[str], bool], prefix: str = ""
) -> set[str]:
    """Dotted wire paths of the fields of ``model`` (nested models included) whose wire name
    is ``wanted``."""
    found: set[str] = set()
    for name, info in model.model_fields.items():
        wire = info.alias or name
        if wanted(wire):
            found.add(prefix + wire)
        for inner in _models(info.annotation):
            if inner is not model:
                found |= fields_where(inner, wanted, f"{prefix}{wire}.")
    return found


def path_fields(model: type[BaseModel]) -> set[str]:
    return fields_where(model, lambda w: bool(PATH_LIKE.search(w)) and w not in NOT_A_PATH)


def required_pairs() -> set[tuple[str, str]]:
    return {
        (spec.name, f)
        for spec in ALL_METHODS
        if spec.kind == "request" and spec.direction == "clientToServer"
        for f in path_fields(spec.params)
    }


def test_table_covers_every_path_field() -> None:
    """A new method or field that looks like a path cannot skip this file."""
    required = required_pairs()
    covered = {(r.method, r.field) for r in ROWS}
    missing = sorted(required - covered)
    assert not missing, f"no safety row for {missing}"
    unknown = sorted(p for p in covered - required if p[1] not in EXTRA_FIELDS)
    assert not unknown, f"rows for fields that are not path-like params: {unknown}"
    # the table is not trivially satisfied
    assert {m for m, _ in required} >= {
        "session/create",
        "input/freeze",
        "blob/read",
        "profile/get",
        "run/resume",
        "context/sources",
    }
    assert len(required) > 60


# --- running the table ------------------------------------------------------------------------


def _diagnostics(node: Any) -> Iterator[tuple[str, str]]:
    """``(code, path)`` of every diagnostic anywhere in an answer."""
    if isinstance(node, dict):
        if "severity" in node and isinstance(node.get("code"), str):
            yield node["code"], str(node.get("path", ""))
        for value in node.values():
            yield from _diagnostics(value)
    elif isinstance(node, list):
        for value in node:
            yield from _diagnostics(value)


async def _outcome(client: SidecarClient, method: str, params: dict[str, Any]) -> Any:
    """The result, or the RpcError (not raised)."""
    try:
        return await asyncio.wait_for(client.request(method, params), 20)
    except RpcError as err:
        return err


def _check(label: str, outcome: Any, expect: Refused | Reported | Unused, value: str) -> str | None:
    """Why ``outcome`` does not meet ``expect`` (None when it does)."""
    if isinstance(expect, Refused):
        if not isinstance(outcome, RpcError):
            return f"{label}: accepted, expected {expect.codes}: {str(outcome)[:200]}"
        code = outcome.data_code or ""
        if code not in expect.codes or "." not in code:
            return f"{label}: {outcome.code} {code!r} {outcome.message!r}, expected {expect.codes}"
        if "Traceback" in json.dumps(outcome.data) or "Traceback" in outcome.message:
            return f"{label}: a traceback reached the client"
        return None
    if isinstance(outcome, RpcError):
        return f"{label}: refused {outcome.data_code} {outcome.message!r}, expected success"
    if isinstance(expect, Reported):
        paths = [path for code, path in _diagnostics(outcome) if code == expect.code]
        for name in (n.replace("{value}", value) for n in expect.names):
            if not any(name in path for path in paths):
                return f"{label}: no {expect.code} diagnostic naming {name!r} (have {paths})"
    return None


async def _new_session(client: SidecarClient, world: World) -> str:
    created = await client.request("session/create", {"workspaceRoots": [str(world.workspace)]})
    return str(created["sessionId"])


async def _context(client: SidecarClient, world: World) -> Ctx:
    sid = await _new_session(client, world)
    await client.request(
        "session/append",
        {
            "sessionId": sid,
            "entries": [
                {"kind": "message", "role": "user", "content": turn("question")},
                {"kind": "message", "role": "assistant", "content": turn("answer")},
            ],
        },
    )
    frozen = await client.request("input/freeze", {"sessionId": sid, "userTurn": turn()})
    snap = await client.request(
        "snapshot/assemble", {"sessionId": sid, "inputId": frozen["inputId"]}
    )
    profile = await client.request("profile/create", {"name": "p"})
    preset = await client.request("preset/create", {"name": "p"})
    run_sid = await _new_session(client, world)
    run = await client.request(
        "run/start", {"sessionId": run_sid, "userTurn": turn(), "script": SCRIPT}
    )
    for _ in range(500):
        if (await client.request("run/get", {"runId": run["runId"]}))["status"] == "completed":
            break
        await asyncio.sleep(0.01)
    return Ctx(
        sid=sid,
        world=world,
        input_id=frozen["inputId"],
        snapshot_id=snap["snapshotId"],
        run_id=run["runId"],
        profile_id=profile["profileId"],
        preset_id=preset["presetId"],
    )


def _written_bytes(*roots: Path) -> Iterator[tuple[Path, bytes]]:
    """Every file under ``roots`` (blobs decompressed, as git would show them)."""
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            data = path.read_bytes()
            if "objects" in path.parts and path.parent.name != "objects":
                with contextlib.suppress(zlib.error):
                    data = zlib.decompress(data)
            yield path, data


async def test_no_path_escapes_the_workspace(
    sidecars: SidecarFactory, world: World, store_dir: Path
) -> None:
    client = await sidecars.start(env={"HOME": str(world.home), KEY_ENV: "k"})
    ctx = await _context(client, world)
    failures: list[str] = []
    checked = 0
    for row in ROWS:
        for template in row.values:
            value = ctx.fill(template)
            label = f"{row.method} {row.field}={value!r}"
            here = replace(ctx, sid=await _new_session(client, world)) if row.fresh else ctx
            outcome = await _outcome(client, row.method, row.params(here, value))
            expect = row.expect
            if isinstance(expect, Deferred):
                problem = _check(label, outcome, Unused("recorded"), value)
                if problem is None:
                    method, params = expect.then(here)
                    later = await _outcome(client, method, params)
                    problem = _check(f"{label}, then {method}", later, expect.expect, value)
            else:
                problem = _check(label, outcome, expect, value)
            if problem is not None:
                failures.append(problem)
            checked += 1
    assert not failures, "\n".join(failures)
    assert checked == sum(len(row.values) for row in ROWS) > 600
    info = await client.request("server/info", {})
    assert info["storeWritable"] is True  # still alive and well
    await client.close()

    assert CANARY.encode() not in client.stdout_bytes, "a file outside the workspace was read"
    for path, data in _written_bytes(store_dir, sidecars.log_dir):
        assert CANARY.encode() not in data, f"outside content reached {path}"


# --- secrets --------------------------------------------------------------------------------


@dataclass
class FakeOpenAI:
    """An OpenAI-compatible endpoint: records Authorization headers; a key it has not been
    told to accept gets a 401 that echoes it (as real providers partly do)."""

    accept: str
    seen: list[str] = field(default_factory=list)
    server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode().strip()) != "":
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            await reader.readexactly(int(headers.get("content-length", "0")))
            auth = headers.get("authorization", "")
            self.seen.append(auth)
            if auth == f"Bearer {self.accept}":
                chunks = [
                    {"choices": [{"index": 0, "delta": {"content": "Hello."}}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
                ]
                body = b"".join(b"data: %s\n\n" % json.dumps(c).encode() for c in chunks)
                body += b"data: [DONE]\n\n"
                head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            else:
                key = auth.removeprefix("Bearer ")
                body = json.dumps(
                    {
                        "error": {
                            "message": f"Incorrect API key provided: {key}.",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    }
                ).encode()
                head = "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
            writer.write(
                f"{head}content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body
            )
            await writer.drain()
        finally:
            writer.close()


async def _run_to_end(client: SidecarClient, params: dict[str, Any]) -> dict[str, Any]:
    started = await client.request("run/start", params)
    for _ in range(1000):
        run: dict[str, Any] = await client.request("run/get", {"runId": started["runId"]})
        if run["status"] in ("completed", "failed", "cancelled"):
            return run
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {started['runId']} did not end")


async def test_secrets_never_reach_disk(
    sidecars: SidecarFactory, world: World, store_dir: Path, tmp_path: Path
) -> None:
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir(mode=0o700)
    (secrets_dir / "provider-key").write_text(FILE_SECRET + "\n")
    (secrets_dir / "provider-key").chmod(0o600)
    provider = FakeOpenAI(accept=FILE_SECRET)
    base_url = await provider.start()
    trace, log = tmp_path / "trace.jsonl", tmp_path / "sidecar.log"
    client = await sidecars.start(
        args=("--log-file", str(log), "-vv"),
        env={
            "HOME": str(world.home),
            KEY_ENV: ENV_SECRET,
            "CONTEXT_SIDECAR_SECRETS_DIR": str(secrets_dir),
            "CONTEXT_SIDECAR_TRACE": str(trace),
            "NO_PROXY": "127.0.0.1,localhost",
        },
    )
    try:
        sid = await _new_session(client, world)

        def binding(ref: str) -> dict[str, Any]:
            return {
                "provider": "openai",
                "modelId": "gpt-4o",
                "baseUrl": base_url,
                "connectionRef": ref,
                "parameters": {"temperature": 0.1},
            }

        # accepted: references to where the key lives, used for real
        profile = await client.request(
            "profile/create", {"modelBinding": binding(f"env:{KEY_ENV}")}
        )
        refused_run = await _run_to_end(
            client, {"sessionId": sid, "userTurn": turn(), "profileId": profile["profileId"]}
        )
        assert refused_run["status"] == "failed"
        assert refused_run["failure"]["code"] == "model.auth_failed"
        assert "[redacted]" in refused_run["failure"]["message"]  # the echoed key was blanked
        ok_run = await _run_to_end(
            client,
            {
                "sessionId": sid,
                "userTurn": turn(),
                "profile": {"modelBinding": binding("secret:provider-key")},
            },
        )
        assert ok_run["status"] == "completed", ok_run
        assert provider.seen == [f"Bearer {ENV_SECRET}", f"Bearer {FILE_SECRET}"]
        frozen = await client.request(
            "input/freeze",
            {"sessionId": sid, "userTurn": turn(), "modelConnection": binding(f"env:{KEY_ENV}")},
        )
        await client.request(
            "snapshot/assemble",
            {"sessionId": sid, "inputId": frozen["inputId"], "profileId": profile["profileId"]},
        )

        # refused: the key itself, wherever credentials would be accepted
        for secret in (ENV_SECRET, FILE_SECRET):
            for method, params in _credential_attempts(sid, secret, binding(f"env:{KEY_ENV}")):
                with pytest.raises(RpcError) as err:
                    await client.request(method, params)
                assert err.value.code == -32602 and err.value.data_code == "params.invalid", (
                    method,
                    params,
                )
                assert secret not in json.dumps(err.value.data) + err.value.message
    finally:
        await client.close()
        await provider.stop()

    traced = trace.read_text()
    assert traced.count('"dir":"recv"') > 10 and "[redacted]" in traced  # refusals traced
    assert log.stat().st_size > 0
    written = list(_written_bytes(store_dir, trace, log, sidecars.log_dir))
    assert len(written) > 10
    for secret in (ENV_SECRET, FILE_SECRET):
        assert secret.encode() not in client.stdout_bytes  # nor any answer or event
        for path, data in written:
            assert secret.encode() not in data, f"the key leaked into {path}"


def _credential_attempts(
    sid: str, secret: str, binding: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """Every place a credential could be smuggled in through generation parameters or the
    connection reference itself."""
    leaky = [
        {"apiKey": secret},
        {"api_key": secret},
        {"authorization": f"Bearer {secret}"},
        {"extra_headers": {"Authorization": f"Bearer {secret}"}},
        {"nested": [{"x-api-key": secret}]},
    ]
    attempts: list[tuple[str, dict[str, Any]]] = []
    for parameters in leaky:
        leaking = {**binding, "parameters": parameters}
        profile = {"modelBinding": leaking}
        attempts += [
            ("profile/create", profile),
            ("profile/update", {"id": "prf_x", "profile": profile}),
            ("preset/create", {"parameters": parameters}),
            ("preset/update", {"id": "pst_x", "preset": {"parameters": parameters}}),
            ("input/freeze", {"sessionId": sid, "userTurn": turn(), "modelConnection": leaking}),
            ("snapshot/assemble", {"sessionId": sid, "inputId": "0" * 40, "profile": profile}),
            ("run/start", {"sessionId": sid, "userTurn": turn(), "profile": profile}),
        ]
    for ref in (secret, f"Bearer {secret}"):
        attempts.append(("profile/create", {"modelBinding": {**binding, "connectionRef": ref}}))
    return attempts


def test_every_credential_method_is_attempted() -> None:
    """The secret scenario tries every method whose params take a connection or generation
    parameters (where a credential could be smuggled in)."""
    takes = {
        spec.name
        for spec in ALL_METHODS
        if spec.direction == "clientToServer"
        for f in fields_where(spec.params, lambda w: w in ("connectionRef", "parameters"))
        if not f.startswith("tools.")  # a tool's JSON Schema, not generation parameters
    }
    attempted = {m for m, _ in _credential_attempts("s", "k", {})}
    assert takes == attempted
