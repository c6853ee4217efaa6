"""``input/*``, ``snapshot/*``, ``blob/read``, ``profile/*``, ``preset/*``, ``store/gc``."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from protocol import methods as m
from protocol._base import dump_wire
from protocol.errors import ErrorCode
from protocol.snapshots import (
    BlobReadParams,
    BlobReadResult,
    DeleteResult,
    DocumentRef,
    Preset,
    PresetInput,
    PresetList,
    Profile,
    ProfileInput,
    ProfileList,
    SnapshotAssembleParams,
    SnapshotDiffParams,
    SnapshotGetParams,
    SnapshotLowerParams,
    StoreGcParams,
    StoreGcResult,
)
from sidecar.aio import in_cpu_lane, in_thread
from sidecar.checkpoints import checkpoints_of
from sidecar.context.assemble import assemble_with_json
from sidecar.context.cache_accounting import request_shape
from sidecar.errors import NotFoundError
from sidecar.inputs.loading import load_frozen_input, load_profile
from sidecar.inputs.profiles import resolve
from sidecar.inputs.snapshots import (
    EncodedSnapshot,
    diff_snapshots,
    encode_snapshot,
    load_snapshot,
    profile_hash,
)
from sidecar.jsonbytes import dumps_bytes
from sidecar.methods.route import route
from sidecar.store.gc import collect

if TYPE_CHECKING:
    from protocol.inputs import FrozenInput, InputFreezeParams, InputGetParams
    from sidecar.context.capture import Material
    from sidecar.methods.state import SidecarState

__all__ = ["ROUTES"]


def _load_input(state: SidecarState, input_id: str) -> FrozenInput:
    return load_frozen_input(state.store, input_id)


async def freeze(state: SidecarState, p: InputFreezeParams) -> dict[str, Any]:
    state.store.require_writable()

    def work() -> tuple[dict[str, Any], bytes, list[dict[str, Any]], Material]:
        captured = state.context.capture(p, persist=True)
        body = dump_wire(captured.frozen)
        return body, dumps_bytes(body), captured.diagnostics, captured.material

    body, data, diagnostics, material = await in_cpu_lane(work)
    input_id = await in_thread(material.store_input, data)  # waits: not in the lane
    return {"inputId": input_id, "input": body, "diagnostics": diagnostics}


async def get_input(state: SidecarState, p: InputGetParams) -> FrozenInput:
    return await anyio.to_thread.run_sync(_load_input, state, p.input_id)


async def snapshot_assemble(state: SidecarState, p: SnapshotAssembleParams) -> dict[str, Any]:
    state.store.require_writable()

    def work() -> tuple[dict[str, Any], EncodedSnapshot, bool]:
        frozen = _load_input(state, p.input_id)
        if frozen.session_id != p.session_id:
            raise NotFoundError(
                ErrorCode.INPUT_NOT_FOUND,
                f"input {p.input_id} belongs to another session",
                details={"inputId": p.input_id, "sessionId": p.session_id},
            )
        profile, preset = load_profile(state.store, p.profile_id, p.profile)
        profile_id = p.profile_id if p.profile is None else None
        effective = resolve(profile, preset, frozen)
        from sidecar.context.build import build_inputs
        from sidecar.context.capture import Material

        built = build_inputs(
            state.store.sessions,
            state.context.tokenizers,
            frozen,
            Material(state.store, persist=False),
            effective.profile,
            seed=p.input_id,
            agent_prompt=effective.agent_prompt,
            components=effective.components,
            parameters=effective.parameters,
        )
        index = state.store.snapshot_index.read(p.session_id)
        previous = index[-1]["snapshotId"] if index else None
        before = load_snapshot(state.store.blobs, previous) if previous else None
        # the cache is planned against the session's previous snapshot: the request before
        built.inputs.previous = request_shape(before) if before is not None else None
        result, messages_json, shape, _ = assemble_with_json(built.inputs)
        cache = result.pop("cache")  # how it relates to the previous one: not the snapshot's
        snapshot = {
            **result,
            "inputId": p.input_id,
            "sessionId": p.session_id,
            **({"profileId": profile_id} if profile_id else {}),
            "profileHash": profile_hash(dump_wire(effective.profile)),
            "parameters": built.parameters,
            "unknownMacros": built.unknown_macros,
            "items": [dump_wire(i) for i in (*frozen.attachments, *frozen.pinned_files)],
        }
        encoded = encode_snapshot(state.store.blobs, snapshot, messages_json=messages_json)
        snapshot_id = encoded.snapshot_id
        snapshot["snapshotId"] = snapshot_id
        state.context.remember_request(p.session_id, shape)  # the snapshot's prompt
        if before is not None and previous == snapshot_id:
            older = index[-2]["snapshotId"] if len(index) > 1 else None
            before = load_snapshot(state.store.blobs, older) if older else None
        diff = diff_snapshots(before, snapshot)
        return (
            {
                "snapshotId": snapshot_id,
                "inputId": p.input_id,
                "dashboard": result["dashboard"],
                "compaction": result["compaction"],
                "diff": diff,
                "unknownMacros": built.unknown_macros,
                "cache": cache,
            },
            encoded,
            previous != snapshot_id,
        )

    answer, encoded, new = await in_cpu_lane(work)
    snapshot_id = await in_thread(encoded.put, state.store.blobs)  # waits: not in the lane
    if new:
        await state.store.snapshot_index.record(p.session_id, snapshot_id, p.input_id)
    return answer


async def snapshot_get(state: SidecarState, p: SnapshotGetParams) -> dict[str, Any]:
    from sidecar.methods.checkpoints import turn_checkpoint_of

    def work() -> dict[str, Any]:
        snapshot = load_snapshot(state.store.blobs, p.snapshot_id)
        checkpoint = turn_checkpoint_of(state, snapshot["sessionId"], snapshot["inputId"])
        return snapshot | {"checkpointId": checkpoint} if checkpoint else snapshot

    return await anyio.to_thread.run_sync(work)


async def snapshot_lower(state: SidecarState, p: SnapshotLowerParams) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        from sidecar.context.service import lower_result  # with its first use, not at start-up

        snapshot = load_snapshot(state.store.blobs, p.snapshot_id)
        body = lower_result(snapshot, p.target, state.store.blobs.get, snapshot["sessionId"])
        for key, value in snapshot.get("parameters", {}).items():
            body.setdefault(key, value)
        return {"snapshotId": p.snapshot_id, "target": p.target, "body": body}

    return await in_cpu_lane(work)


async def snapshot_diff(state: SidecarState, p: SnapshotDiffParams) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        after = load_snapshot(state.store.blobs, p.to)
        before_id = p.from_
        if before_id is None:
            index = [e["snapshotId"] for e in state.store.snapshot_index.read(after["sessionId"])]
            position = index.index(p.to) if p.to in index else len(index)
            before_id = index[position - 1] if position > 0 else None
        before = load_snapshot(state.store.blobs, before_id) if before_id else None
        return diff_snapshots(before, after)

    return await in_cpu_lane(work)


async def blob_read(state: SidecarState, p: BlobReadParams) -> BlobReadResult:
    data = await anyio.to_thread.run_sync(state.store.blobs.get, p.blob)
    start = min(p.offset, len(data))
    end = min(start + p.length, len(data))
    if p.encoding == "utf-8":
        while start > 0 and start < len(data) and data[start] & 0xC0 == 0x80:
            start -= 1  # widen to whole characters
        while end < len(data) and data[end] & 0xC0 == 0x80:
            end += 1
        text = data[start:end].decode("utf-8", errors="replace")
    else:
        text = base64.b64encode(data[start:end]).decode("ascii")
    return BlobReadResult(
        blob=p.blob,
        size=len(data),
        offset=start,
        length=end - start,
        data=text,
        encoding=p.encoding,
        eof=end >= len(data),
    )


def _documents(kind: str) -> tuple[Any, ...]:
    if kind == "profile":
        return ("profiles", "profileId", Profile, ProfileInput)
    return ("presets", "presetId", Preset, PresetInput)


def _crud(kind: str) -> dict[str, Any]:
    attr, key, model, _ = _documents(kind)

    async def create(state: SidecarState, p: Any) -> Any:
        state.store.require_writable()
        return model.model_validate(
            getattr(state.store, attr).create(dump_wire(p), key), by_alias=True
        )

    async def get(state: SidecarState, p: DocumentRef) -> Any:
        return model.model_validate(getattr(state.store, attr).get(p.id), by_alias=True)

    async def update(state: SidecarState, p: Any) -> Any:
        state.store.require_writable()
        body = dump_wire(getattr(p, kind))
        return model.model_validate(getattr(state.store, attr).put(p.id, body, key), by_alias=True)

    async def delete(state: SidecarState, p: DocumentRef) -> DeleteResult:
        state.store.require_writable()
        getattr(state.store, attr).delete(p.id)
        return DeleteResult(id=p.id, deleted=True)

    async def list_(state: SidecarState, _: Any) -> Any:
        docs = [model.model_validate(d, by_alias=True) for d in getattr(state.store, attr).list()]
        return ProfileList(profiles=docs) if kind == "profile" else PresetList(presets=docs)

    return {"create": create, "get": get, "update": update, "delete": delete, "list": list_}


async def gc(state: SidecarState, p: StoreGcParams) -> StoreGcResult:
    if not p.dry_run:
        state.store.require_writable()
    return await anyio.to_thread.run_sync(
        lambda: collect(
            state.store,
            keep_recent=p.keep_recent,
            grace_seconds=p.grace_seconds,
            dry_run=p.dry_run,
            also_keep=checkpoints_of(state.store),
        )
    )


_PROFILE = _crud("profile")
_PRESET = _crud("preset")

ROUTES = (
    route(m.INPUT_FREEZE, freeze),
    route(m.INPUT_GET, get_input),
    route(m.SNAPSHOT_ASSEMBLE, snapshot_assemble),
    route(m.SNAPSHOT_GET, snapshot_get),
    route(m.SNAPSHOT_LOWER, snapshot_lower),
    route(m.SNAPSHOT_DIFF, snapshot_diff),
    route(m.BLOB_READ, blob_read),
    route(m.PROFILE_CREATE, _PROFILE["create"]),
    route(m.PROFILE_GET, _PROFILE["get"]),
    route(m.PROFILE_LIST, _PROFILE["list"]),
    route(m.PROFILE_UPDATE, _PROFILE["update"]),
    route(m.PROFILE_DELETE, _PROFILE["delete"]),
    route(m.PRESET_CREATE, _PRESET["create"]),
    route(m.PRESET_GET, _PRESET["get"]),
    route(m.PRESET_LIST, _PRESET["list"]),
    route(m.PRESET_UPDATE, _PRESET["update"]),
    route(m.PRESET_DELETE, _PRESET["delete"]),
    route(m.STORE_GC, gc),
)
