--- What an assembly explains, in lines for the dashboard float: the cache prediction of the turn,
--- the history window, masking and the masked results, and the diff against the previous turn
--- (snapshot/diff for a stored snapshot; for two context/assemble answers of a session, the
--- ledger items whose visibility changed). Also which items session/recover brings back.
local M = {}

--- JSON null arrives as vim.NIL: nil here.
---@generic T
---@param value T
---@return T?
local function v(value)
  if value == vim.NIL then
    return nil
  end
  return value
end
M.value = v

--- Visibilities session/recover undoes: a masked tool result is shown in full, a drop undone.
M.RECOVERABLE = { masked = true, dropped = true }

---@param n number?
---@return string
local function cost(n)
  return ("$%.4f"):format(n or 0)
end

--- Where a ledger item is: its locator, else "seq N" / "seq N-M", else its id.
---@param item context_sidecar.LedgerItem|context_sidecar.LedgerChange
---@return string
function M.where(item)
  if v(item.locator) then
    return item.locator
  end
  if v(item.fromSeq) then
    if v(item.throughSeq) and item.throughSeq ~= item.fromSeq then
      return ("seq %d-%d"):format(item.fromSeq, item.throughSeq)
    end
    return ("seq %d"):format(item.fromSeq)
  end
  return item.itemId
end

--- The ledger items a recover brings back: masked first, then dropped; oldest first.
---@param ledger context_sidecar.LedgerItem[]
---@return context_sidecar.LedgerItem[]
function M.recoverable(ledger)
  local items = vim.tbl_filter(function(item)
    return M.RECOVERABLE[item.visibility] == true
  end, ledger or {})
  table.sort(items, function(a, b)
    local ra, rb = a.visibility == "masked" and 0 or 1, b.visibility == "masked" and 0 or 1
    if ra ~= rb then
      return ra < rb
    end
    return (v(a.fromSeq) or -1) < (v(b.fromSeq) or -1)
  end)
  return items
end

--- How a context/assemble answer differs from the session's previous one, in SnapshotDiff's
--- terms (fromSnapshot nil: there is no stored snapshot; the cache's firstChange says where the
--- prompt first differs): ledger items whose visibility changed, and the sizes.
---@param before context_sidecar.ContextAssembleResult
---@param after context_sidecar.ContextAssembleResult
---@return table
function M.assembly_diff(before, after)
  local old = {}
  for _, item in ipairs(before.ledger or {}) do
    old[item.itemId] = item
  end
  local changes = {}
  for _, item in ipairs(after.ledger or {}) do
    local prev = old[item.itemId]
    old[item.itemId] = nil
    if not prev or prev.visibility ~= item.visibility then
      changes[#changes + 1] = { itemId = item.itemId, kind = item.kind, locator = item.locator,
        fromSeq = item.fromSeq, throughSeq = item.throughSeq, before = prev and prev.visibility, after = item.visibility }
    end
  end
  for _, prev in ipairs(before.ledger or {}) do
    if old[prev.itemId] then
      changes[#changes + 1] = { itemId = prev.itemId, kind = prev.kind, locator = prev.locator,
        fromSeq = prev.fromSeq, throughSeq = prev.throughSeq, before = prev.visibility }
    end
  end
  return {
    ledgerChanges = changes,
    messagesBefore = #(before.messages or {}),
    messagesAfter = #(after.messages or {}),
    totalTokensBefore = before.dashboard.used,
    totalTokensAfter = after.dashboard.used,
  }
end

--- The cache prediction (CacheAccounting) of this turn.
---@param cache context_sidecar.CacheAccounting?
---@return string[]
function M.cache_lines(cache)
  cache = v(cache)
  if not cache then
    return { "Cache (this turn): no prediction" }
  end
  local lines = {
    ("Cache (this turn): read %d · write %d · uncached %d of %d tokens"):format(
      cache.readTokens, cache.writeTokens, cache.uncachedTokens, cache.inputTokens),
  }
  local c = v(cache.cost)
  if c then
    lines[#lines + 1] = ("  cost %s = %s input + %s cache write + %s cache read (%s %s, prices of %s)"):format(
      cost(c.total), cost(c.input), cost(c.cacheWrite), cost(c.cacheRead), cache.provider, cache.model, c.pricesAsOf)
  else
    lines[#lines + 1] = ("  cost unknown: %s is not in the price table"):format(cache.model)
  end
  if not cache.againstPrevious then
    lines[#lines + 1] = "  first request of the session: nothing to read yet"
  elseif v(cache.firstChange) then
    lines[#lines + 1] = "  first change: " .. cache.firstChange .. " (the previous request's cache stops here)"
  else
    lines[#lines + 1] = "  first change: none (the previous request is repeated)"
  end
  return lines
end

--- How much more (+) or less (−) `own` cost than `keep`: "-31%", "+4%".
---@param own number
---@param keep number
---@return string
local function change(own, keep)
  local pct = keep > 0 and math.floor((own / keep - 1) * 100 + 0.5) or 0
  if pct < 0 then
    return ("\u{2212}%d%%"):format(-pct)
  end
  return (pct > 0 and "+%d%%" or "\u{00b1}%d%%"):format(pct)
end

--- The round's call beside keep-everything-then-compact (KeepEverythingCall): the call, and the
--- session so far, both priced alike (the reference cache simulator, the real times of the calls).
---@param keep context_sidecar.KeepEverythingCall?
---@return string[]
function M.keep_everything_lines(keep)
  keep = v(keep)
  if not keep then
    return {}
  end
  local s = keep.session
  return {
    ("Keep everything (this call): %s vs %s as sent (%s)%s"):format(cost(keep.cost), cost(keep.ownCost),
      change(keep.ownCost, keep.cost), keep.compacted and ", it would have compacted first" or ""),
    ("  session: %s vs %s over %d calls (%s); keep-everything would have compacted %d time(s)"):format(cost(s.cost),
      cost(s.ownCost), s.calls, change(s.ownCost, s.cost), s.compactions or 0),
  }
end

--- Where the history window starts and when it moves (WindowState).
---@param w context_sidecar.WindowState?
---@return string
function M.window_line(w)
  w = v(w)
  if not w then
    return "Window: -"
  end
  local start = v(w.startSeq) and ("starts at seq %d"):format(w.startSeq) or "whole history shown"
  return ("Window: %s; moves after %d %s, by %d (bound by %s, limit %d)"):format(
    start, w.roomLeft, w.unit, w.quantum, w.boundBy, w.limit)
end

--- Observation masking now (MaskingState, nil when off) and each masked result.
---@param masking context_sidecar.MaskingState?
---@param ledger context_sidecar.LedgerItem[]
---@return string[]
function M.masking_lines(masking, ledger)
  masking = v(masking)
  if not masking then
    return { "Masking: off" }
  end
  local lines = {
    ("Masking: %d tool results masked (%d tokens); newest %d kept; next move after %d tokens of tool output"):format(
      masking.maskedResults, masking.maskedTokens, masking.protectTokens, masking.nextMoveIn),
  }
  for _, item in ipairs(ledger or {}) do
    if item.visibility == "masked" then
      lines[#lines + 1] = ("  masked %-10s %6d  %s"):format(M.where(item), item.tokens, item.itemId)
    end
  end
  return lines
end

--- The diff against the previous turn: a SnapshotDiff, or assembly_diff's answer.
---@param diff table?
---@return string[]
function M.diff_lines(diff)
  diff = v(diff)
  if not diff then
    return { "Diff against the previous turn: none (first assembly)" }
  end
  if not v(diff.fromSnapshot) and v(diff.toSnapshot) then
    return { "Diff against the previous turn: none (no earlier snapshot in this session)" }
  end
  local sizes = ("messages %d -> %d · tokens %d -> %d"):format(
    diff.messagesBefore, diff.messagesAfter, diff.totalTokensBefore, diff.totalTokensAfter)
  local lines = {}
  if v(diff.fromSnapshot) then
    lines[1] = ("Diff against the previous turn: identical prefix %d units, %d tokens · %s"):format(
      diff.prefixUnits, diff.prefixTokens, sizes)
  else
    lines[1] = "Diff against the previous assembly: " .. sizes
  end
  for _, kind in ipairs({ "Added", "Removed", "Changed" }) do
    for _, id in ipairs(diff["sections" .. kind] or {}) do
      lines[#lines + 1] = ("  section %s: %s"):format(kind:lower(), id)
    end
  end
  for _, c in ipairs(diff.ledgerChanges or {}) do
    lines[#lines + 1] = ("  %s %s: %s -> %s"):format(c.kind, v(c.locator) or c.itemId, v(c.before) or "-", v(c.after) or "-")
  end
  if #lines == 1 then
    lines[2] = "  no ledger changes"
  end
  return lines
end

return M
