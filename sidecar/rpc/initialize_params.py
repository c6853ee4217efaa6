"""``initialize`` params as raw-JSON hosts send them, checked like any method's.

LSP marks ``processId`` as required-but-nullable; hosts that are not LSP clients (Tauri,
Electron, scripts) leave it out, and every other optional field too.  pygls structures
``InitializeParams`` with lsprotocol's converter, which refuses a missing ``processId`` with a
bare -32602.  So the edge checks the fields the sidecar and pygls read, answers a bad
``initialize`` with ``params.invalid`` and ``errors[]`` as every other method does, and fills
in what may be missing before pygls sees the message.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from sidecar.methods import errors

__all__ = ["check_initialize_params"]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class _ClientInfo(_Lenient):
    name: StrictStr
    version: StrictStr | None = None


class _WorkspaceFolder(_Lenient):
    uri: StrictStr
    name: StrictStr


class _InitializeParams(_Lenient):
    """What ``initialize`` must carry: ``capabilities`` (an object, ``[]`` from Neovim's
    ``vim.json`` included); everything else may be missing or ``null``."""

    capabilities: dict[str, Any] | list[Any]
    processId: StrictInt | None = None
    clientInfo: _ClientInfo | None = None
    locale: StrictStr | None = None
    rootPath: StrictStr | None = None
    rootUri: StrictStr | None = None
    trace: Literal["off", "messages", "verbose"] | None = None
    workspaceFolders: list[_WorkspaceFolder] | None = None


def check_initialize_params(params: object) -> dict[str, Any]:
    """``params`` with what LSP requires filled in, or a ``params.invalid`` error raised.

    A missing ``processId`` becomes ``null`` (the client's process is then not watched); an
    empty array stands for an empty object (Neovim's ``vim.json``).
    """
    if params is None or params == []:
        params = {}
    try:
        _InitializeParams.model_validate(params)
    except ValidationError as exc:
        raise errors.from_validation(exc, "initialize") from None
    assert isinstance(params, dict)  # validated as a model
    filled = dict(params)
    filled.setdefault("processId", None)
    if filled["capabilities"] == []:
        filled["capabilities"] = {}
    return filled
