--- :ContextSidecar rewind — the checkpoints of the current session's workspace (taken before
--- each turn's first change, each edit and each command), picked with vim.ui.select; what
--- restoring one would change, in a float (the unified diffs, checkpoint -> now); then the
--- choice (code / conversation / both) and checkpoint/restore.  Files changed outside the
--- agent since are conflicts: a second vim.ui.select names them and offers "force".  A
--- conversation rewind makes the fork the current session and says the turn's prompt, to send
--- again with :ContextSidecar run.  Buffers of restored files are reloaded (:checktime).
---
--- Numbers count from the session's oldest checkpoint (as the ACP face's /rewind has them).
local M = {}

M.FORCE = "Overwrite them (force)"
M.CANCEL = "Cancel"

---@class context_sidecar.RewindChoice
---@field choice "code"|"conversation"|"both"
---@field label string
---@field files boolean
---@field conversation boolean

---@type context_sidecar.RewindChoice[]
M.CHOICES = {
  { choice = "both", label = "Code and conversation", files = true, conversation = true },
  { choice = "code", label = "Code: put the files back", files = true, conversation = false },
  { choice = "conversation", label = "Conversation: fork it before that turn", files = false, conversation = true },
}

local UNDO = { added = "deleted", modified = "put back", deleted = "recreated" }

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify("context-sidecar: " .. msg, level or vim.log.levels.INFO)
end

---@param what string
---@param err table?
local function failed(what, err)
  notify(what .. ": " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
end

--- The first line of the user message stored at `seq` ("" when there is none).
---@param session_id string
---@param seq integer
---@return string
function M.turn_text(session_id, seq)
  local page = require("context_sidecar.api").session_read({ sessionId = session_id, afterSeq = seq - 1, limit = 1 })
  local entry = page and page.entries and page.entries[1]
  if not entry or entry.kind ~= "message" then
    return ""
  end
  local parts = {}
  for _, part in ipairs(entry.content or {}) do
    if part.type == "text" then
      parts[#parts + 1] = part.text
    end
  end
  return vim.trim(table.concat(parts, " "))
end

---@param checkpoint context_sidecar.Checkpoint
---@return string
function M.why(checkpoint)
  if checkpoint.reason == "turn" then
    return "before the turn's first change"
  elseif checkpoint.reason == "restore" then
    return "before a rewind"
  end
  return checkpoint.tool and ("before " .. checkpoint.tool) or ("before a " .. checkpoint.reason)
end

--- One line of the picker: number, turn, why, when, how many files changed since.
---@param number integer
---@param checkpoint context_sidecar.Checkpoint
---@param turn string
---@return string
function M.describe(number, checkpoint, turn)
  local first = vim.split(turn, "\n", { plain = true })[1] or ""
  if vim.fn.strchars(first) > 60 then
    first = vim.fn.strcharpart(first, 0, 59) .. "…"
  end
  local changed = checkpoint.changedFiles == 0 and "files as now"
    or ("%d file%s changed since"):format(checkpoint.changedFiles, checkpoint.changedFiles == 1 and "" or "s")
  local when = tostring(checkpoint.createdAt):gsub("T", " "):sub(1, 19)
  local where = first ~= "" and ('turn "' .. first .. '"') or "outside a turn"
  return ("%d. %s · %s · %s · %s"):format(number, where, M.why(checkpoint), when, changed)
end

--- The preview float's lines: per file what restoring would do, then the unified diffs.
---@param diff context_sidecar.CheckpointDiffResult
---@return string[]
function M.preview_lines(diff)
  if #diff.files == 0 then
    return { "The files are as this checkpoint holds them: restoring the code changes nothing." }
  end
  local lines = { ("Restoring the files would change %d:"):format(#diff.files) }
  for _, f in ipairs(diff.files) do
    local what = f.notCaptured and "too large when taken: left as it is"
      or (f.change .. " since, would be " .. UNDO[f.change] .. (f.binary and " (binary)" or ""))
    lines[#lines + 1] = ("  %s: %s"):format(f.path, what)
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Changes since the checkpoint (restoring undoes them):"
  for _, f in ipairs(diff.files) do
    if type(f.diff) == "string" and f.diff ~= "" then
      vim.list_extend(lines, vim.split(vim.trim(f.diff), "\n", { plain = true }))
    end
  end
  if diff.truncated then
    lines[#lines + 1] = "(some diffs left out: too long)"
  end
  return lines
end

---@param session_id string
---@param number integer
---@param checkpoint context_sidecar.Checkpoint
---@return integer? win  the preview float
local function preview(session_id, number, checkpoint)
  local diff, err = require("context_sidecar.api").checkpoint_diff({
    sessionId = session_id, checkpointId = checkpoint.checkpointId, maxBytes = 256 * 1024,
  })
  if not diff then
    failed("checkpoint/diff", err)
    return nil
  end
  local buf, win = require("context_sidecar.ui").float(nil, "rewind: checkpoint " .. number)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.preview_lines(diff))
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
  return win
end

--- The answer's lines: what was restored, how to undo it, the fork.
---@param result context_sidecar.CheckpointRestoreResult
---@param choice context_sidecar.RewindChoice
---@param turn string  the turn's prompt when the fork ends right before it, else ""
---@param fork_head? integer  the fork's head seq
---@return string[]
function M.report_lines(result, choice, turn, fork_head)
  local lines = {}
  if choice.files then
    local restored = result.restored or {}
    if #restored == 0 then
      lines[#lines + 1] = "the files were already as the checkpoint holds them"
    else
      local names = vim.tbl_map(function(r) return r.path .. " " .. r.action end, restored)
      lines[#lines + 1] = "files restored: " .. table.concat(names, ", ")
    end
    for _, n in ipairs(result.notRestored or {}) do
      lines[#lines + 1] = ("not restored: %s (%s)"):format(n.path, n.reason)
    end
    if result.undoCheckpointId and #restored > 0 then
      lines[#lines + 1] = "undo: :ContextSidecar rewind, the newest checkpoint (" .. result.undoCheckpointId .. ")"
    end
  end
  if result.forkedSessionId then
    local what = turn ~= "" and "before that turn" or ("through seq " .. tostring(fork_head))
    lines[#lines + 1] = "the conversation " .. what .. " is session " .. result.forkedSessionId .. " (now current)"
    if turn ~= "" then
      lines[#lines + 1] = "its prompt, to send again: :ContextSidecar run " .. turn
    end
  end
  return lines
end

--- checkpoint/restore; on conflicts, asks whether to overwrite them.
---@param session_id string
---@param checkpoint context_sidecar.Checkpoint
---@param choice context_sidecar.RewindChoice
---@param force boolean
---@param done? fun(result: context_sidecar.CheckpointRestoreResult?)
function M.restore(session_id, checkpoint, choice, force, done)
  done = done or function() end
  local result, err = require("context_sidecar.api").checkpoint_restore({
    sessionId = session_id,
    checkpointId = checkpoint.checkpointId,
    files = choice.files,
    conversation = choice.conversation,
    force = force,
  })
  if not result then
    failed("checkpoint/restore", err)
    return done(nil)
  end
  if result.status == "conflicts" then
    local names = vim.tbl_map(function(c) return c.path end, result.conflicts or {})
    vim.ui.select({ M.FORCE, M.CANCEL }, {
      prompt = ("context-sidecar: changed outside the agent since (%s); nothing was rewound"):format(table.concat(names, ", ")),
    }, function(answer)
      if answer == M.FORCE then
        return M.restore(session_id, checkpoint, choice, true, done)
      end
      notify("not rewound: " .. table.concat(names, ", ") .. " changed outside the agent", vim.log.levels.WARN)
      done(result)
    end)
    return
  end
  local turn, fork_head = "", nil
  if result.forkedSessionId then
    local fork = require("context_sidecar.api").session_get({ sessionId = result.forkedSessionId })
    fork_head = fork and fork.headSeq
    if checkpoint.turnSeq and fork_head == checkpoint.turnSeq - 1 then
      turn = M.turn_text(session_id, checkpoint.turnSeq)
    end
  end
  if result.forkedSessionId then
    local cs = require("context_sidecar")
    cs.state.session_id = result.forkedSessionId
    cs.state.assembly, cs.state.assembly_params, cs.state.assembly_diff, cs.state.shown = nil, nil, nil, nil
  end
  if choice.files then
    pcall(vim.cmd.checktime) -- buffers of restored files show them
  end
  notify("rewound (" .. choice.choice .. "): " .. table.concat(M.report_lines(result, choice, turn, fork_head), "; "))
  done(result)
end

--- :ContextSidecar rewind for the current session.
---@param session_id string
---@param done? fun(result: context_sidecar.CheckpointRestoreResult?)  called once it ends (tests)
function M.rewind(session_id, done)
  done = done or function() end
  local api = require("context_sidecar.api")
  local list, err = api.checkpoint_list({ sessionId = session_id, limit = 1000 })
  if not list then
    failed("checkpoint/list", err)
    return done(nil)
  end
  if #list.checkpoints == 0 then
    notify("no checkpoints yet: one is taken before the agent first changes the workspace in a turn")
    return done(nil)
  end
  local turns, numbers = {}, {}
  for i, c in ipairs(list.checkpoints) do
    numbers[c.checkpointId] = list.total - i + 1
    if c.turnSeq and turns[c.turnSeq] == nil then
      turns[c.turnSeq] = M.turn_text(session_id, c.turnSeq)
    end
  end
  vim.ui.select(list.checkpoints, {
    prompt = "context-sidecar: rewind to (newest first)",
    format_item = function(c)
      return M.describe(numbers[c.checkpointId], c, c.turnSeq and turns[c.turnSeq] or "")
    end,
  }, function(checkpoint)
    if not checkpoint then
      return done(nil)
    end
    local win = preview(session_id, numbers[checkpoint.checkpointId], checkpoint)
    vim.ui.select(M.CHOICES, {
      prompt = "context-sidecar: rewind what?",
      format_item = function(c) return c.label end,
    }, function(choice)
      if win and vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_close(win, true)
      end
      if not choice then
        return done(nil)
      end
      M.restore(session_id, checkpoint, choice, false, done)
    end)
  end)
end

return M
