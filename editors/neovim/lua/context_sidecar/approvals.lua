--- Asking the user about a tool call the sidecar wants approved (approval/request): a float
--- shows the tool and its arguments, vim.ui.select offers allow once / allow for this session /
--- deny, and the choice is the answer. The statusline shows what waits; a request the sidecar
--- withdraws closes the float (and a floating picker), and a late choice is ignored.
local M = {}

M.REASONS = {
  session = "allowed for this session",
  denied = "denied by the user",
  dismissed = "dismissed without an answer",
}

M.CHOICES = {
  { label = "Allow once", approved = true },
  { label = "Allow for this session", approved = true, session = true },
  { label = "Deny", approved = false, reason = M.REASONS.denied },
}

---@type table<string, table<string, boolean>>  sessionId -> tool name -> allowed for the rest of it
M.allowed = {}

---@class context_sidecar.ApprovalQuestion
---@field params context_sidecar.ApprovalRequestParams
---@field session_id string?
---@field done boolean
---@field buf integer?
---@field win integer?
---@field picker_win integer?

---@type context_sidecar.ApprovalQuestion[]  questions on screen, oldest first
M.pending = {}

--- What waits on the user, for a statusline: "" or "approve read_file?" (" (+1)" for more).
---@return string
function M.statusline()
  local first = M.pending[1]
  if not first then
    return ""
  end
  local more = #M.pending > 1 and (" (+%d)"):format(#M.pending - 1) or ""
  return ("approve %s?%s"):format(first.params.name, more)
end

local function changed()
  vim.api.nvim_exec_autocmds("User", { pattern = "ContextSidecarApproval", modeline = false })
  pcall(vim.cmd.redrawstatus)
end

--- What a built-in write or command would do, in one line: "Edit calc/add.py", "Run `make`".
---@param params context_sidecar.ApprovalRequestParams
---@return string
function M.summary(params)
  if params.command then
    return ("Run `%s` in %s"):format(params.command, params.cwd or ".")
  end
  local change = params.change
  if change then
    local verb = change.created and "Create" or (params.name == "edit_file" and "Edit" or "Write")
    return verb .. " " .. change.path
  end
  return "Call " .. params.name
end

--- A built-in call's float: the summary, then the lines the change removes and adds (at most
--- `max` of each), or the command.
---@param params context_sidecar.ApprovalRequestParams
---@param max integer
---@return string[]
local function builtin_lines(params, max)
  local lines = { M.summary(params) .. ("  (%s mode)"):format(params.mode or "ask"), "" }
  local change = params.change
  if params.escalation then
    lines[#lines + 1] = "  outside the sandbox: " .. tostring(params.justification or params.escalation)
  end
  if params.command then
    lines[#lines + 1] = "  $ " .. params.command
  elseif change and change.omitted then
    lines[#lines + 1] = "  (too large to show)"
  elseif change then
    local before = vim.split(change.oldText or "", "\n", { plain = true })
    local after = vim.split(change.newText or "", "\n", { plain = true })
    local old_set, new_set = {}, {}
    for _, l in ipairs(before) do old_set[l] = true end
    for _, l in ipairs(after) do new_set[l] = true end
    local shown = 0
    for _, l in ipairs(before) do
      if not new_set[l] and shown < max then
        lines[#lines + 1], shown = "- " .. l, shown + 1
      end
    end
    shown = 0
    for _, l in ipairs(after) do
      if not old_set[l] and shown < max then
        lines[#lines + 1], shown = "+ " .. l, shown + 1
      end
    end
  end
  return lines
end

--- The float's lines: the tool, the run, one line per argument (its value as JSON); for a
--- built-in write or command, what it would do.
---@param params context_sidecar.ApprovalRequestParams
---@return string[]
function M.lines(params)
  if params.builtin then
    return builtin_lines(params, 40)
  end
  local lines = { ("tool %s  (run %s, call %s)"):format(params.name, params.runId, params.callId), "" }
  local keys = vim.tbl_keys(params.arguments or {})
  table.sort(keys)
  for _, key in ipairs(keys) do
    local ok, json = pcall(vim.json.encode, params.arguments[key])
    for i, piece in ipairs(vim.split(ok and json or vim.inspect(params.arguments[key]), "\n", { plain = true })) do
      lines[#lines + 1] = (i == 1 and ("  %s: "):format(key) or "    ") .. piece
    end
  end
  if #keys == 0 then
    lines[#lines + 1] = "  (no arguments)"
  end
  return lines
end

---@param q context_sidecar.ApprovalQuestion
local function open_float(q)
  local lines = M.lines(q.params)
  local width = math.min(math.max(40, vim.o.columns - 10), 100)
  for _, line in ipairs(lines) do
    width = math.max(width, math.min(vim.fn.strdisplaywidth(line) + 2, vim.o.columns - 4))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "context_sidecar_approval"
  q.buf = buf
  q.win = vim.api.nvim_open_win(buf, false, {
    relative = "editor",
    width = math.max(20, math.min(width, vim.o.columns - 4)),
    height = math.min(#lines, math.max(3, vim.o.lines - 10)),
    row = 1,
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
    title = (" approve %s? "):format(q.params.name),
    focusable = false,
  })
end

---@param q context_sidecar.ApprovalQuestion
local function close(q)
  q.done = true
  for i, p in ipairs(M.pending) do
    if p == q then
      table.remove(M.pending, i)
      break
    end
  end
  if q.win and vim.api.nvim_win_is_valid(q.win) then
    pcall(vim.api.nvim_win_close, q.win, true)
  end
  changed()
end

--- The session a run belongs to: from its events, else run/get.
---@param client context_sidecar.Client
---@param run_id string
---@param callback fun(session_id: string?)
local function session_of(client, run_id, callback)
  local first = (client.events[run_id] or {})[1]
  if first and first.sessionId then
    callback(first.sessionId)
    return
  end
  client:request("run/get", { runId = run_id }, function(_, run)
    callback(run and run.sessionId or nil)
  end)
end

--- The plugin's approval handler (context_sidecar.ApprovalHandler).
---@param params context_sidecar.ApprovalRequestParams
---@param respond fun(result: context_sidecar.ApprovalRequestResult)
---@param client context_sidecar.Client
---@return fun(reason: string) withdraw
function M.handler(params, respond, client)
  ---@type context_sidecar.ApprovalQuestion
  local q = { params = params, done = false }
  session_of(client, params.runId, function(session_id)
    if q.done then
      return
    end
    q.session_id = session_id
    if session_id and (M.allowed[session_id] or {})[params.name] then
      q.done = true
      respond({ approved = true, reason = M.REASONS.session })
      return
    end
    M.pending[#M.pending + 1] = q
    open_float(q)
    changed()
    local before = vim.api.nvim_get_current_win()
    vim.ui.select(M.CHOICES, {
      prompt = params.builtin and ("context-sidecar: %s?"):format(M.summary(params))
        or ("context-sidecar: the run wants to call %s — allow?"):format(params.name),
      kind = "context_sidecar.approval",
      format_item = function(choice)
        return choice.label
      end,
    }, function(choice)
      if q.done then
        return -- withdrawn meanwhile: nobody waits for this answer
      end
      close(q)
      if choice and choice.session and q.session_id then
        M.allowed[q.session_id] = M.allowed[q.session_id] or {}
        M.allowed[q.session_id][params.name] = true
      end
      if not choice then
        respond({ approved = false, reason = M.REASONS.dismissed })
      elseif choice.approved then
        respond({ approved = true, reason = choice.session and M.REASONS.session or nil })
      else
        respond({ approved = false, reason = choice.reason })
      end
    end)
    -- A picker that opened a floating window of its own (not the builtin inputlist)
    local now = vim.api.nvim_get_current_win()
    if not q.done and now ~= before and now ~= q.win and vim.api.nvim_win_get_config(now).relative ~= "" then
      q.picker_win = now
    end
  end)
  return function(reason)
    if q.done then
      return
    end
    close(q)
    if q.picker_win and vim.api.nvim_win_is_valid(q.picker_win) then
      pcall(vim.api.nvim_win_close, q.picker_win, true)
      pcall(vim.cmd.stopinsert)
    end
    vim.notify(("context-sidecar: approval of %s withdrawn: %s"):format(params.name, reason), vim.log.levels.WARN)
  end
end

--- Forget every "allow for this session" (the sidecar stopped).
function M.forget()
  M.allowed = {}
end

return M
