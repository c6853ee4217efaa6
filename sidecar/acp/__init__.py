"""The ACP face: ``context-sidecar acp`` speaks the Agent Client Protocol (version 1) on
stdin/stdout, over the same store, context pipeline and runs as ``serve``.

- :mod:`.framing`: newline-delimited JSON-RPC, hostile input answered, stdout kept clean;
- :mod:`.agent`: ACP's methods → sessions and runs;
- :mod:`.mapping`: what is mapped to what (prompts, run events, history, stop reasons);
- :mod:`.bridge`: the runs' view of the connection;
- :mod:`.tools`: read_file / write_file / edit_file / run_command through the editor (fs,
  terminal), confined to the session's roots;
- :mod:`.approvals`: the session's approval mode, "always allow", ``session/request_permission``;
- :mod:`.config`: the session's settings (model, approval mode) as config options and modes;
- :mod:`.plan`: ``update_plan``, shown as ACP ``plan`` updates;
- :mod:`.mcp_servers`: the session's stdio MCP servers (official ``mcp`` SDK), their tools
  offered as ``<server>__<tool>``;
- :mod:`.commands` (and :mod:`.dashboard`, their markdown): ``/context``, ``/compact``,
  ``/pin``, ``/snapshot``;
- :mod:`.usage`: ``usage_update`` from the run's events;
- :mod:`.extensions`: ``serve``'s protocol as ``_context-sidecar/<method>``;
- :mod:`.serve`: the process (store, task group, the SDK's connection).

ACP types (the official ``agent-client-protocol`` SDK's schema models) stay in this package:
``sidecar/store``, ``sidecar/context``, ``sidecar/inputs`` and ``sidecar/runs`` know nothing
of them (``tests/unit/test_layers.py`` reads the imports to hold the core to that).
"""

from __future__ import annotations

__all__: list[str] = []
