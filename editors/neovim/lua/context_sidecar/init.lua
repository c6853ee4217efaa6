--- context-sidecar for Neovim: setup, the running client, and the :ContextSidecar subcommands.
local M = {}

---@class context_sidecar.Config
---@field cmd string[]  command starting the sidecar (default {"context-sidecar", "serve"})
---@field store? string  store directory (passed as --store)
---@field log_level? "warn"|"info"|"debug"  sidecar log level (-v / -vv)
---@field cwd? string  working directory of the sidecar process
---@field tool_handler? fun(params: context_sidecar.ToolExecuteParams): context_sidecar.ToolExecuteResult
---@field tools? context_sidecar.ToolDefinition[]  tools offered to runs (tool_handler executes them)
---@field approval_required? string[]  tool names whose every call waits for the user's approval
---@field approval_handler? context_sidecar.ApprovalHandler  default: ask (context_sidecar.approvals)
---@field builtin_tools? "ask"|"accept_edits"|"auto"|"plan"|"read_only"|"allow_all"|"off"  the sidecar's own workspace tools (list_dir, glob, grep, read_file, write_file, edit_file, run_command, recall, and update_plan: the model's todo list, shown in the run float) and the approval mode they run in (default "ask": reads never ask, writes and commands do; "auto": writes run and commands run in a sandbox without asking, asked only to leave it; "plan": read-only, the rest refused); a tool of `tools` with the same name replaces the built-in one
---@field assembly? context_sidecar.PromptProfile  how to assemble (model, historyWindow, masking, ...): context/assemble's profile, run/start's profile.assembly

---@type context_sidecar.Config
M.config = { cmd = { "context-sidecar", "serve" } }

--- The sidecar's built-in tools, in the order it offers them.
M.BUILTIN_TOOLS = { "list_dir", "glob", "grep", "read_file", "write_file", "edit_file", "run_command", "recall", "update_plan" }

--- run/start's builtinTools for the config: nil when off; the built-in tools less those the
--- config's own `tools` name (those run in Neovim, through tool_handler).
---@param config context_sidecar.Config
---@return context_sidecar.BuiltinTools?
function M.builtin_tools(config)
  local mode = config.builtin_tools or "ask"
  if mode == "off" then
    return nil
  end
  local own = {}
  for _, t in ipairs(config.tools or {}) do
    own[t.name] = true
  end
  local names = vim.tbl_filter(function(name) return not own[name] end, M.BUILTIN_TOOLS)
  return { tools = names, mode = mode }
end

---@class context_sidecar.State
---@field client context_sidecar.Client?
---@field session_id string?
---@field run_id string?  the active (last started) run
---@field assembly context_sidecar.ContextAssembleResult?
---@field assembly_params context_sidecar.ContextAssembleParams?  what the last assembly was asked (recover assembles again)
---@field assembly_diff table?  the last assembly against the session's previous one (explain.assembly_diff)
---@field shown {session_id: string, ledger: context_sidecar.LedgerItem[], from: "assembly"|"snapshot"}?  the ledger the float showed last: what recover offers
M.state = {}

---@param opts? context_sidecar.Config
function M.setup(opts)
  M.config = vim.tbl_extend("force", { cmd = { "context-sidecar", "serve" } }, opts or {})
end

--- The full command line: cmd plus --store and the verbosity flag.
---@return string[]
function M.command_line()
  local cmd = vim.deepcopy(M.config.cmd)
  if M.config.store then
    vim.list_extend(cmd, { "--store", M.config.store })
  end
  local verbosity = ({ info = "-v", debug = "-vv" })[M.config.log_level or "warn"]
  if verbosity then
    cmd[#cmd + 1] = verbosity
  end
  return cmd
end

---@return context_sidecar.Client?
function M.client()
  local c = M.state.client
  if c and not c.exited then
    return c
  end
  return nil
end

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify("context-sidecar: " .. msg, level or vim.log.levels.INFO)
end

--- Start the sidecar (no-op if running).
---@return context_sidecar.Client?
function M.start()
  if M.client() then
    return M.client()
  end
  local client, err = require("context_sidecar.client").start({
    cmd = M.command_line(),
    cwd = M.config.cwd,
    tool_handler = M.config.tool_handler,
    approval_handler = M.config.approval_handler or require("context_sidecar.approvals").handler,
  })
  if not client then
    notify(err or "start failed", vim.log.levels.ERROR)
    return nil
  end
  M.state.client = client
  return client
end

function M.stop()
  local client = M.state.client
  if client then
    client:stop()
  end
  M.state = {}
  require("context_sidecar.approvals").forget()
end

--- For 'statusline' / 'winbar': "" or "ctx: approve read_file?" while a run waits on you
--- (`set statusline+=%{v:lua.require'context_sidecar'.statusline()}`; the User event
--- ContextSidecarApproval fires when it changes).
---@return string
function M.statusline()
  local waiting = require("context_sidecar.approvals").statusline()
  return waiting ~= "" and ("ctx: " .. waiting) or ""
end

---@return context_sidecar.Client?
local function ensure_started()
  return M.client() or M.start()
end

--- The current session, creating one rooted at the cwd if there is none.
---@return string?
function M.ensure_session()
  if M.state.session_id then
    return M.state.session_id
  end
  local session, err = require("context_sidecar.api").session_create({
    title = vim.fn.fnamemodify(vim.fn.getcwd(), ":t"),
    workspaceRoots = { vim.fn.getcwd() },
  })
  if not session then
    notify("session/create: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
    return nil
  end
  M.state.session_id = session.sessionId
  return session.sessionId
end

---@param text string
---@return context_sidecar.ContentPart[]
local function user_turn(text)
  return { { type = "text", text = text } }
end

--- Assemble the next turn for the current session with the current buffer as a mentioned path.
---@param text? string
---@return context_sidecar.ContextAssembleResult?
function M.assemble(text)
  if not ensure_started() then
    return nil
  end
  local session_id = M.ensure_session()
  if not session_id then
    return nil
  end
  local path = vim.api.nvim_buf_get_name(0)
  ---@type context_sidecar.ContextAssembleParams
  local params = {
    sessionId = session_id,
    userTurn = user_turn(text and text ~= "" and text or "(next turn)"),
    cwd = vim.fn.getcwd(),
    mentionedPaths = path ~= "" and { path } or nil,
    profile = M.config.assembly and next(M.config.assembly) and M.config.assembly or nil,
  }
  return M.assemble_with(params)
end

--- context/assemble with `params`, remembered with its diff against the session's previous
--- assembly, and shown in the dashboard float.
---@param params context_sidecar.ContextAssembleParams
---@return context_sidecar.ContextAssembleResult?
function M.assemble_with(params)
  local result, err = require("context_sidecar.api").context_assemble(params)
  if not result then
    notify("context/assemble: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
    return nil
  end
  local previous = M.state.assembly_params and M.state.assembly_params.sessionId == params.sessionId
    and M.state.assembly or nil
  M.state.assembly = result
  M.state.assembly_params = params
  M.state.assembly_diff = previous and require("context_sidecar.explain").assembly_diff(previous, result) or nil
  M.state.shown = { session_id = params.sessionId, ledger = result.ledger, from = "assembly" }
  require("context_sidecar.ui").show_dashboard(result, nil, { diff = M.state.assembly_diff })
  return result
end

function M.dashboard()
  if M.state.assembly then
    require("context_sidecar.ui").show_dashboard(M.state.assembly, nil, { diff = M.state.assembly_diff })
  else
    M.assemble()
  end
end

--- Start a run for the current session and stream it into a float.
---@param text string
---@param extra? table  more run/start params (e.g. script for the scripted provider)
---@return string? run_id
function M.run(text, extra)
  local client = ensure_started()
  if not client then
    return nil
  end
  local session_id = M.ensure_session()
  if not session_id then
    return nil
  end
  ---@type context_sidecar.RunStartParams
  local params = vim.tbl_extend("force", {
    sessionId = session_id,
    userTurn = user_turn(text),
    tools = M.config.tools,
    approvalRequired = M.config.approval_required,
    builtinTools = M.builtin_tools(M.config),
    profile = M.config.assembly and next(M.config.assembly) and { assembly = M.config.assembly } or nil,
  }, extra or {})
  local result, err = require("context_sidecar.api").run_start(params)
  if not result then
    notify("run/start: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
    return nil
  end
  M.state.run_id = result.runId
  require("context_sidecar.ui").stream_run(client, result.runId)
  return result.runId
end

---@return context_sidecar.Run?
function M.cancel()
  if not M.state.run_id then
    notify("no active run", vim.log.levels.WARN)
    return nil
  end
  local run, err = require("context_sidecar.api").run_cancel({ runId = M.state.run_id })
  if not run then
    notify("run/cancel: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
    return nil
  end
  notify("run " .. run.runId .. " " .. run.status)
  return run
end

--- Pick the current session among the stored ones.
function M.sessions()
  if not ensure_started() then
    return
  end
  local result, err = require("context_sidecar.api").session_list({ limit = 100 })
  if not result then
    notify("session/list: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
    return
  end
  vim.ui.select(result.sessions, {
    prompt = "context-sidecar session",
    format_item = function(s)
      return ("%s  %s  (%d entries)%s"):format(s.sessionId, s.title, s.headSeq,
        s.sessionId == M.state.session_id and "  *" or "")
    end,
  }, function(choice)
    if choice then
      M.state.session_id = choice.sessionId
      M.state.assembly, M.state.assembly_params, M.state.assembly_diff, M.state.shown = nil, nil, nil, nil
    end
  end)
end

--- Show the dashboard of the snapshot the active run last assembled.
function M.snapshot()
  local client = M.client()
  local run_id = M.state.run_id
  -- a run's snapshots are not in the session's snapshot index (snapshot/assemble's are): the
  -- diff is against the run's previous round, named explicitly
  local snapshot_id, before, cache, keep
  local explain = require("context_sidecar.explain")
  for _, event in ipairs(client and run_id and client.events[run_id] or {}) do
    if event.type == "context.assembled" and event.payload.snapshotId then
      before, snapshot_id, cache, keep = snapshot_id, event.payload.snapshotId, nil, nil
    elseif event.type == "model.completed" and event.payload.agent == nil then
      cache = explain.value(event.payload.predictedCache) -- of the round assembled last
      keep = explain.value(event.payload.keepEverything)
    end
  end
  if not snapshot_id then
    notify("no snapshot yet: start a run first", vim.log.levels.WARN)
    return
  end
  local snap, err = require("context_sidecar.api").snapshot_get({ snapshotId = snapshot_id })
  if not snap then
    notify("snapshot/get: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
    return
  end
  local diff, diff_err = require("context_sidecar.api").snapshot_diff({ to = snapshot_id, from = before })
  if not diff then
    notify("snapshot/diff: " .. require("context_sidecar.client").format_error(diff_err), vim.log.levels.WARN)
  end
  M.state.shown = { session_id = snap.sessionId, ledger = snap.ledger, from = "snapshot" }
  require("context_sidecar.ui").show_dashboard(snap, "snapshot " .. snapshot_id, { cache = cache, diff = diff, keep = keep })
end

--- Pick a masked or dropped item of the ledger shown last (vim.ui.select) and bring it back
--- (session/recover); after an assembly, the same turn is assembled again to show it.
function M.recover()
  local shown = M.state.shown
  if not (shown and M.client()) then
    notify("nothing to recover yet: :ContextSidecar assemble (or run) first", vim.log.levels.WARN)
    return
  end
  local explain = require("context_sidecar.explain")
  local items = explain.recoverable(shown.ledger)
  if #items == 0 then
    notify("nothing is masked or dropped")
    return
  end
  vim.ui.select(items, {
    prompt = "context-sidecar: recover (shown in full from the next assembly)",
    format_item = function(item)
      return ("%-8s %-12s %6d tokens  %s"):format(item.visibility, explain.where(item), item.tokens, item.itemId)
    end,
  }, function(choice)
    if not choice then
      return
    end
    local params = { sessionId = shown.session_id, target = { kind = "item", itemId = choice.itemId } }
    require("context_sidecar.api").session_recover(params, function(err)
      vim.schedule(function()
        if err then
          notify("session/recover: " .. require("context_sidecar.client").format_error(err), vim.log.levels.ERROR)
          return
        end
        notify("recovered " .. choice.itemId)
        local again = M.state.assembly_params
        if shown.from == "assembly" and again and again.sessionId == shown.session_id then
          M.assemble_with(again)
        end
      end)
    end)
  end)
end

M.subcommands = {
  start = function() M.start() end,
  stop = function() M.stop() end,
  sessions = function() M.sessions() end,
  assemble = function(args) M.assemble(args) end,
  run = function(args)
    if args == "" then
      notify("usage: :ContextSidecar run <text>", vim.log.levels.ERROR)
      return
    end
    M.run(args)
  end,
  cancel = function() M.cancel() end,
  dashboard = function() M.dashboard() end,
  snapshot = function() M.snapshot() end,
  recover = function() M.recover() end,
}

--- Entry point of :ContextSidecar {subcommand} [args].
---@param line string
function M.command(line)
  local name, args = line:match("^%s*(%S+)%s*(.-)%s*$")
  local fn = name and M.subcommands[name]
  if not fn then
    notify("unknown subcommand: " .. tostring(name), vim.log.levels.ERROR)
    return
  end
  fn(args)
end

return M
