-- Neovim's own LSP client, configured the way its manual says (`:h vim.lsp.start`), against the
-- real sidecar: no plugin of ours.  Driven by tests/e2e/test_real_clients.py:
--   nvim --headless -u NONE -i NONE -l nvim_plain_lsp.lua
-- with CS_PYTHON, CS_STORE, CS_ROOT (a project directory holding main.py) and CS_RESULT (where
-- to write what was observed, as JSON; the Python side asserts on it).
local python = assert(os.getenv("CS_PYTHON"), "CS_PYTHON not set")
local store = assert(os.getenv("CS_STORE"), "CS_STORE not set")
local root = assert(os.getenv("CS_ROOT"), "CS_ROOT not set")
local result_path = assert(os.getenv("CS_RESULT"), "CS_RESULT not set")

local result = { steps = {} }
local function step(name) table.insert(result.steps, name) end
local function messages() return vim.api.nvim_exec2("messages", { output = true }).output end
local function write_result()
  local file = assert(io.open(result_path, "w"))
  file:write(vim.json.encode(result))
  file:close()
end

local ok, err = xpcall(function()
  vim.cmd.edit(vim.fs.joinpath(root, "main.py"))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start({
    name = "context-sidecar",
    cmd = { python, "-m", "sidecar", "serve", "--store", store },
    root_dir = root,
    on_exit = function(code, signal) result.exit = { code = code, signal = signal } end,
  })
  assert(client_id, "vim.lsp.start returned no client")
  local client = assert(vim.lsp.get_client_by_id(client_id))
  assert(vim.wait(15000, function() return client.initialized end, 10), "client never initialized")
  step("initialized")
  result.attached = client.attached_buffers[buf] == true

  -- what an author's plugin sends on its own, with Lua's `{}` (`[]` on the wire) for params,
  -- and pygls' document handlers' food (issue 20, items 1 and 2): once right after
  -- initialize, once the full server has loaded; none of it may reach lsp.log as [ERROR]
  local function chatter()
    client:notify("workspace/didChangeConfiguration", {})
    client:notify("initialized", {})
    client:notify("textDocument/didSave", { uri = "x" })
    client:notify("$/progress", { x = 1 })
    client:notify("textDocument/didChange", {
      textDocument = { uri = "file:///x", version = 2 },
      contentChanges = { { text = "a" } },
    })
    client:notify("window/workDoneProgress/cancel", { token = "t" })
  end
  chatter()
  step("chatter before the server loaded")

  -- edit and write the real file several times (didChange / didSave go out on each)
  for i = 1, 3 do
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, { ("print(%d)"):format(i) })
    vim.cmd.write()
    vim.wait(50)
  end
  step("written")
  result.file = vim.fn.readfile(vim.fs.joinpath(root, "main.py"))

  assert(client:request_sync("session/create", { title = "loaded" }, 10000, buf), "session/create")
  -- only the full server answers run/*: once this is answered it has loaded
  assert(client:request_sync("run/list", vim.empty_dict(), 10000, buf), "run/list")
  chatter()
  step("chatter once the server loaded")
  -- no execute-command capability is advertised: a method the server does not have (item 3)
  local command = client:request_sync("workspace/executeCommand", { command = "x" }, 10000, buf)
  result.execute_command = command and command.err
    and { code = command.err.code, data_code = command.err.data and command.err.data.code }

  -- the server answers in order: once a request after the writes is answered, whatever the
  -- writes caused (a window/showMessage, say) has reached the client too
  local empty_dict = client:request_sync("server/ping", vim.empty_dict(), 10000, buf)
  result.ping_empty_dict = empty_dict and { err = empty_dict.err, ok = empty_dict.result ~= nil }
  -- what an author writes first: `{}`, which vim.json encodes as `[]`
  local empty_table = client:request_sync("server/ping", {}, 10000, buf)
  result.ping_empty_table = empty_table and { err = empty_table.err, ok = empty_table.result ~= nil }
  vim.wait(200) -- let scheduled notifications (vim.notify from showMessage) run
  result.still_attached = client.attached_buffers[buf] == true and not client:is_stopped()
  result.messages_while_attached = messages()
  step("pinged")

  client:stop()
  assert(vim.wait(15000, function() return result.exit ~= nil end, 10), "server never exited")
  vim.wait(200)
  step("stopped")
end, debug.traceback)

result.error = (not ok) and tostring(err) or nil
result.messages = messages()
result.log = vim.lsp.log.get_filename()
write_result()
