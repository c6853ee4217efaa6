-- End-to-end test of the plugin against a real sidecar.  Run from the repository root:
--   CS_PYTHON=.venv/bin/python CS_STORE=/tmp/store \
--   nvim --headless -u NONE --cmd "set rtp+=editors/neovim" -l editors/neovim/tests/plugin_spec.lua
local python = assert(os.getenv("CS_PYTHON"), "CS_PYTHON not set")
local store = assert(os.getenv("CS_STORE"), "CS_STORE not set")

local failures = 0
local function fail(msg)
  io.stderr:write("FAIL: " .. msg .. "\n")
  failures = failures + 1
  pcall(function() require("context_sidecar").stop() end)
  vim.cmd("cquit 1")
end
local function check(cond, msg)
  if not cond then
    fail(msg)
    error(msg, 2)
  end
  io.stdout:write("ok - " .. msg .. "\n")
end
local function buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end
local function contains(haystack, needle)
  return haystack:find(needle, 1, true) ~= nil
end

vim.cmd("runtime plugin/context_sidecar.lua")
local cs = require("context_sidecar")
local api = require("context_sidecar.api")

local ok, err = xpcall(function()
  check(vim.fn.exists(":ContextSidecar") == 2, ":ContextSidecar is defined")
  -- a run's float: the round's call beside keep-everything, and the session so far
  local keep = { cost = 0.61, ownCost = 0.42, tokens = 9, ownTokens = 8, at = 0, compacted = true,
    session = { calls = 3, cost = 1.21, ownCost = 1.02, compactions = 1 } }
  local keep_lines = require("context_sidecar.explain").keep_everything_lines(keep)
  check(vim.deep_equal(keep_lines, {
    "Keep everything (this call): $0.6100 vs $0.4200 as sent (\u{2212}31%), it would have compacted first",
    "  session: $1.2100 vs $1.0200 over 3 calls (\u{2212}16%); keep-everything would have compacted 1 time(s)",
  }), "the float compares the call and the session with keep-everything:\n" .. table.concat(keep_lines, "\n"))
  check(#require("context_sidecar.explain").keep_everything_lines(vim.NIL) == 0, "and says nothing without the figure")
  local completions = vim.fn.getcompletion("ContextSidecar ", "cmdline")
  check(vim.tbl_contains(completions, "assemble") and vim.tbl_contains(completions, "snapshot"),
    "subcommands complete: " .. table.concat(completions, ","))

  local tool_calls = {}
  cs.setup({
    cmd = { python, "-m", "sidecar", "serve", "--store", store },
    tools = { { name = "read_file", parameters = { type = "object", properties = { path = { type = "string" } } } } },
    approval_required = { "read_file" },
    -- old tool results are masked once the newest 2,000 tokens of tool output are passed
    assembly = { masking = { protectTokens = 2000, batchTokens = 1000 } },
    tool_handler = function(params)
      tool_calls[#tool_calls + 1] = params.arguments.path
      return { content = { { type = "text", text = "contents of " .. params.arguments.path } } }
    end,
  })
  vim.cmd("ContextSidecar start")
  local client = cs.client()
  check(client ~= nil, "sidecar started")
  local pid = client.pid
  check(type(pid) == "number" and vim.uv.kill(pid, 0) == 0, "sidecar pid " .. tostring(pid) .. " is alive")
  local info = api.server_info({})
  check(info and info.pid == pid, "rpc client pid matches server/info pid")

  -- a session with two messages, assembled via the command
  local session = api.session_create({ title = "nvim spec", workspaceRoots = { vim.fn.getcwd() } })
  check(session and session.sessionId, "session created")
  cs.state.session_id = session.sessionId
  local appended = api.session_append({
    sessionId = session.sessionId,
    entries = {
      { kind = "message", role = "user", content = { { type = "text", text = "What does the Makefile do?" } } },
      { kind = "message", role = "assistant", content = { { type = "text", text = "It builds and tests." } } },
    },
  })
  check(appended and appended.headSeq == 2, "two messages appended")

  vim.cmd("edit README.md")
  vim.cmd("ContextSidecar assemble what next?")
  local result = cs.state.assembly
  check(result and result.dashboard, "assembly answered")
  local dash = buf_text(vim.api.nvim_get_current_buf())
  check(vim.api.nvim_win_get_config(0).relative == "editor", "dashboard is a float")
  check(contains(dash, result.dashboard.summary), "dashboard shows the summary")
  for name, tokens in pairs(result.dashboard.categories) do
    check(dash:match("\n" .. name .. "%s+" .. tokens .. "%s") ~= nil, ("category %s %d shown"):format(name, tokens))
  end
  check(contains(dash, "used " .. result.dashboard.used) and contains(dash, "free " .. result.dashboard.free),
    "totals shown")
  check(contains(dash, "█"), "bars drawn")
  check(contains(dash, "Left out:"), "ledger section shown")
  check(contains(dash, "Cache (this turn): read 0 ·") and contains(dash, "first request of the session"),
    "the first assembly of the session reads nothing from the cache:\n" .. dash)
  check(contains(dash, "Diff against the previous turn: none"), "no diff for the first assembly")
  vim.cmd("close")

  -- a scripted run streams into a buffer
  local run_id = cs.run("say hello", { script = { rounds = { { deltas = { "Hel", "lo" } } } } })
  check(run_id ~= nil, "run started")
  local run_buf = vim.api.nvim_get_current_buf()
  check(vim.wait(20000, function()
    local t = buf_text(run_buf)
    return contains(t, "Hello") and contains(t, "run.completed completed")
  end, 20), "run buffer shows Hello and run.completed:\n" .. buf_text(run_buf))
  vim.cmd("close")

  vim.cmd("ContextSidecar snapshot")
  local snap_float = buf_text(vim.api.nvim_get_current_buf())
  check(contains(snap_float, "Left out:"), "snapshot dashboard shown")
  check(contains(snap_float, "Cache (this turn): read ") and contains(snap_float, "Diff against the previous turn"),
    "the snapshot float shows the run's cache prediction and the diff:\n" .. snap_float)
  vim.cmd("close")

  -- a slow run, cancelled
  local deltas = {}
  for i = 1, 200 do
    deltas[i] = "w "
  end
  local slow_id = cs.run("go slow", { script = { rounds = { { deltas = deltas, delayMs = 10 } } } })
  check(slow_id ~= nil, "slow run started")
  local slow_buf = vim.api.nvim_get_current_buf()
  check(vim.wait(10000, function() return contains(buf_text(slow_buf), "w w") end, 10), "slow run streams")
  vim.cmd("ContextSidecar cancel")
  local run = api.run_get({ runId = slow_id })
  check(run and run.status == "cancelled", "slow run ended " .. tostring(run and run.status))
  check(vim.wait(5000, function() return contains(buf_text(slow_buf), "run.completed cancelled") end, 10),
    "run buffer shows run.completed cancelled")
  vim.cmd("close")

  -- a client too slow to read: the sidecar pauses live events (run/lagged), the plugin
  -- catches up from the journal, and every event arrives exactly once, in order
  local big = {}
  for i = 1, 1500 do
    big[i] = string.rep("x", 4000)
  end
  local session_id = cs.ensure_session()
  local started = api.run_start({
    sessionId = session_id,
    userTurn = { { type = "text", text = "flood" } },
    script = { rounds = { { deltas = big } } },
  })
  check(started and started.runId, "flood run started")
  vim.uv.sleep(3000) -- nvim reads nothing meanwhile: the sidecar's backlog passes 4 MiB
  check(vim.wait(60000, function()
    local list = client.events[started.runId] or {}
    return #list > 0 and list[#list].type == "run.completed"
  end, 20), "flood run completed")
  local seqs_ok = true
  for i, event in ipairs(client.events[started.runId]) do
    seqs_ok = seqs_ok and event.seq == i
  end
  check(seqs_ok, "every event once, in order, after catching up")
  check((client.lagged or 0) >= 1, "the sidecar did pause live events (run/lagged)")

  -- the server -> client tool/execute default answer
  local tool = require("context_sidecar.client").default_tool_handler({ runId = "r", callId = "c", name = "x", arguments = {} })
  check(tool.isError and tool.content[1].text == "no tool handler configured", "default tool handler")

  -- approvals: read_file needs one (approval_required); vim.ui.select is stubbed to answer.
  -- A fresh session: the flood's history would make the run compact first.
  cs.state.session_id = nil
  local asked, answer, held, notes = {}, nil, nil, {}
  local real_select, real_notify = vim.ui.select, vim.notify
  vim.notify = function(msg, level)
    notes[#notes + 1] = msg
    return real_notify(msg, level)
  end
  vim.ui.select = function(items, opts, on_choice)
    local float = ""
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      local b = vim.api.nvim_win_get_buf(win)
      if vim.bo[b].filetype == "context_sidecar_approval" and vim.api.nvim_win_get_config(win).relative ~= "" then
        float = buf_text(b)
      end
    end
    local labels = vim.tbl_map(opts.format_item, items)
    asked[#asked + 1] = { labels = labels, prompt = opts.prompt, float = float, statusline = cs.statusline() }
    if answer == nil then
      held = function() on_choice(items[1], 1) end
      return
    end
    for i, item in ipairs(items) do
      if labels[i] == answer then
        return on_choice(item, i)
      end
    end
  end
  local function read(path)
    return { name = "read_file", arguments = { path = path } }
  end
  --- A scripted run through :ContextSidecar's run path; its tool results' isError flags.
  local function approval_run(rounds)
    local id = cs.run("read it", { script = { rounds = rounds } })
    local run_buf = vim.api.nvim_get_current_buf()
    check(vim.wait(20000, function() return contains(buf_text(run_buf), "run.completed") end, 10),
      "approval run completed:\n" .. buf_text(run_buf))
    vim.cmd("close")
    local flags = {}
    for _, e in ipairs(client.events[id]) do
      if e.type == "tool.resultStored" then
        flags[#flags + 1] = e.payload.isError
      end
    end
    return id, flags
  end
  local function last_entries(n)
    local r = api.session_read({ sessionId = cs.state.session_id, beforeSeq = 1000000, limit = n })
    return vim.json.encode(r.entries)
  end

  answer = "Allow once"
  local _, flags = approval_run({ { toolCalls = { read("Makefile") } }, { text = "done" } })
  check(#asked == 1 and vim.deep_equal(asked[1].labels, { "Allow once", "Allow for this session", "Deny" }),
    "asked once with the three choices: " .. vim.inspect(asked))
  check(contains(asked[1].prompt, "read_file"), "the prompt names the tool")
  check(contains(asked[1].float, "read_file") and contains(asked[1].float, 'path: "Makefile"'),
    "the float shows the tool and its arguments:\n" .. asked[1].float)
  check(asked[1].statusline == "ctx: approve read_file?", "statusline while asking: " .. asked[1].statusline)
  check(vim.deep_equal(flags, { false }) and vim.deep_equal(tool_calls, { "Makefile" }), "allowed once: the tool ran")
  check(cs.statusline() == "", "statusline clear after the answer")

  answer = "Deny"
  _, flags = approval_run({ { toolCalls = { read("Makefile") } }, { text = "ok" } })
  check(vim.deep_equal(flags, { true }) and #tool_calls == 1, "denied: the tool did not run")
  check(contains(last_entries(3), "not approved: denied by the user"), "the model is told it was denied")

  -- a cancel while asking: the sidecar's $/cancelRequest takes the question down
  answer, held = nil, nil
  local n_asked = #asked
  local wait_id = cs.run("wait", { script = { rounds = { { toolCalls = { read("Makefile") } }, { text = "never" } } } })
  local wait_buf = vim.api.nvim_get_current_buf()
  check(vim.wait(10000, function() return held ~= nil end, 10), "asked while the run waits")
  check(#client.approvals == 1 and cs.statusline() == "ctx: approve read_file?", "the run waits on the approval")
  vim.cmd("ContextSidecar cancel")
  check(vim.wait(10000, function()
    return #client.approvals == 0 and cs.statusline() == "" and contains(buf_text(wait_buf), "run.completed cancelled")
  end, 10), "the question is withdrawn when the run is cancelled")
  local withdrawn = vim.tbl_filter(function(m) return contains(m, "withdrawn") end, notes)
  check(#withdrawn == 1 and contains(withdrawn[1], "the sidecar withdrew the request"),
    "withdrawn by the sidecar's $/cancelRequest: " .. vim.inspect(withdrawn))
  local floats = vim.tbl_filter(function(win)
    return vim.bo[vim.api.nvim_win_get_buf(win)].filetype == "context_sidecar_approval"
  end, vim.api.nvim_list_wins())
  check(#floats == 0, "the arguments float is closed")
  held() -- a late answer is ignored
  vim.wait(200, function() return false end)
  check(#tool_calls == 1 and #asked == n_asked + 1, "the late answer ran nothing")
  check(api.run_get({ runId = wait_id }).status == "cancelled", "the waiting run was cancelled")
  vim.cmd("close")

  answer = "Allow for this session"
  n_asked = #asked
  _, flags = approval_run({ { toolCalls = { read("README.md") } }, { toolCalls = { read("pyproject.toml") } }, { text = "ok" } })
  check(vim.deep_equal(flags, { false, false }), "allowed for the session: both calls ran")
  _, flags = approval_run({ { toolCalls = { read("Makefile") } }, { text = "ok" } })
  check(vim.deep_equal(flags, { false }) and #asked == n_asked + 1, "asked once for the whole session")
  check(vim.deep_equal(tool_calls, { "Makefile", "README.md", "pyproject.toml", "Makefile" }), "tool calls in order")
  -- the last run had two rounds: its snapshot float diffs the second against the first
  vim.cmd("ContextSidecar snapshot")
  local two_rounds = buf_text(vim.api.nvim_get_current_buf())
  local m_before, m_after = two_rounds:match("Diff against the previous turn: identical prefix %d+ units, %d+ tokens · messages (%d+) %-> (%d+)")
  check(m_before and tonumber(m_after) == tonumber(m_before) + 2,
    "the snapshot float diffs the run's last round against its first:\n" .. two_rounds)
  check(contains(two_rounds, "Cache (this turn): read ") and not contains(two_rounds, "first request of the session"),
    "and shows the last round's cache prediction")
  vim.cmd("close")

  -- the sidecar's built-in tools (on by default, in "ask" mode; the config's read_file replaces
  -- the built-in one): a listing runs unasked, a write is asked with what it would write
  local ws = vim.fn.tempname()
  vim.fn.mkdir(ws, "p")
  vim.fn.writefile({ "old line" }, ws .. "/notes.txt")
  local ws_session = api.session_create({ title = "builtin", workspaceRoots = { ws } })
  cs.state.session_id = ws_session.sessionId
  answer = "Allow once"
  n_asked = #asked
  local builtin_id = cs.run("write it", { script = { rounds = {
    { toolCalls = { { id = "p1", name = "update_plan", arguments = { entries = {
      { content = "look around", status = "in_progress" }, { content = "write notes.txt", status = "pending" } } } } } },
    { toolCalls = { { id = "l1", name = "list_dir", arguments = {} } } },
    { toolCalls = { { id = "p2", name = "update_plan", arguments = { entries = {
      { content = "look around", status = "completed" }, { content = "write notes.txt", status = "in_progress" } } } } } },
    { toolCalls = { { id = "w1", name = "write_file", arguments = { path = "notes.txt", content = "new line\n" } } } },
    { text = "written" },
  } } })
  local builtin_buf = vim.api.nvim_get_current_buf()
  check(vim.wait(20000, function() return contains(buf_text(builtin_buf), "run.completed") end, 10),
    "builtin run completed:\n" .. buf_text(builtin_buf))
  check(#asked == n_asked + 1, "only the write was asked: " .. vim.inspect(asked))
  local q = asked[#asked]
  check(q.prompt == "context-sidecar: Write notes.txt?", "the prompt says what the write does: " .. q.prompt)
  check(contains(q.float, "- old line") and contains(q.float, "+ new line"), "the float shows the change:\n" .. q.float)
  local run_text = buf_text(builtin_buf)
  check(contains(run_text, "tool.callRequested List .") and contains(run_text, "tool.callRequested Write notes.txt"),
    "the run float titles the built-in calls:\n" .. run_text)
  check(contains(run_text, "tool.approval write_file: asked (ask mode), approved"), "and shows the approval:\n" .. run_text)
  check(contains(run_text, "── plan ──\n[x] look around\n[~] write notes.txt\n"), "the float shows the last plan:\n" .. run_text)
  check(contains(run_text, "plan.updated 0/2 done") and contains(run_text, "plan.updated 1/2 done"),
    "and each update as an event:\n" .. run_text)
  check(vim.fn.readfile(ws .. "/notes.txt")[1] == "new line", "the file was written")
  check(api.run_get({ runId = builtin_id }).status == "completed", "the builtin run completed")
  vim.cmd("close")
  vim.fn.delete(ws, "rf")
  vim.ui.select, vim.notify = real_select, real_notify

  -- what the sidecar explains, in the float: the cache prediction, masking, the window, the diff
  local masking_session = api.session_create({ title = "masking", workspaceRoots = { vim.fn.getcwd() } })
  cs.state.session_id = masking_session.sessionId
  local entries = {}
  for i = 0, 7 do
    local call_id = "m" .. i
    vim.list_extend(entries, {
      { kind = "message", role = "user", content = { { type = "text", text = "step " .. i } } },
      { kind = "message", role = "assistant", content = {
        { type = "toolCall", callId = call_id, name = "read_file", arguments = { path = "src/m" .. i .. ".py" } } } },
      { kind = "message", role = "user", content = {
        { type = "toolResult", callId = call_id, content = { { type = "text", text = string.rep("code ", 800) } } } } },
      { kind = "message", role = "assistant", content = { { type = "text", text = "done " .. i } } },
    })
  end
  check(api.session_append({ sessionId = masking_session.sessionId, entries = entries }), "8 tool turns appended")
  vim.cmd("ContextSidecar assemble next?")
  vim.cmd("close")
  vim.cmd("ContextSidecar assemble next?") -- the same turn again: read from the cache
  local second = cs.state.assembly
  local float = buf_text(vim.api.nvim_get_current_buf())
  local cache = second.cache
  check(cache and cache.againstPrevious and cache.readTokens > 0 and cache.cost, "the second assembly reads from the cache")
  check(contains(float, ("Cache (this turn): read %d · write %d · uncached %d of %d tokens"):format(
    cache.readTokens, cache.writeTokens, cache.uncachedTokens, cache.inputTokens)), "the float shows the cache prediction:\n" .. float)
  check(contains(float, ("cost $%.4f = "):format(cache.cost.total)) and contains(float, "prices of " .. cache.cost.pricesAsOf),
    "the float shows the turn's cost")
  local masking = second.dashboard.masking
  local masked = vim.tbl_filter(function(i) return i.visibility == "masked" end, second.ledger)
  check(masking and #masked >= 4 and masking.maskedResults == #masked, "masked results: " .. #masked)
  check(contains(float, ("Masking: %d tool results masked (%d tokens); newest 2000 kept; next move after %d tokens"):format(
    #masked, masking.maskedTokens, masking.nextMoveIn)), "the float shows masking")
  for _, item in ipairs(masked) do
    check(contains(float, ("seq %d"):format(item.fromSeq)) and contains(float, item.itemId), "the float lists masked " .. item.itemId)
  end
  local w = second.dashboard.historyWindow
  check(contains(float, ("Window: whole history shown; moves after %d %s, by %d"):format(w.roomLeft, w.unit, w.quantum)),
    "the float shows where the window starts and when it moves")
  check(contains(float, "Diff against the previous assembly: ") and contains(float, "no ledger changes"),
    "the float shows the diff against the previous assembly")
  vim.cmd("close")

  -- :ContextSidecar recover: pick a masked result; the next assembly shows it whole
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    on_choice(items[1], 1)
  end
  vim.cmd("ContextSidecar recover")
  check(offered and #offered == #masked and contains(offered[1], "masked"), "recover offers the masked results: " .. vim.inspect(offered))
  local picked = require("context_sidecar.explain").recoverable(second.ledger)[1]
  check(vim.wait(10000, function() return cs.state.assembly ~= second end, 10), "assembled again after the recover")
  vim.ui.select = real_select
  local third = cs.state.assembly
  check(contains(vim.json.encode(second.messages), picked.itemId), "the picked result was a placeholder")
  check(not contains(vim.json.encode(third.messages), picked.itemId), "the recovered result is shown whole")
  local kept = vim.tbl_filter(function(i) return i.itemId == picked.itemId end, third.ledger)
  check(#kept == 1 and kept[1].visibility == "visible", "visible in the ledger now: " .. vim.inspect(kept))
  local after_float = buf_text(vim.api.nvim_get_current_buf())
  check(contains(after_float, picked.itemId .. ": masked -> visible"), "the diff shows it coming back:\n" .. after_float)
  vim.cmd("close")

  vim.cmd("checkhealth context_sidecar")
  local health = buf_text(vim.api.nvim_get_current_buf())
  check(contains(health, "protocolVersion 1"), "health reports the handshake")
  check(not contains(health, "ERROR"), "health has no ERROR:\n" .. health)

  vim.cmd("ContextSidecar stop")
  check(cs.client() == nil, "plugin has no client after stop")
  check(vim.uv.kill(pid, 0) ~= 0, "sidecar process " .. pid .. " is gone")
  check(client.exit_code == 0, "sidecar exited 0 after shutdown + exit (got " .. tostring(client.exit_code) .. ")")
end, debug.traceback)

if not ok then
  if failures == 0 then
    fail(tostring(err))
  else
    io.stderr:write(tostring(err) .. "\n")
  end
  vim.cmd("cquit 1")
end
io.stdout:write("all passed\n")
vim.cmd("qall!")
