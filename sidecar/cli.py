"""``context-sidecar serve | acp | call | demo | inspect | import | replay | gc``.

- ``serve``: the sidecar itself, JSON-RPC over stdio (what editors start).
- ``acp``: the same core as an Agent Client Protocol agent (what ACP editors start).
- ``call METHOD [JSON]``: one request against a fresh sidecar, result printed as JSON —
  a curl for the protocol.
- ``demo``: a real end-to-end scenario through a real sidecar process, printed readably.
- ``import FILE``: an agent's session log (Claude Code, Codex, pi, OpenCode) into a session
  (:mod:`sidecar.transcripts.importing`).
- ``replay FILE``: a recorded agent session replayed, priced beside what the agent paid
  (:mod:`sidecar.transcripts.replay_command`).

The CLI writes to stdout with ``sys.stdout.write`` (``call`` and ``demo`` are clients, so
their stdout is theirs); ``serve`` never writes to stdout outside the protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from sidecar import __version__
from sidecar.defaults import DEFAULT_MAX_MESSAGE_BYTES, STORE_ENV, TRACE_ENV, default_store_root
from sidecar.logs import setup_logging

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="context-sidecar",
        description="The context sidecar: session store and context pipeline over JSON-RPC.",
    )
    parser.add_argument("--version", action="version", version=f"context-sidecar {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def store_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--store",
            type=Path,
            default=None,
            help=f"store root (default: ${STORE_ENV} or $XDG_STATE_HOME/context-sidecar)",
        )

    serve = sub.add_parser("serve", help="serve JSON-RPC on stdin/stdout (LSP framing)")
    store_arg(serve)
    serve.add_argument("--log-file", type=Path, default=None, help="log here instead of stderr")
    serve.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug")
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="largest JSON-RPC body accepted (default %(default)s)",
    )
    serve.add_argument(
        "--trace",
        type=Path,
        default=None,
        help=f"append every frame to this JSONL file (also ${TRACE_ENV})",
    )

    acp = sub.add_parser(
        "acp", help="speak the Agent Client Protocol on stdin/stdout (Zed, JetBrains, ...)"
    )
    store_arg(acp)
    acp.add_argument(
        "--profile",
        default=None,
        metavar="ID|FILE",
        help="the model binding: a stored profile's id or a profile JSON file",
    )
    acp.add_argument(
        "--script",
        type=Path,
        default=None,
        help="play this JSON script with the scripted model (tests, demos)",
    )
    acp.add_argument("--log-file", type=Path, default=None, help="log here instead of stderr")
    acp.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug")
    acp.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="longest line accepted (default %(default)s)",
    )

    call = sub.add_parser("call", help="send one request to a fresh sidecar, print the result")
    store_arg(call)
    call.add_argument("method", help="e.g. session/list")
    call.add_argument("params", nargs="?", default="{}", help="params as JSON (default {})")

    demo = sub.add_parser("demo", help="run the end-to-end demo scenario")
    store_arg(demo)

    inspect = sub.add_parser("inspect", help="show a snapshot's dashboard, ledger and diff")
    store_arg(inspect)
    inspect.add_argument("snapshot", help="snapshot id")
    inspect.add_argument("--against", default=None, help="diff against this snapshot id")

    imp = sub.add_parser("import", help="read an agent's session log into a new session")
    store_arg(imp)
    imp.add_argument("file", type=Path, help="a Claude Code, Codex, pi or OpenCode log")
    imp.add_argument(
        "--format",
        choices=("claude-code", "codex", "pi", "opencode"),
        default=None,
        help="the log's format (default: told from its content)",
    )
    imp.add_argument("--json", action="store_true", help="print the report as JSON")
    imp.add_argument(
        "--session-id", default=None, help="append to this existing session instead of a new one"
    )

    from sidecar.transcripts.replay_command import add_replay_parser

    add_replay_parser(sub)

    gc = sub.add_parser("gc", help="collect blobs nothing refers to (see store/gc)")
    store_arg(gc)
    gc.add_argument("--keep-recent", type=int, default=20)
    gc.add_argument("--grace-seconds", type=int, default=3600)
    gc.add_argument("--dry-run", action="store_true")
    return parser


def _exit_now(code: int) -> NoReturn:
    """End the serving process as soon as its work is done (:func:`sidecar.exiting.exit_now`:
    by now the store is closed and the transport has written its last frame; what is left is
    the interpreter's teardown and threads nobody waits for, and the tools' children, killed)."""
    from sidecar.exiting import exit_now

    exit_now(code)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from sidecar.rpc.serve import ServeOptions, serve_stdio

        setup_logging(args.verbose, args.log_file)
        trace = args.trace or (Path(os.environ[TRACE_ENV]) if os.environ.get(TRACE_ENV) else None)
        code = serve_stdio(
            ServeOptions(
                store=args.store or default_store_root(),
                max_message_bytes=args.max_message_bytes,
                trace=trace,
            )
        )
        _exit_now(code)
    if args.command == "acp":
        from sidecar.acp.serve import AcpOptions, serve_acp

        setup_logging(args.verbose, args.log_file)
        code = serve_acp(
            AcpOptions(
                store=args.store or default_store_root(),
                profile=args.profile,
                script=args.script,
                max_line_bytes=args.max_message_bytes,
            )
        )
        _exit_now(code)
    setup_logging(0)
    import asyncio

    if args.command == "call":
        return asyncio.run(_call(args.store, args.method, args.params))
    if args.command == "demo":
        from sidecar.demo import run_demo

        return asyncio.run(run_demo(args.store, sys.stdout))
    if args.command == "inspect":
        from sidecar.errors import SidecarError
        from sidecar.inspect import render_snapshot
        from sidecar.store import Store

        store = Store(args.store or default_store_root(), read_only=True)
        try:
            render_snapshot(store, args.snapshot, sys.stdout, against=args.against)
        except SidecarError as exc:
            sys.stderr.write(f"{exc.code}: {exc.message}\n")
            return 1
        finally:
            store.close()
        return 0
    if args.command == "import":
        from sidecar.transcripts.importing import import_command

        return asyncio.run(
            import_command(args.file, args.format, args.store, args.json, args.session_id)
        )
    if args.command == "replay":
        from sidecar.transcripts.replay_command import run_replay

        return run_replay(args)
    if args.command == "gc":
        return asyncio.run(
            _call(
                args.store,
                "store/gc",
                json.dumps(
                    {
                        "keepRecent": args.keep_recent,
                        "graceSeconds": args.grace_seconds,
                        "dryRun": args.dry_run,
                    }
                ),
            )
        )
    return 2


async def _call(store: Path | None, method: str, params_text: str) -> int:
    from sidecar.client import RpcError, SidecarClient

    try:
        params = json.loads(params_text)
    except ValueError as exc:
        sys.stderr.write(f"params are not valid JSON: {exc}\n")
        return 2
    client = await SidecarClient.spawn(store=store)
    try:
        result = await client.request(method, params)
    except RpcError as exc:
        error = {"code": exc.code, "message": exc.message, "data": exc.data}
        sys.stderr.write(json.dumps({"error": error}, indent=2, ensure_ascii=False) + "\n")
        return 1
    finally:
        await client.close()
    sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return 0
