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
---@field lagged integer?  how many times the sidecar paused live events for us (we caught up each time)
local Client = {}
Client.__index = Client

---@param params context_sidecar.ToolExecuteParams
---@return context_sidecar.ToolExecuteResult
local function default_tool_handler(params)
  return {
    content = { { type = "text", text = "no tool handler configured" } },
    isError = true,
  }
end
M.default_tool_handler = default_tool_handler

--- The OS pid of the process behind a vim.lsp.rpc client (its transport's vim.system object).
---@param rpc vim.lsp.rpc.PublicClient
---@return integer?
local function rpc_pid(rpc)
  for _, fn in ipairs({ rpc.is_closing, rpc.terminate }) do
    local i = 1
    while true do
      local name, value = debug.getupvalue(fn, i)
      if not name then
        break
      end
      if name == "client" and type(value) == "table" and value.transport then
        local sysobj = value.transport.sysobj
        if sysobj and sysobj.pid then
          return sysobj.pid
        end
      end
      i = i + 1
    end
  end
  return nil
end

---@class context_sidecar.StartOpts
---@field cmd string[]
---@field cwd? string
---@field tool_handler? fun(params: context_sidecar.ToolExecuteParams): context_sidecar.ToolExecuteResult
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
  }, Client)

  local dispatchers = {
    notification = function(method, params)
      if method == "run/event" then
        self:_on_run_event(params)
      elseif method == "run/lagged" then
        self:_on_lagged(params)
      end
    end,
    server_request = function(method, params)
      if method == "tool/execute" then
        local ok, result = pcall(self.tool_handler, params)
        if not ok then
          return { content = { { type = "text", text = tostring(result) } }, isError = true }
        end
        return result
      end
      return nil, vim.lsp.rpc.rpc_response_error(-32601, "method not supported by this client: " .. method)
    end,
    on_exit = function(code, signal)
      self.exited = true
      self.exit_code = code
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
