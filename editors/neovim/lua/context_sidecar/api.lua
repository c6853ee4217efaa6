--- One function per client -> server method of the context-sidecar protocol, typed with the
--- generated LuaCATS annotations (protocol/lua/context_sidecar/types.lua).
---
--- Each function takes the method's params and an optional callback(err, result).  With a
--- callback it returns at once; without one it blocks (vim.wait) and returns result, err.
--- Written from the ClientRequests table of types.lua; keep in step with it.
local M = {}

---@param method context_sidecar.ClientRequestMethod
---@param params table?
---@param callback? fun(err: table?, result: any)
---@return any result
---@return table? err
local function call(method, params, callback)
  local client = require("context_sidecar").client()
  if not client then
    local err = { code = -32099, message = "context-sidecar is not started (:ContextSidecar start)" }
    if callback then
      callback(err, nil)
      return nil, err
    end
    return nil, err
  end
  if callback then
    client:request(method, params or vim.empty_dict(), callback)
    return nil, nil
  end
  return client:request_sync(method, params or vim.empty_dict())
end

--- `session/create`: Create an empty session.
---@param params context_sidecar.SessionCreateParams
---@param callback? fun(err: table?, result: context_sidecar.Session?)
---@return context_sidecar.Session? result
---@return table? err
function M.session_create(params, callback)
  return call("session/create", params, callback)
end

--- `session/list`: List sessions, newest first, by cursor.
---@param params context_sidecar.SessionListParams
---@param callback? fun(err: table?, result: context_sidecar.SessionListResult?)
---@return context_sidecar.SessionListResult? result
---@return table? err
function M.session_list(params, callback)
  return call("session/list", params, callback)
end

--- `session/get`: Get one session's metadata.
---@param params context_sidecar.SessionRef
---@param callback? fun(err: table?, result: context_sidecar.Session?)
---@return context_sidecar.Session? result
---@return table? err
function M.session_get(params, callback)
  return call("session/get", params, callback)
end

--- `session/append`: Append entries durably; optional optimistic check of the head seq.
---@param params context_sidecar.SessionAppendParams
---@param callback? fun(err: table?, result: context_sidecar.SessionAppendResult?)
---@return context_sidecar.SessionAppendResult? result
---@return table? err
function M.session_append(params, callback)
  return call("session/append", params, callback)
end

--- `session/read`: Read a page of history by seq.
---@param params context_sidecar.SessionReadParams
---@param callback? fun(err: table?, result: context_sidecar.SessionReadResult?)
---@return context_sidecar.SessionReadResult? result
---@return table? err
function M.session_read(params, callback)
  return call("session/read", params, callback)
end

--- `session/fork`: Copy a session's history up to a seq into a new session.
---@param params context_sidecar.SessionForkParams
---@param callback? fun(err: table?, result: context_sidecar.Session?)
---@return context_sidecar.Session? result
---@return table? err
function M.session_fork(params, callback)
  return call("session/fork", params, callback)
end

--- `session/rename`: Retitle a session.
---@param params context_sidecar.SessionRenameParams
---@param callback? fun(err: table?, result: context_sidecar.Session?)
---@return context_sidecar.Session? result
---@return table? err
function M.session_rename(params, callback)
  return call("session/rename", params, callback)
end

--- `session/delete`: Move a session to the store's trash; `session.busy` (retryable) while a run is active on it.
---@param params context_sidecar.SessionRef
---@param callback? fun(err: table?, result: context_sidecar.SessionDeleteResult?)
---@return context_sidecar.SessionDeleteResult? result
---@return table? err
function M.session_delete(params, callback)
  return call("session/delete", params, callback)
end

--- `session/pin`: Pin an item into the prompt.
---@param params context_sidecar.SessionControlParams
---@param callback? fun(err: table?, result: context_sidecar.SessionAppendResult?)
---@return context_sidecar.SessionAppendResult? result
---@return table? err
function M.session_pin(params, callback)
  return call("session/pin", params, callback)
end

--- `session/unpin`: Undo a pin.
---@param params context_sidecar.SessionControlParams
---@param callback? fun(err: table?, result: context_sidecar.SessionAppendResult?)
---@return context_sidecar.SessionAppendResult? result
---@return table? err
function M.session_unpin(params, callback)
  return call("session/unpin", params, callback)
end

--- `session/drop`: Keep an item out of the prompt.
---@param params context_sidecar.SessionControlParams
---@param callback? fun(err: table?, result: context_sidecar.SessionAppendResult?)
---@return context_sidecar.SessionAppendResult? result
---@return table? err
function M.session_drop(params, callback)
  return call("session/drop", params, callback)
end

--- `session/recover`: Undo a drop.
---@param params context_sidecar.SessionControlParams
---@param callback? fun(err: table?, result: context_sidecar.SessionAppendResult?)
---@return context_sidecar.SessionAppendResult? result
---@return table? err
function M.session_recover(params, callback)
  return call("session/recover", params, callback)
end

--- `session/compact`: Record a compaction: a summary standing for history up to a seq (nothing is deleted).
---@param params context_sidecar.SessionCompactParams
---@param callback? fun(err: table?, result: context_sidecar.SessionAppendResult?)
---@return context_sidecar.SessionAppendResult? result
---@return table? err
function M.session_compact(params, callback)
  return call("session/compact", params, callback)
end

--- `context/sources`: Instruction files and skills found for a session, with diagnostics.
---@param params context_sidecar.ContextSourcesParams
---@param callback? fun(err: table?, result: context_sidecar.ContextSourcesResult?)
---@return context_sidecar.ContextSourcesResult? result
---@return table? err
function M.context_sources(params, callback)
  return call("context/sources", params, callback)
end

--- `context/assemble`: What exactly the model would see for this turn, and why; optionally lowered.
---@param params context_sidecar.ContextAssembleParams
---@param callback? fun(err: table?, result: context_sidecar.ContextAssembleResult?)
---@return context_sidecar.ContextAssembleResult? result
---@return table? err
function M.context_assemble(params, callback)
  return call("context/assemble", params, callback)
end

--- `context/registerSource`: Register a host source (RAG results, editor state) for a session's assemblies.
---@param params context_sidecar.RegisterSourceParams
---@param callback? fun(err: table?, result: context_sidecar.SourceRegistration?)
---@return context_sidecar.SourceRegistration? result
---@return table? err
function M.context_register_source(params, callback)
  return call("context/registerSource", params, callback)
end

--- `context/unregisterSource`: Remove a registered host source.
---@param params context_sidecar.HostSourceRef
---@param callback? fun(err: table?, result: context_sidecar.SourceRegistration?)
---@return context_sidecar.SourceRegistration? result
---@return table? err
function M.context_unregister_source(params, callback)
  return call("context/unregisterSource", params, callback)
end

--- `skills/list`: Skills available to a session.
---@param params context_sidecar.SkillsListParams
---@param callback? fun(err: table?, result: context_sidecar.SkillsListResult?)
---@return context_sidecar.SkillsListResult? result
---@return table? err
function M.skills_list(params, callback)
  return call("skills/list", params, callback)
end

--- `skills/activate`: Load a skill's body and references; records a skillActivated entry.
---@param params context_sidecar.SkillsActivateParams
---@param callback? fun(err: table?, result: context_sidecar.SkillsActivateResult?)
---@return context_sidecar.SkillsActivateResult? result
---@return table? err
function M.skills_activate(params, callback)
  return call("skills/activate", params, callback)
end

--- `input/freeze`: Capture everything a turn depends on, once; content-addressed (same inputs, same id).
---@param params context_sidecar.InputFreezeParams
---@param callback? fun(err: table?, result: context_sidecar.InputFreezeResult?)
---@return context_sidecar.InputFreezeResult? result
---@return table? err
function M.input_freeze(params, callback)
  return call("input/freeze", params, callback)
end

--- `input/get`: Read a frozen input back.
---@param params context_sidecar.InputGetParams
---@param callback? fun(err: table?, result: context_sidecar.FrozenInput?)
---@return context_sidecar.FrozenInput? result
---@return table? err
function M.input_get(params, callback)
  return call("input/get", params, callback)
end

--- `snapshot/assemble`: Assemble a frozen input with a profile into a stored, content-addressed snapshot.
---@param params context_sidecar.SnapshotAssembleParams
---@param callback? fun(err: table?, result: context_sidecar.SnapshotAssembleResult?)
---@return context_sidecar.SnapshotAssembleResult? result
---@return table? err
function M.snapshot_assemble(params, callback)
  return call("snapshot/assemble", params, callback)
end

--- `snapshot/get`: Read a snapshot.
---@param params context_sidecar.SnapshotGetParams
---@param callback? fun(err: table?, result: context_sidecar.PromptSnapshot?)
---@return context_sidecar.PromptSnapshot? result
---@return table? err
function M.snapshot_get(params, callback)
  return call("snapshot/get", params, callback)
end

--- `snapshot/lower`: A snapshot as a provider body.
---@param params context_sidecar.SnapshotLowerParams
---@param callback? fun(err: table?, result: context_sidecar.SnapshotLowerResult?)
---@return context_sidecar.SnapshotLowerResult? result
---@return table? err
function M.snapshot_lower(params, callback)
  return call("snapshot/lower", params, callback)
end

--- `snapshot/diff`: What changed between two snapshots, and the identical prefix (predicted cache hit).
---@param params context_sidecar.SnapshotDiffParams
---@param callback? fun(err: table?, result: context_sidecar.SnapshotDiff?)
---@return context_sidecar.SnapshotDiff? result
---@return table? err
function M.snapshot_diff(params, callback)
  return call("snapshot/diff", params, callback)
end

--- `blob/read`: Read a range of a blob.
---@param params context_sidecar.BlobReadParams
---@param callback? fun(err: table?, result: context_sidecar.BlobReadResult?)
---@return context_sidecar.BlobReadResult? result
---@return table? err
function M.blob_read(params, callback)
  return call("blob/read", params, callback)
end

--- `profile/create`: Store a profile.
---@param params context_sidecar.ProfileInput
---@param callback? fun(err: table?, result: context_sidecar.Profile?)
---@return context_sidecar.Profile? result
---@return table? err
function M.profile_create(params, callback)
  return call("profile/create", params, callback)
end

--- `profile/get`: Read a profile.
---@param params context_sidecar.DocumentRef
---@param callback? fun(err: table?, result: context_sidecar.Profile?)
---@return context_sidecar.Profile? result
---@return table? err
function M.profile_get(params, callback)
  return call("profile/get", params, callback)
end

--- `profile/list`: List profiles.
---@param params context_sidecar.EmptyParams
---@param callback? fun(err: table?, result: context_sidecar.ProfileList?)
---@return context_sidecar.ProfileList? result
---@return table? err
function M.profile_list(params, callback)
  return call("profile/list", params, callback)
end

--- `profile/update`: Replace a profile.
---@param params context_sidecar.ProfileUpdateParams
---@param callback? fun(err: table?, result: context_sidecar.Profile?)
---@return context_sidecar.Profile? result
---@return table? err
function M.profile_update(params, callback)
  return call("profile/update", params, callback)
end

--- `profile/delete`: Delete a profile.
---@param params context_sidecar.DocumentRef
---@param callback? fun(err: table?, result: context_sidecar.DeleteResult?)
---@return context_sidecar.DeleteResult? result
---@return table? err
function M.profile_delete(params, callback)
  return call("profile/delete", params, callback)
end

--- `preset/create`: Store a preset.
---@param params context_sidecar.PresetInput
---@param callback? fun(err: table?, result: context_sidecar.Preset?)
---@return context_sidecar.Preset? result
---@return table? err
function M.preset_create(params, callback)
  return call("preset/create", params, callback)
end

--- `preset/get`: Read a preset.
---@param params context_sidecar.DocumentRef
---@param callback? fun(err: table?, result: context_sidecar.Preset?)
---@return context_sidecar.Preset? result
---@return table? err
function M.preset_get(params, callback)
  return call("preset/get", params, callback)
end

--- `preset/list`: List presets.
---@param params context_sidecar.EmptyParams
---@param callback? fun(err: table?, result: context_sidecar.PresetList?)
---@return context_sidecar.PresetList? result
---@return table? err
function M.preset_list(params, callback)
  return call("preset/list", params, callback)
end

--- `preset/update`: Replace a preset.
---@param params context_sidecar.PresetUpdateParams
---@param callback? fun(err: table?, result: context_sidecar.Preset?)
---@return context_sidecar.Preset? result
---@return table? err
function M.preset_update(params, callback)
  return call("preset/update", params, callback)
end

--- `preset/delete`: Delete a preset.
---@param params context_sidecar.DocumentRef
---@param callback? fun(err: table?, result: context_sidecar.DeleteResult?)
---@return context_sidecar.DeleteResult? result
---@return table? err
function M.preset_delete(params, callback)
  return call("preset/delete", params, callback)
end

--- `store/gc`: Collect blobs no session, kept snapshot or input refers to (explicit, never automatic).
---@param params context_sidecar.StoreGcParams
---@param callback? fun(err: table?, result: context_sidecar.StoreGcResult?)
---@return context_sidecar.StoreGcResult? result
---@return table? err
function M.store_gc(params, callback)
  return call("store/gc", params, callback)
end

--- `store/stats`: What the store holds: sessions, objects and their bytes, checkpoints.
---@param params context_sidecar.EmptyParams
---@param callback? fun(err: table?, result: context_sidecar.StoreStatsResult?)
---@return context_sidecar.StoreStatsResult? result
---@return table? err
function M.store_stats(params, callback)
  return call("store/stats", params, callback)
end

--- `checkpoint/list`: A session's checkpoints of its workspace, newest first, with how many files changed since.
---@param params context_sidecar.CheckpointListParams
---@param callback? fun(err: table?, result: context_sidecar.CheckpointListResult?)
---@return context_sidecar.CheckpointListResult? result
---@return table? err
function M.checkpoint_list(params, callback)
  return call("checkpoint/list", params, callback)
end

--- `checkpoint/diff`: Per file, what changed from a checkpoint to the workspace now (bounded unified diffs).
---@param params context_sidecar.CheckpointDiffParams
---@param callback? fun(err: table?, result: context_sidecar.CheckpointDiffResult?)
---@return context_sidecar.CheckpointDiffResult? result
---@return table? err
function M.checkpoint_diff(params, callback)
  return call("checkpoint/diff", params, callback)
end

--- `checkpoint/restore`: Put the files back as a checkpoint holds them (checkpointed first, so it can be undone) and/or fork the conversation before its turn; files changed outside the agent are conflicts unless `force`.
---@param params context_sidecar.CheckpointRestoreParams
---@param callback? fun(err: table?, result: context_sidecar.CheckpointRestoreResult?)
---@return context_sidecar.CheckpointRestoreResult? result
---@return table? err
function M.checkpoint_restore(params, callback)
  return call("checkpoint/restore", params, callback)
end

--- `run/start`: Start a run: the model/tool loop for a turn.
---@param params context_sidecar.RunStartParams
---@param callback? fun(err: table?, result: context_sidecar.RunStartResult?)
---@return context_sidecar.RunStartResult? result
---@return table? err
function M.run_start(params, callback)
  return call("run/start", params, callback)
end

--- `run/get`: A run's state.
---@param params context_sidecar.RunGetParams
---@param callback? fun(err: table?, result: context_sidecar.Run?)
---@return context_sidecar.Run? result
---@return table? err
function M.run_get(params, callback)
  return call("run/get", params, callback)
end

--- `run/list`: Runs, newest first.
---@param params context_sidecar.RunListParams
---@param callback? fun(err: table?, result: context_sidecar.RunListResult?)
---@return context_sidecar.RunListResult? result
---@return table? err
function M.run_list(params, callback)
  return call("run/list", params, callback)
end

--- `run/subscribe`: Replay a run's events after afterSeq, then continue live (no gap, no duplicate).
---@param params context_sidecar.RunSubscribeParams
---@param callback? fun(err: table?, result: context_sidecar.RunSubscribeResult?)
---@return context_sidecar.RunSubscribeResult? result
---@return table? err
function M.run_subscribe(params, callback)
  return call("run/subscribe", params, callback)
end

--- `run/unsubscribe`: Stop receiving a run's live events.
---@param params context_sidecar.RunUnsubscribeParams
---@param callback? fun(err: table?, result: context_sidecar.Run?)
---@return context_sidecar.Run? result
---@return table? err
function M.run_unsubscribe(params, callback)
  return call("run/unsubscribe", params, callback)
end

--- `run/cancel`: Cancel a run; answers once it ended.
---@param params context_sidecar.RunGetParams
---@param callback? fun(err: table?, result: context_sidecar.Run?)
---@return context_sidecar.Run? result
---@return table? err
function M.run_cancel(params, callback)
  return call("run/cancel", params, callback)
end

--- `run/resume`: Continue a stopped run (a new run on the same input; settled tool calls are not redone).
---@param params context_sidecar.RunResumeParams
---@param callback? fun(err: table?, result: context_sidecar.RunStartResult?)
---@return context_sidecar.RunStartResult? result
---@return table? err
function M.run_resume(params, callback)
  return call("run/resume", params, callback)
end

--- `tokens/count`: Count tokens of texts.
---@param params context_sidecar.TokensCountParams
---@param callback? fun(err: table?, result: context_sidecar.TokensCountResult?)
---@return context_sidecar.TokensCountResult? result
---@return table? err
function M.tokens_count(params, callback)
  return call("tokens/count", params, callback)
end

--- `server/info`: Capabilities, limits and live server facts.
---@param params context_sidecar.EmptyParams
---@param callback? fun(err: table?, result: context_sidecar.ServerInfo?)
---@return context_sidecar.ServerInfo? result
---@return table? err
function M.server_info(params, callback)
  return call("server/info", params, callback)
end

--- `server/ping`: Trivial round trip.
---@param params context_sidecar.EmptyParams
---@param callback? fun(err: table?, result: context_sidecar.ServerPingResult?)
---@return context_sidecar.ServerPingResult? result
---@return table? err
function M.server_ping(params, callback)
  return call("server/ping", params, callback)
end

--- `server/sleep`: Answer after a delay (cancellable); for testing client timeouts and cancellation.
---@param params context_sidecar.ServerSleepParams
---@param callback? fun(err: table?, result: context_sidecar.ServerSleepResult?)
---@return context_sidecar.ServerSleepResult? result
---@return table? err
function M.server_sleep(params, callback)
  return call("server/sleep", params, callback)
end

return M
