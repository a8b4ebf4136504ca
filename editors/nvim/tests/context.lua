-- Context use and compaction in the plugin on their own: the status line's share of the window,
-- and what the chat says of a compaction and of each limit.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h"))
local state = require("agentls.state")
local chat_model = require("agentls.chat_model")

T.test("the status line shows the share of the context window once the figures are known", function()
  state.client_started(7, "/w")
  state.set_session(7, { id = "s1", model = "claude-test", state = "idle" })
  T.eq(state.status(), "agentls: idle · claude-test", "no figures yet")
  state.set_context(7, "other-session", { estimateTokens = 1, calibration = 1, contextWindow = 10 })
  T.eq(state.status(), "agentls: idle · claude-test", "another session's figures are ignored")
  state.set_context(7, "s1", { estimateTokens = 41250, calibration = 1.12, contextWindow = 200000 })
  T.eq(state.status(), "agentls: idle · claude-test · ctx 20%", "20% of the window")
  local percent, ctx = state.context()
  T.eq({ percent, ctx.calibration }, { 20, 1.12 }, "the figures behind it")
  state.set_context(7, "s1", { estimateTokens = 5, calibration = 1, contextWindow = 0 })
  T.eq(state.status(), "agentls: idle · claude-test", "an unknown window shows no share")
end)

T.test("a compaction and every limit are described", function()
  T.eq(
    chat_model.compaction_text({
      trigger = "auto",
      tokens_before = 170000,
      tokens_after = 21000,
      messages_summarized = 40,
      messages_kept = 6,
      model = "claude-haiku-4-5",
    }),
    "⟲ compacted the conversation (the context window was filling up): 40 earlier messages summarised by claude-haiku-4-5, 6 kept; ~170000 → ~21000 tokens",
    "compaction"
  )
  T.eq(chat_model.limit_text({ steps = 5 }), "⚠ step limit: stopped after 5 model requests for this input", "steps")
  T.eq(chat_model.limit_text({ time_limit_secs = 60 }), "⚠ time limit: stopped after 60 s for this input", "time")
  T.eq(chat_model.limit_text({ round = 3 }), "⚠ turn limit: stopped after 3 tool rounds for this input", "rounds")
  T.eq(chat_model.limit_text({ total_turns = 9 }), "⚠ turn limit: the session reached 9 model turns", "turns")
end)

return T.run()
