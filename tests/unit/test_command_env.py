"""A command's environment is an allowlist (sidecar.tools.command_env): the sidecar's secrets,
whatever their names, never reach a command the model wrote."""

from __future__ import annotations

from sidecar.redact import secret_name
from sidecar.tools.command_env import (
    BASE_NAMES,
    MARKER,
    TOOLCHAIN_NAMES,
    command_env,
    inherited,
)

GITHUB = "ghp_" + "a1B2c3D4e5" * 4


def test_only_the_allowlist_is_inherited() -> None:
    source = {
        # the list: none of these names is flagged by the name rule alone
        "DATABASE_URL": "postgres://u:pw@db.internal/app",
        "GH_PAT": GITHUB,
        "SENTRY_DSN": "https://abc123@o1.ingest.sentry.io/42",
        "PGPASS": "hunter2",
        "MY_APP_PWD": "hunter2",
        "OPENAI_API_KEY": "sk-" + "x" * 40,
        "PLAIN_SETTING": "fine",
        # allowed
        "PATH": "/usr/local/bin:/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "VIRTUAL_ENV": "/home/u/app/.venv",
        "CONDA_PREFIX": "/opt/conda",
        "CARGO_TARGET_DIR": "/tmp/target",
    }
    assert command_env(source=source) == {
        "PATH": "/usr/local/bin:/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "VIRTUAL_ENV": "/home/u/app/.venv",
        "CONDA_PREFIX": "/opt/conda",
        "CARGO_TARGET_DIR": "/tmp/target",
    }


def test_a_prefix_never_brings_in_a_secret_name() -> None:
    source = {
        "CARGO_REGISTRY_TOKEN": "plain",
        "NPM_CONFIG__AUTH": "plain",
        "POETRY_HTTP_BASIC_CORP_PASSWORD": "plain",
        "UV_INDEX_CORP_PASSWORD": "plain",
        "NPM_CONFIG_REGISTRY": "https://registry.npmjs.org/",
    }
    assert command_env(source=source) == {"NPM_CONFIG_REGISTRY": "https://registry.npmjs.org/"}
    # and no name of the lists reads as a secret (the name rule would drop it silently)
    assert not [n for n in BASE_NAMES | TOOLCHAIN_NAMES if secret_name(n)]


def test_credential_names_are_secret_names_everywhere() -> None:
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "MY_CREDENTIAL", "credentials_file"):
        assert secret_name(name), name
    # through a command's environment: allowed families, harmless-looking values, so only
    # the name rule keeps them out
    source = {
        "CARGO_REGISTRY_CREDENTIAL_PROVIDER": "cargo:token",
        "XDG_CREDENTIALS_DIR": "/home/u/.creds",
        "XDG_CACHE_HOME": "/home/u/.cache",
    }
    assert command_env(source=source) == {"XDG_CACHE_HOME": "/home/u/.cache"}
    assert not inherited("GOOGLE_APPLICATION_CREDENTIALS")


def test_values_that_look_like_secrets_are_left_out_whatever_the_name() -> None:
    source = {
        "HTTPS_PROXY": "http://me:s3cret@proxy.corp:3128",
        "HTTP_PROXY": "http://proxy.corp:3128",
        "PIP_INDEX_URL": "https://u:pw@pypi.corp/simple",
        "LANG": GITHUB,  # absurd, and still not passed
        # a path list is checked entry by entry: "monkey:" is not a secret's key
        "PATH": "/opt/monkey/bin:/usr/bin",
    }
    assert command_env(source=source) == {
        "HTTP_PROXY": "http://proxy.corp:3128",
        "PATH": "/opt/monkey/bin:/usr/bin",
    }


def test_names_the_profile_lists_pass_the_name_rule_not_the_value_rule() -> None:
    source = {"GH_TOKEN": "a-plain-value", "GH_PAT": GITHUB, "SSH_AUTH_SOCK": "/run/agent.sock"}
    assert command_env(["GH_TOKEN", "GH_PAT", "SSH_AUTH_SOCK"], source=source) == {
        "GH_TOKEN": "a-plain-value",
        "SSH_AUTH_SOCK": "/run/agent.sock",
    }


def test_the_marker_is_set_after_the_filtering() -> None:
    source = {MARKER: "run_forged/call", "HOME": "/h"}
    assert command_env(source=source) == {"HOME": "/h"}
    assert command_env([MARKER], "run_1/c1", source=source) == {"HOME": "/h", MARKER: "run_1/c1"}
