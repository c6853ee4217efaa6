--- The sidecar process and its JSON-RPC connection (vim.lsp.rpc, LSP framing over stdio).
local M = {}

local PROTOCOL_VERSION = 1

---@class context_sidecar.Client
---@field rpc vim.lsp.rpc.PublicClient
---@field pid integer?
---@field exited boolean
---@field exit_code integer?
---@field capabilities table?  capabilities.experimental.contextSidecar of the initialize answer
---@field events table<string, context_sidecar.RunEvent[]>  run events received, by runId
---@field listeners table<string, fun(event: context_sidecar.RunEvent)[]>  by runId
---@field tool_handler fun(params: context_sidecar.ToolExecuteParams): context_sidecar.ToolExecuteResult
---@field approval_handler context_sidecar.ApprovalHandler
---@field approvals context_sidecar.PendingApproval[]  approval/request calls not answered yet, oldest first
---@field lagged integer?  how many times the sidecar paused live events for us (we caught up each time)
---@field private _approval_ids any[]  ids of approval/request messages read, not yet dispatched
local Client = {}
Client.__index = Client

--- Answers an approval/request: call `respond` once, now or later (after asking the user). It
--- may return a function that takes the question down when the sidecar withdraws the request
--- ($/cancelRequest: run cancelled, tool timeout); `respond` does nothing after that.
---@alias context_sidecar.ApprovalHandler fun(params: context_sidecar.ApprovalRequestParams, respond: fun(result: context_sidecar.ApprovalRequestResult), client: context_sidecar.Client): (fun(reason: string))?

---@class context_sidecar.PendingApproval
---@field id any  the JSON-RPC id of the request (nil if it could not be read)
---@field params context_sidecar.ApprovalRequestParams
---@field finish fun(result: table?, err: table?)
---@field withdraw (fun(reason: string))?

---@param params context_sidecar.ToolExecuteParams
---@return context_sidecar.ToolExecuteResult
local function default_tool_handler(params)
  return {
    content = { { type = "text", text = "no tool handler configured" } },
    isError = true,
  }
end
M.default_tool_handler = default_tool_handler

---@type context_sidecar.ApprovalHandler
local function default_approval_handler(_, respond)
  respond({ approved = false, reason = "no approval handler configured" })
end
M.default_approval_handler = default_approval_handler

--- The vim.lsp.rpc client object behind its public face (an upvalue of its methods).
---@param rpc vim.lsp.rpc.PublicClient
---@return table?
local function rpc_internal(rpc)
  for _, fn in ipairs({ rpc.is_closing, rpc.terminate }) do
    local i = 1
    while true do
      local name, value = debug.getupvalue(fn, i)
      if not name then
        break
      end
      if name == "client" and type(value) == "table" and value.transport then
        return value
      end
      i = i + 1
    end
  end
  return nil
end

--- The OS pid of the process behind a vim.lsp.rpc client (its transport's vim.system object).
---@param rpc vim.lsp.rpc.PublicClient
---@return integer?
local function rpc_pid(rpc)
  local internal = rpc_internal(rpc)
  local sysobj = internal and internal.transport.sysobj
  return sysobj and sysobj.pid or nil
end

--- vim.lsp.rpc hands a server request to its dispatcher without the request's id, which a
--- `$/cancelRequest` names: note the ids of approval/request messages as they are read (the
--- dispatcher is scheduled in the same order, so it takes them first in, first out).
---@param rpc vim.lsp.rpc.PublicClient
---@param ids any[]
local function note_approval_ids(rpc, ids)
  local internal = rpc_internal(rpc)
  if not (internal and type(internal.handle_body) == "function") then
    return
  end
  local handle_body = internal.handle_body
  internal.handle_body = function(this, body)
    if type(body) == "string" and body:find("approval/request", 1, true) then
      local ok, msg = pcall(vim.json.decode, body)
      if ok and type(msg) == "table" and msg.method == "approval/request" and msg.id ~= nil then
        ids[#ids + 1] = msg.id
      end
    end
    return handle_body(this, body)
  end
end

---@class context_sidecar.StartOpts
---@field cmd string[]
---@field cwd? string
---@field tool_handler? fun(params: context_sidecar.ToolExecuteParams): context_sidecar.ToolExecuteResult
---@field approval_handler? context_sidecar.ApprovalHandler
---@field on_exit? fun(code: integer, signal: integer)
---@field timeout_ms? integer

--- Start a sidecar and initialize it (blocking up to timeout_ms).
---@param opts context_sidecar.StartOpts
---@return context_sidecar.Client? client
---@return string? err
function M.start(opts)
  local self = setmetatable({
    exited = false,
    events = {},
    listeners = {},
    tool_handler = opts.tool_handler or default_tool_handler,
    approval_handler = opts.approval_handler or default_approval_handler,
    approvals = {},
    _approval_ids = {},
  }, Client)

  local dispatchers = {
    notification = function(method, params)
      if method == "run/event" then
        self:_on_run_event(params)
      elseif method == "run/lagged" then
        self:_on_lagged(params)
      elseif method == "$/cancelRequest" and type(params) == "table" then
        self:_withdraw_approvals(function(p)
          return p.id ~= nil and p.id == params.id
        end, "the sidecar withdrew the request")
      end
    end,
    server_request = function(method, params)
      if method == "tool/execute" then
        local ok, result = pcall(self.tool_handler, params)
        if not ok then
          return { content = { { type = "text", text = tostring(result) } }, isError = true }
        end
        return result
      elseif method == "approval/request" then
        return self:_on_approval(params)
      end
      return nil, vim.lsp.rpc.rpc_response_error(-32601, "method not supported by this client: " .. method)
    end,
    on_exit = function(code, signal)
      self.exited = true
      self.exit_code = code
      vim.schedule(function()
        self:_withdraw_approvals(function()
          return true
        end, "the sidecar exited")
      end)
      if opts.on_exit then
        opts.on_exit(code, signal)
      end
    end,
    on_error = function(code, err)
      vim.schedule(function()
        vim.notify(("context-sidecar: rpc error %s: %s"):format(tostring(code), vim.inspect(err)),
          vim.log.levels.DEBUG)
      end)
    end,
  }

  local ok, rpc = pcall(vim.lsp.rpc.start, opts.cmd, dispatchers, { cwd = opts.cwd })
  if not ok then
    return nil, "cannot start " .. table.concat(opts.cmd, " ") .. ": " .. tostring(rpc)
  end
  self.rpc = rpc
  self.pid = rpc_pid(rpc)
  note_approval_ids(rpc, self._approval_ids)

  local result, err = self:request_sync("initialize", {
    processId = vim.fn.getpid(),
    clientInfo = { name = "context_sidecar.nvim" },
    rootUri = vim.uri_from_fname(opts.cwd or vim.fn.getcwd()),
    capabilities = {},
  }, opts.timeout_ms or 15000)
  if not result then
    self:stop()
    return nil, "initialize failed: " .. M.format_error(err)
  end
  self.capabilities = vim.tbl_get(result, "capabilities", "experimental", "contextSidecar") or {}
  if self.capabilities.protocolVersion ~= PROTOCOL_VERSION then
    self:stop()
    return nil, ("protocol version %s, expected %d"):format(tostring(self.capabilities.protocolVersion),
      PROTOCOL_VERSION)
  end
  rpc.notify("initialized", vim.empty_dict())
  if not self.pid then
    local info = self:request_sync("server/info", {})
    self.pid = info and info.pid
  end
  return self
end

---@param err any
---@return string
function M.format_error(err)
  if type(err) == "table" then
    local code = vim.tbl_get(err, "data", "code") or err.code
    return ("%s: %s"):format(tostring(code), tostring(err.message))
  end
  return tostring(err)
end

---@param event context_sidecar.RunEvent
function Client:_on_run_event(event)
  local list = self.events[event.runId] or {}
  self.events[event.runId] = list
  if #list > 0 and event.seq <= list[#list].seq then
    return -- already seen (a catch-up replay overlaps what arrived live)
  end
  list[#list + 1] = event
  for _, listener in ipairs(self.listeners[event.runId] or {}) do
    listener(event)
  end
  -- A question the run no longer waits for goes away even if no $/cancelRequest named it.
  if event.type == "run.completed" and not (event.payload or {}).agent then
    self:_withdraw_approvals(function(p)
      return p.params.runId == event.runId
    end, "the run ended")
  elseif event.type == "tool.resultStored" then
    self:_withdraw_approvals(function(p)
      return p.params.runId == event.runId and p.params.callId == (event.payload or {}).callId
    end, "the call was settled")
  end
end

--- The server_request dispatcher runs in a coroutine (vim.lsp.rpc): yield until the handler
--- responds or the sidecar withdraws the request.
---@param params context_sidecar.ApprovalRequestParams
---@return context_sidecar.ApprovalRequestResult?
---@return table? err
function Client:_on_approval(params)
  local co, is_main = coroutine.running()
  local id = table.remove(self._approval_ids, 1)
  if not co or is_main then
    return { approved = false, reason = "this client cannot wait for an answer here" }
  end
  local done = false
  ---@type context_sidecar.PendingApproval
  local pending = { id = id, params = params }
  function pending.finish(result, err)
    if done then
      return
    end
    done = true
    for i, p in ipairs(self.approvals) do
      if p == pending then
        table.remove(self.approvals, i)
        break
      end
    end
    -- scheduled: a handler may respond before the coroutine has yielded
    vim.schedule(function()
      coroutine.resume(co, result, err)
    end)
  end
  self.approvals[#self.approvals + 1] = pending
  local ok, withdraw = pcall(self.approval_handler, params, function(result)
    pending.finish(result)
  end, self)
  if not ok then
    pending.finish({ approved = false, reason = "approval handler failed: " .. tostring(withdraw) })
  elseif type(withdraw) == "function" then
    pending.withdraw = withdraw
  end
  return coroutine.yield()
end

--- Take down the questions `match` selects and answer their requests as cancelled.
---@param match fun(p: context_sidecar.PendingApproval): boolean
---@param reason string
function Client:_withdraw_approvals(match, reason)
  for _, p in ipairs(vim.list_slice(self.approvals)) do
    if match(p) then
      if p.withdraw then
        pcall(p.withdraw, reason)
      end
      p.finish(nil, vim.lsp.rpc.rpc_response_error(-32800, "withdrawn: " .. reason))
    end
  end
end

--- The sidecar paused this run's live events because we read too slowly: after the delay it
--- asks for, subscribe again from the last event we have; the journal replays the rest.
---@param params { runId: string, lastSentSeq: integer, retryAfterMs?: integer }
function Client:_on_lagged(params)
  self.lagged = (self.lagged or 0) + 1
  vim.defer_fn(function()
    local list = self.events[params.runId] or {}
    local after = #list > 0 and list[#list].seq or 0
    self:request("run/subscribe", { runId = params.runId, afterSeq = after }, function(err)
      if err then
        vim.notify("context-sidecar: catching up run " .. params.runId .. ": " .. M.format_error(err),
          vim.log.levels.WARN)
      end
    end)
  end, params.retryAfterMs or 250)
end

--- Call listener for each event of runId already received, then for each new one.
---@param run_id string
---@param listener fun(event: context_sidecar.RunEvent)
function Client:on_run_event(run_id, listener)
  for _, event in ipairs(self.events[run_id] or {}) do
    listener(event)
  end
  local list = self.listeners[run_id] or {}
  self.listeners[run_id] = list
  list[#list + 1] = listener
end

--- Asynchronous request; callback(err, result).
---@param method string
---@param params table?
---@param callback fun(err: table?, result: any)
---@return integer? request_id
function Client:request(method, params, callback)
  if self.exited or self.rpc.is_closing() then
    callback({ code = -32099, message = "sidecar is not running" }, nil)
    return nil
  end
  if type(params) == "table" and next(params) == nil then
    params = vim.empty_dict() -- `{}` would be sent as a JSON array
  end
  local ok, id = self.rpc.request(method, params, callback)
  if not ok then
    callback({ code = -32099, message = "cannot send " .. method }, nil)
    return nil
  end
  return id
end

--- Blocking request (processes events while waiting).
---@param method string
---@param params table?
---@param timeout_ms? integer
---@return any result
---@return table? err
function Client:request_sync(method, params, timeout_ms)
  local done, res, error_ = false, nil, nil
  local id = self:request(method, params, function(err, result)
    done, res, error_ = true, result, err
  end)
  if not vim.wait(timeout_ms or 30000, function()
        return done or self.exited
      end, 10) then
    if id then
      self.rpc.notify("$/cancelRequest", { id = id })
    end
    return nil, { code = -32800, message = method .. " timed out" }
  end
  if not done then
    return nil, { code = -32099, message = "sidecar exited during " .. method }
  end
  return res, error_
end

---@return boolean
function Client:is_running()
  if self.exited then
    return false
  end
  if self.pid then
    return vim.uv.kill(self.pid, 0) == 0
  end
  return not self.rpc.is_closing()
end

--- shutdown + exit; then SIGTERM, then SIGKILL if it is still there.
---@param timeout_ms? integer
function Client:stop(timeout_ms)
  timeout_ms = timeout_ms or 3000
  local function gone()
    return self.exited or (self.pid ~= nil and vim.uv.kill(self.pid, 0) ~= 0)
  end
  if not gone() then
    self:request_sync("shutdown", nil, timeout_ms)
    pcall(self.rpc.notify, "exit", nil)
    vim.wait(timeout_ms, gone, 10)
  end
  if not gone() then
    pcall(self.rpc.terminate)
    vim.wait(timeout_ms, gone, 10)
  end
  if not gone() and self.pid then
    vim.uv.kill(self.pid, "sigkill")
    vim.wait(timeout_ms, gone, 10)
  end
end

return M
