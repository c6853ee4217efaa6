--- :checkhealth context_sidecar
local M = {}

function M.check()
  local health = vim.health
  health.start("context-sidecar")

  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()) .. " (>= 0.10)")
  else
    health.error("Neovim >= 0.10 is required (vim.lsp.rpc.start(cmd, dispatchers), vim.uv)")
    return
  end

  local plugin = require("context_sidecar")
  local cmd = plugin.command_line()
  if vim.fn.executable(cmd[1]) == 1 then
    health.ok(("sidecar command is executable: %s"):format(vim.fn.exepath(cmd[1])))
  else
    health.error(("sidecar command is not executable: %s"):format(cmd[1]),
      { "install context-sidecar (pip install -e .) or set cmd in require('context_sidecar').setup()" })
    return
  end

  local client, err = require("context_sidecar.client").start({ cmd = cmd, cwd = plugin.config.cwd })
  if not client then
    health.error("the sidecar did not initialize: " .. tostring(err), { table.concat(cmd, " ") })
    return
  end
  local caps = client.capabilities or {}
  if caps.protocolVersion == 1 then
    health.ok(("sidecar %s answers initialize with protocolVersion 1 (schema %s, store %s)"):format(
      tostring(caps.serverVersion), tostring(caps.schemaHash), tostring(caps.storePath)))
  else
    health.error("unexpected protocolVersion " .. tostring(caps.protocolVersion))
  end
  client:stop()
end

return M
