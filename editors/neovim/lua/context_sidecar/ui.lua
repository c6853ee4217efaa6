--- Floating windows: an assembly's dashboard and a run's live stream.
local M = {}

local CATEGORY_ORDER = {
  "system", "tools", "instructions", "skills", "pinned", "host", "summary", "transcript", "userTurn",
}
local BAR_WIDTH = 30
local PARTIAL = { "▏", "▎", "▍", "▌", "▋", "▊", "▉" }

---@param value integer
---@param max integer
---@return string
function M.bar(value, max)
  if max <= 0 or value <= 0 then
    return ""
  end
  local eighths = math.floor(value / max * BAR_WIDTH * 8 + 0.5)
  local full, rest = math.floor(eighths / 8), eighths % 8
  local s = string.rep("█", full)
  if rest > 0 then
    s = s .. PARTIAL[rest]
  end
  if s == "" then
    s = PARTIAL[1]
  end
  return s
end

--- Open (or reuse) a scratch buffer in a centered float.
---@param buf integer?
---@param title string
---@return integer buf
---@return integer win
function M.float(buf, title)
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = "wipe"
  end
  local width = math.max(40, math.min(100, vim.o.columns - 4))
  local height = math.max(10, math.min(30, vim.o.lines - 4))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
    title = " " .. title .. " ",
  })
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true })
  return buf, win
end

---@class context_sidecar.DashboardExtra
---@field cache? context_sidecar.CacheAccounting  the turn's prediction (a snapshot keeps none)
---@field diff? table  a SnapshotDiff, or explain.assembly_diff's answer
---@field keep? context_sidecar.KeepEverythingCall  the round's call beside keep-everything

--- The dashboard's lines for an assembly (or a snapshot, which carries the same fields): tokens
--- by category, the cache prediction, the window, masking, what is left out, the diff.
---@param result context_sidecar.ContextAssembleResult|context_sidecar.PromptSnapshot
---@param extra? context_sidecar.DashboardExtra
---@return string[]
function M.dashboard_lines(result, extra)
  local explain = require("context_sidecar.explain")
  local given = extra or {}
  local d = result.dashboard
  local lines = { d.summary, "" }
  local names = {}
  for _, name in ipairs(CATEGORY_ORDER) do
    if d.categories[name] then
      names[#names + 1] = name
    end
  end
  local extra = {}
  for name in pairs(d.categories) do
    if not vim.tbl_contains(CATEGORY_ORDER, name) then
      extra[#extra + 1] = name
    end
  end
  table.sort(extra)
  vim.list_extend(names, extra)
  local max = 0
  for _, name in ipairs(names) do
    max = math.max(max, d.categories[name])
  end
  for _, name in ipairs(names) do
    local tokens = d.categories[name]
    lines[#lines + 1] = ("%-13s %8d  %s"):format(name, tokens, M.bar(tokens, max))
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = ("used %d  free %d  available %d  window %d  reserved output %d"):format(
    d.used, d.free, d.availableInput, d.window, d.reservedOutput)
  lines[#lines + 1] = ""
  vim.list_extend(lines, explain.cache_lines(given.cache or result.cache))
  vim.list_extend(lines, explain.keep_everything_lines(given.keep))
  lines[#lines + 1] = explain.window_line(d.historyWindow)
  vim.list_extend(lines, explain.masking_lines(d.masking, result.ledger))
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Left out:"
  local left_out = 0
  for _, item in ipairs(result.ledger or {}) do
    if item.visibility ~= "visible" and item.visibility ~= "pinned" and item.visibility ~= "masked" then
      left_out = left_out + 1
      lines[#lines + 1] = ("  %-11s %-11s %-30s %6d  %s"):format(item.visibility, item.kind,
        item.locator or item.itemId, item.tokens, item.reason)
    end
  end
  if left_out == 0 then
    lines[#lines + 1] = "  (nothing)"
  end
  lines[#lines + 1] = ""
  vim.list_extend(lines, explain.diff_lines(given.diff or result.diff))
  for _, diag in ipairs(result.diagnostics or {}) do
    lines[#lines + 1] = ("%s %s %s: %s"):format(diag.severity, diag.code, diag.path, diag.message or "")
  end
  return lines
end

---@param result context_sidecar.ContextAssembleResult|context_sidecar.PromptSnapshot
---@param title? string
---@param extra? context_sidecar.DashboardExtra
---@return integer buf
---@return integer win
function M.show_dashboard(result, title, extra)
  local buf, win = M.float(nil, title or "context-sidecar dashboard")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.dashboard_lines(result, extra))
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "context_sidecar_dashboard"
  return buf, win
end

---@param event context_sidecar.RunEvent
---@return string
local function event_line(event)
  local p = event.payload or {}
  local detail = ""
  if event.type == "run.completed" then
    detail = tostring(p.status)
    if p.failure then
      detail = detail .. " " .. tostring(p.failure.code) .. ": " .. tostring(p.failure.message)
    end
  elseif event.type == "run.statusChanged" then
    detail = tostring(p.status)
  elseif event.type == "context.assembled" and p.dashboard then
    detail = p.dashboard.summary or ""
  elseif event.type == "tool.callRequested" then
    detail = tostring(p.title or p.name or p.callId or "")
  elseif event.type == "tool.approval" then
    local verdict = ({ allow = "allowed", refuse = "refused", ask = "asked", sandbox = "in the sandbox" })[p.verdict] or tostring(p.verdict)
    if p.escalation then
      verdict = verdict .. " to leave the sandbox (" .. tostring(p.escalation) .. ")"
    end
    local outcome = p.verdict == "ask" and (p.approved and ", approved" or ", not approved") or ""
    detail = ("%s: %s (%s mode)%s"):format(tostring(p.name), verdict, tostring(p.mode), outcome)
  elseif event.type == "plan.updated" then
    local done = 0
    for _, e in ipairs(p.entries or {}) do
      done = done + (e.status == "completed" and 1 or 0)
    end
    detail = ("%d/%d done"):format(done, #(p.entries or {}))
  elseif event.type == "tool.resultStored" and type(p.content) == "table" then
    local text = ""
    for _, part in ipairs(p.content) do
      text = text .. (part.text or "")
    end
    local first = vim.split(text, "\n", { plain = true })[1] or ""
    detail = ("%s%s%s"):format(p.isError and "failed: " or "", first, p.exitCode and (" (exit code %d)"):format(p.exitCode) or "")
  end
  return ("[%d] %s %s"):format(event.seq, event.type, detail)
end

local STEP_MARK = { completed = "[x]", in_progress = "[~]", pending = "[ ]" }

--- The model's todo list (a plan.updated payload's entries) as checklist lines.
---@param entries context_sidecar.PlanEntry[]
---@return string[]
function M.plan_lines(entries)
  local lines = { "── plan ──" }
  for _, e in ipairs(entries) do
    lines[#lines + 1] = ("%s %s"):format(STEP_MARK[e.status] or "[?]", e.content)
  end
  return lines
end

--- A float whose first line grows with the run's model.delta text, then the model's todo list
--- (the last plan.updated), then one line per event.
---@param client context_sidecar.Client
---@param run_id string
---@return integer buf
---@return integer win
function M.stream_run(client, run_id)
  local buf, win = M.float(nil, "run " .. run_id)
  vim.bo[buf].filetype = "context_sidecar_run"
  local text = ""
  local log = {}
  local plan = nil ---@type context_sidecar.PlanEntry[]?
  local function render()
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    local lines = vim.split(text, "\n", { plain = true })
    if plan then
      lines[#lines + 1] = ""
      vim.list_extend(lines, M.plan_lines(plan))
    end
    lines[#lines + 1] = ""
    lines[#lines + 1] = "── events ──"
    vim.list_extend(lines, log)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end
  client:on_run_event(run_id, function(event)
    if event.type == "model.delta" then
      text = text .. (event.payload.text or "")
    else
      if event.type == "plan.updated" then
        plan = event.payload.entries or {}
      end
      log[#log + 1] = event_line(event)
    end
    vim.schedule(render)
  end)
  render()
  return buf, win
end

return M
