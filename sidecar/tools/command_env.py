"""The environment a command the model wrote runs with: an allowlist, never the sidecar's own.

The sidecar is started with the user's whole environment — provider keys, ``DATABASE_URL``,
``GH_PAT``, ``SENTRY_DSN`` — and a command the model wrote must see none of it.  A blocklist of
names cannot know every name a secret hides under, so a command gets only:

- **the basics** a shell and its tools need (:data:`BASE_NAMES`: ``PATH``, ``HOME``, the
  user, the shell, the locale, the terminal, the time zone, the temporary directory; Codex's
  ``shell_environment_policy`` "core" set plus the locale), ``LC_*`` and ``XDG_*``;
- **the toolchains' variables** (:data:`TOOLCHAIN_NAMES`, :data:`TOOLCHAIN_PREFIXES`): where a
  virtualenv, a conda env, Go, Rust, Java, Node, Ruby and their caches live, the proxy and the
  CA bundle a corporate network needs — without them ``pytest``, ``cargo`` or ``go test`` in a
  command would not find the toolchain the user's shell finds;
- **what the profile names** (``builtinTools.env``): exact names the user wants a command to
  see.  A name listed there is taken even when it reads like a secret (the user asked for it);

and, for every one of them, two rules:

- a name that :func:`~sidecar.redact.secret_name` flags (KEY, TOKEN, SECRET, PASSWORD,
  PASSWD, CREDENTIAL, AUTH, BEARER) is never taken from a prefix or the lists above —
  ``CARGO_REGISTRY_TOKEN``, ``NPM_CONFIG__AUTH``, ``POETRY_HTTP_BASIC_X_PASSWORD`` stay out;
- a value that looks like a secret (:func:`~sidecar.redact.redact_text` changes it: a URL
  with a password, a token's shape, a long random run) is left out whatever its name, also
  one the profile lists; a path list (``PATH``, ``PYTHONPATH``) is checked entry by entry,
  so a directory called ``keys`` does not cost the command its ``PATH``.

Last, :data:`MARKER` is set (after the filtering): ``CONTEXT_SIDECAR_CALL=<runId>/<callId>``
marks every process of a command, so one left by a sidecar that died is found by its
environment (:mod:`sidecar.tools.leftovers`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sidecar.redact import redact_text, secret_name

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "BASE_NAMES",
    "MARKER",
    "TOOLCHAIN_NAMES",
    "TOOLCHAIN_PREFIXES",
    "command_env",
    "inherited",
]

MARKER = "CONTEXT_SIDECAR_CALL"
"""Carried by every command's environment: ``<runId>/<callId>`` (or ``<pid>/<token>`` for a
call outside a run)."""

BASE_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "USERNAME", "SHELL",
        "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "TERM", "TZ", "NO_COLOR",
    }
)  # fmt: skip
"""What any shell and its tools expect (Codex's "core" set, the locale and the terminal)."""

TOOLCHAIN_NAMES = frozenset(
    {
        # Python
        "VIRTUAL_ENV", "PYTHONPATH", "PYTHONUTF8", "PYTHONIOENCODING",
        # Go
        "GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY",
        "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOSUMDB", "GOTOOLCHAIN", "GOENV",
        "GOEXPERIMENT", "CGO_ENABLED",
        # Rust (CARGO_*, RUSTUP_* below)
        "RUSTFLAGS", "RUST_BACKTRACE", "RUST_LOG",
        # JVM
        "JAVA_HOME", "GRADLE_HOME", "GRADLE_USER_HOME", "MAVEN_HOME", "M2_HOME", "SDKMAN_DIR",
        # Node
        "NODE_PATH", "NODE_EXTRA_CA_CERTS", "VOLTA_HOME", "PNPM_HOME", "BUN_INSTALL",
        "DENO_DIR", "COREPACK_HOME",
        # Ruby, .NET, Android, version managers, Homebrew
        "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "DOTNET_ROOT", "ANDROID_HOME",
        "ANDROID_SDK_ROOT", "ASDF_DIR", "ASDF_DATA_DIR", "HOMEBREW_PREFIX",
        # the network a package manager goes through (a proxy URL with a password is a
        # secret-looking value: left out by the value rule)
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
        "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    }
)  # fmt: skip
"""Where the toolchains a command runs live, and how they reach the network."""

TOOLCHAIN_PREFIXES = (
    "LC_",
    "XDG_",
    "CONDA_",
    "PYENV_",
    "PIP_",
    "UV_",
    "POETRY_",
    "CARGO_",
    "RUSTUP_",
    "NVM_",
    "NPM_CONFIG_",
    "npm_config_",
)
"""Families whose members configure a toolchain (``CONDA_PREFIX``, ``PIP_INDEX_URL``,
``CARGO_TARGET_DIR``): each name still passes the name rule, so their credentials stay out."""

_PATH_LISTS = frozenset({"PATH", "PYTHONPATH", "NODE_PATH", "GEM_PATH", "MANPATH"})


def inherited(name: str) -> bool:
    """Whether a command inherits ``name`` without the profile naming it."""
    listed = name in BASE_NAMES or name in TOOLCHAIN_NAMES
    return (listed or name.startswith(TOOLCHAIN_PREFIXES)) and not secret_name(name)


def _secret_value(name: str, value: str) -> bool:
    parts = value.split(os.pathsep) if name in _PATH_LISTS else [value]
    return any(redact_text(part) != part for part in parts)


def command_env(
    extra: Iterable[str] = (),
    marker: str | None = None,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one command: ``source`` (default: this process's) through the
    allowlist and the value rule, plus the names in ``extra``, plus the marker."""
    env = os.environ if source is None else source
    wanted = set(extra)
    out = {
        name: value
        for name, value in env.items()
        if (name in wanted or inherited(name)) and not _secret_value(name, value)
    }
    if marker is not None:
        out[MARKER] = marker
    return out
