if vim.g.loaded_context_sidecar then
  return
end
vim.g.loaded_context_sidecar = true

local subcommands = { "start", "stop", "sessions", "assemble", "run", "cancel", "dashboard", "snapshot", "recover", "rewind" }

vim.api.nvim_create_user_command("ContextSidecar", function(opts)
  require("context_sidecar").command(opts.args)
end, {
  nargs = "+",
  desc = "context-sidecar: start|stop|sessions|assemble|run <text>|cancel|dashboard|snapshot|recover|rewind",
  complete = function(arg_lead, cmd_line)
    if cmd_line:match("^%s*%S+%s+%S+%s") then
      return {}
    end
    return vim.tbl_filter(function(s)
      return vim.startswith(s, arg_lead)
    end, subcommands)
  end,
})
