"""What looks like a secret on a command line is ``***`` in what the sidecar writes; the rest
of the command line is kept, so a message still says what was run (sidecar.redact)."""

from __future__ import annotations

import pytest

from sidecar.redact import env_names, redact_args, redact_command, redact_text, secret_name
from sidecar.tools.command_env import command_env

OPENAI = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
ANTHROPIC = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
SLACK = "xoxb-1234567890-0987654321-AbCdEfGhIjKl"
HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
B64 = "dGhpcyBpcyBhIHNlY3JldCB0b2tlbiBvZiA0OCBjaGFycw=="
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--token", "abc"], ["--token", "***"]),
        (["--api-key", "plainvalue"], ["--api-key", "***"]),
        (["--password", "hunter2"], ["--password", "***"]),
        (["-p", "8080", "--secret", "x"], ["-p", "8080", "--secret", "***"]),
        (["--token=abc"], ["--token=***"]),
        (["--api_key=abc", "API_KEY=abc"], ["--api_key=***", "API_KEY=***"]),
        (["GITHUB_PERSONAL_ACCESS_TOKEN=abc"], ["GITHUB_PERSONAL_ACCESS_TOKEN=***"]),
        ([OPENAI], ["***"]),
        ([ANTHROPIC], ["***"]),
        ([GITHUB], ["***"]),
        ([SLACK], ["***"]),
        ([HEX], ["***"]),
        ([B64], ["***"]),
        ([JWT], ["***"]),
        (["--header", f"Authorization: Bearer {GITHUB}"], ["--header", "Authorization: ***"]),
        (["postgres://admin:hunter2@db:5432/app"], ["postgres://admin:***@db:5432/app"]),
        (
            ["https://api.example.com/v1?api_key=abc&page=2"],
            ["https://api.example.com/v1?api_key=***&page=2"],
        ),
        # a flag that takes no value does not hide the next flag
        (["--token", "--verbose"], ["--token", "--verbose"]),
    ],
)
def test_secrets_in_args_are_masked(args: list[str], shown: list[str]) -> None:
    assert redact_args(args) == shown


@pytest.mark.parametrize(
    "arg",
    [
        "/home/me/Projects2024/mcp-servers/filesystem/dist/index.js",
        "@modelcontextprotocol/server-filesystem",
        "--stdio",
        "--port=8080",
        "-y",
        "/tmp/pytest-of-root/pytest-43/test_a_token_in_args_or_env_is0/no-such-mcp-server",
        "some_long_identifier_without_any_digits_at_all",
        "2024-01-01",
    ],
)
def test_ordinary_args_are_kept(arg: str) -> None:
    assert redact_args([arg]) == [arg]


def test_the_command_line_keeps_what_was_run() -> None:
    assert (
        redact_command("npx", ["-y", "@acme/mcp", "--token", OPENAI, "--root", "/srv"])
        == "npx -y @acme/mcp --token *** --root /srv"
    )


def test_text_loses_every_token_shape() -> None:
    text = f"failed: {OPENAI} and {GITHUB} (token={HEX}); url https://u:pw@h/x"
    out = redact_text(text)
    for secret in (OPENAI, GITHUB, HEX, ":pw@"):
        assert secret not in out
    assert out.startswith("failed: *** and ***")


def test_env_is_shown_by_names_only() -> None:
    assert env_names({"GITHUB_TOKEN": GITHUB, "DEBUG": "1"}) == "DEBUG, GITHUB_TOKEN"
    assert env_names(None) == env_names({}) == "none"


def test_one_rule_for_secret_names_also_scrubs_a_commands_environment() -> None:
    env = {"OPENAI_API_KEY": "k", "GH_TOKEN": "t", "DB_PASSWORD": "p", "HOME": "/h", "PATH": "/b"}
    # the allowlist keeps only HOME and PATH; the name rule keeps toolchain-prefixed secrets out
    env |= {"CARGO_REGISTRY_TOKEN": "t", "CARGO_TARGET_DIR": "/t"}
    assert command_env(source=env) == {"HOME": "/h", "PATH": "/b", "CARGO_TARGET_DIR": "/t"}
    assert all(secret_name(n) for n in ("OPENAI_API_KEY", "GH_TOKEN", "api-key", "Bearer"))
    assert not any(secret_name(n) for n in ("HOME", "PATH", "port", "root"))
