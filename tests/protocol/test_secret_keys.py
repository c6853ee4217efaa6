"""Which parameter names count as credentials (refused in connections and presets, redacted
from traces) — and which generation parameters must not be mistaken for one."""

from __future__ import annotations

import pytest

from protocol.inputs import SECRET_KEY

CREDENTIALS = [
    "api_key",
    "apiKey",
    "x-api-key",
    "token",
    "access_token",
    "accessToken",
    "authToken",
    "refresh_token",
    "client_secret",
    "password",
    "Authorization",
    "bearer",
    "connectionRef",
]
PARAMETERS = [
    "max_tokens",
    "maxTokens",
    "max_completion_tokens",
    "max_output_tokens",
    "maxOutputTokens",
    "budget_tokens",
    "tokenizer",
    "token_count",
    "temperature",
    "top_p",
]


#: LSP fields with "token" in their name that carry no credential (progress tokens, the
#: semantic-token legend): a trace must keep them.
LSP_FIELDS = ["workDoneToken", "partialResultToken", "tokenTypes", "tokenModifiers"]


@pytest.mark.parametrize("name", LSP_FIELDS)
def test_lsp_fields_are_not_credentials(name: str) -> None:
    assert not SECRET_KEY.search(name)


@pytest.mark.parametrize("name", CREDENTIALS)
def test_credential_names_are_recognised(name: str) -> None:
    assert SECRET_KEY.search(name)


@pytest.mark.parametrize("name", PARAMETERS)
def test_generation_parameters_are_not_credentials(name: str) -> None:
    assert not SECRET_KEY.search(name)


def test_a_connection_with_max_tokens_is_accepted_and_one_with_a_key_refused() -> None:
    from pydantic import ValidationError

    from protocol._base import parse_wire
    from protocol.inputs import ModelConnection

    ok = parse_wire(ModelConnection, {"parameters": {"max_tokens": 1024, "temperature": 0}})
    assert ok.parameters == {"max_tokens": 1024, "temperature": 0}
    with pytest.raises(ValidationError, match="credentials are not accepted"):
        parse_wire(ModelConnection, {"parameters": {"headers": {"x-api-key": "sk-1"}}})
