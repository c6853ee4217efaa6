"""The method table: every method of the contract, below the faces that carry it.

For each client-to-server method: its params model (:mod:`protocol.methods`), its handler (one
module per family: :mod:`~sidecar.methods.sessions`, :mod:`~sidecar.methods.context`,
:mod:`~sidecar.methods.inputs`, :mod:`~sidecar.methods.runs`, :mod:`~sidecar.methods.tokens`,
:mod:`~sidecar.methods.server`), the shaping of its result as wire JSON and the mapping of what
it raises to a JSON-RPC error with a dotted ``data.code`` (:mod:`~sidecar.methods.route`,
:mod:`~sidecar.methods.errors`).  :mod:`~sidecar.methods.table` lists them all.

The faces call it and it imports neither: ``sidecar.rpc`` (``serve``: LSP framing over pygls)
registers each bound method as a pygls feature, ``sidecar.acp`` (``acp``) answers its
``_context-sidecar/<method>`` extension requests with the same bound methods.  A third face (an
HTTP or WebSocket transport, a Python library API) would do the same: build a
:class:`~sidecar.methods.state.SidecarState`, :func:`~sidecar.methods.route.bind` the routes,
answer :class:`~sidecar.methods.errors.MethodError` as its transport writes errors.

Nothing is imported here: the early paths of ``serve`` load only what their first requests use.
"""
