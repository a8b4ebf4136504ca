//! Agent-loop spec §9.1, 9.3, 9.5–9.7, 9.10, 9.11 (9.9 in `session::subagents`) against the loopback mock provider, with small
//! custom tools (the profile tool sets are covered by the parity tests).
//!
//! Where each Definition-of-Done checkbox of spec §9 is tested (binary::module::test; unprefixed names are
//! in this file):
//!
//! | § | checkbox | tests |
//! |---|---|---|
//! | 9.1 | session with profile + environment | session_is_created_with_profile_and_environment |
//! | 9.1 | process_input loop | process_input_loops_model_tools_model_until_natural_completion |
//! | 9.1 | natural completion | natural_completion_exits_on_text_only_response |
//! | 9.1 | max_tool_rounds_per_input | max_tool_rounds_per_input_stops_the_loop |
//! | 9.1 | max_turns across inputs | max_turns_stops_the_loop_across_inputs |
//! | 9.1 | abort: stop, kill processes, CLOSED | close_interrupts_and_ends_with_session_end_then_closed, session::processes::* |
//! | 9.1 | loop detection | loop_detection_injects_a_warning_steering_turn, session::parity_matrix::loop_detection::*, cli::exec::loop_flags_override_the_configuration_file |
//! | 9.1 | sequential inputs | multiple_sequential_inputs_share_the_history |
//! | 9.2 | codex / Claude Code / gemini-cli tools | tools::registry::profiles_register_their_reference_agents_tools, session::parity_matrix::native_edit_format::* |
//! | 9.2 | provider-specific system prompt | profiles::tests::each_profile_has_its_own_prompt_covering_the_topics (unit), session::prompts::system_prompt_has_every_layer_in_order_for_each_profile, tools::prompts_match_tools::* (the prompts never contradict their tools) |
//! | 9.2 | custom tools on any profile | session::prompts::custom_tools_are_offered_on_top_of_every_profile |
//! | 9.2 | name collisions: latest wins | session::prompts::a_custom_tool_replaces_the_profile_tool_of_the_same_name, custom_tool_with_the_same_name_overrides_the_earlier_one |
//! | 9.3 | dispatch through the registry | process_input_loops_model_tools_model_until_natural_completion, tools::registry::* |
//! | 9.3 | unknown tool → error result | unknown_tool_returns_an_error_result_to_the_model, session::parity_matrix::error_recovery::* |
//! | 9.3 | arguments validated against the schema | invalid_arguments_return_an_error_result, arguments_that_are_not_json_are_told_to_the_model_as_such, tools::registry::invalid_arguments_name_the_field_and_what_is_expected |
//! | 9.3 | executor errors → is_error | tool_errors_become_error_results_and_the_model_recovers |
//! | 9.3 | parallel execution (read-only calls together, changing calls alone and in order) | parallel_tool_calls_run_concurrently_with_results_in_call_order, tools::registry::parallel_batch_runs_a_changing_call_alone_after_every_earlier_call, session::parity_matrix::parallel_calls::* |
//! | 9.4 | LocalExecutionEnvironment operations | tools::exec_local::* |
//! | 9.4 | default timeout 10 s (anthropic: 120 s) | tools::exec_local::the_default_command_timeout_is_ten_seconds, session::prompts::shell_default_timeout_per_profile_and_from_the_configuration |
//! | 9.4 | per-call timeout_ms | tools::exec_local::per_call_timeout_overrides_the_default_up_to_the_maximum, session::parity_matrix::shell_timeout::* |
//! | 9.4 | SIGTERM, then SIGKILL after 2 s | tools::exec_local::timeout_sends_sigterm_to_the_group_then_sigkill |
//! | 9.4 | secrets filtered from the environment | tools::exec_local::env_filtering_removes_secrets_under_every_policy, cli::exec::shell_runs_without_secrets_and_timeouts_are_reported |
//! | 9.4 | custom environments | tools::registry::consumers_can_plug_in_their_own_execution_environment, session::prompts::shell_default_timeout_per_profile_and_from_the_configuration |
//! | 9.5 | characters first, then lines | tools::truncation::characters_are_truncated_before_lines, session::parity_matrix::truncation::* |
//! | 9.5 | verbatim markers | tools::truncation::head_tail_marker_is_verbatim, tools::truncation::line_marker_is_verbatim |
//! | 9.5 | TOOL_CALL_END has the full output | tool_call_end_has_full_output_and_the_model_gets_the_truncated_one |
//! | 9.5 | default limits of §5.2 | tools::truncation::default_character_limits_and_modes_match_the_spec_table, tools::truncation::default_line_limits_match_the_spec_table |
//! | 9.5 | limits overridable | tool_output_limits_are_overridable, tool_line_limits_are_overridable, cli::exec::loop_settings_of_the_configuration_file_reach_the_session_and_the_wire |
//! | 9.6 | steer after the current round, as SteeringTurn, user role | steer_is_injected_after_the_current_tool_round, session::parity_matrix::steering::* |
//! | 9.6 | follow_up after the input | follow_up_is_processed_after_the_current_input_completes |
//! | 9.7 | reasoning_effort passed through, changes on the next call | reasoning_effort_is_passed_through_and_changes_on_the_next_call, session::parity_matrix::reasoning_effort_change::* |
//! | 9.7 | low / medium / high / null | every_reasoning_effort_value_reaches_the_request |
//! | 9.8 | base, environment, tools, project docs, user override last, only the profile's files | session::prompts::system_prompt_has_every_layer_in_order_for_each_profile, profiles::project_docs::tests::* (unit), session::instructions::* (subdirectories' files) |
//! | 9.9 | spawn_agent with a scoped task | session::subagents::spawn_send_input_wait_and_close_agent, session::parity_matrix::subagent_spawn_and_wait::*, cli::exec::smoke_test_subagent_{openai,anthropic,gemini} |
//! | 9.9 | shares the parent's execution environment | session::subagents::spawn_send_input_wait_and_close_agent (its files are the parent's), session::subagents::children_run_at_the_same_time, session::subagents::a_working_dir_outside_the_root_is_refused |
//! | 9.9 | independent history | session::subagents::spawn_send_input_wait_and_close_agent, session::subagents::a_resumed_session_brings_its_subagents_back_with_their_histories, lsp::sessions::resume_after_restart_brings_the_subagents_back (stored with the parent's transcript) |
//! | 9.9 | depth limit (default 1) | session::subagents::the_subagent_tools_are_absent_at_the_depth_limit, session::parity_matrix::subagent_spawn_and_wait::* |
//! | 9.9 | results returned as tool results | session::parity_matrix::subagent_spawn_and_wait::*, session::subagents::a_failing_child_is_a_result_with_success_false |
//! | 9.9 | send_input, wait, close_agent | session::subagents::spawn_send_input_wait_and_close_agent, session::subagents::cancelling_the_parent_closes_its_children_and_stops_their_commands |
//! | 9.10 | every §2.9 event kind | every_spec_event_kind_is_emitted, command_output_streams_while_the_command_runs |
//! | 9.10 | async delivery, order, SESSION_START/END bracket | events_are_emitted_in_order_and_bracket_the_session |
//! | 9.10 | TOOL_CALL_END untruncated | tool_call_end_has_full_output_and_the_model_gets_the_truncated_one, session::parity_matrix::truncation::* |
//! | 9.11 | tool errors → model recovers | tool_errors_become_error_results_and_the_model_recovers, session::parity_matrix::error_recovery::* |
//! | 9.11 | transient errors retried | transient_provider_errors_are_retried |
//! | 9.11 | authentication: no retry, CLOSED | authentication_errors_surface_at_once_and_close_the_session |
//! | 9.11 | context window: warning (compaction, seed 004; pruning as its fallback, seed 002) | context_usage_above_80_percent_emits_a_warning, session::compaction::* (overflow → compaction, pruning as the fallback, the error when neither fits) |
//! | 9.11 | graceful shutdown | close_interrupts_and_ends_with_session_end_then_closed, session::subagents::cancelling_the_parent_closes_its_children_and_stops_their_commands, cancel_while_the_model_streams_stops_the_stream_and_keeps_the_history_valid, session::processes::*, cli::exec::sig{int,term}_mid_command_* |
//! | 9.12 | parity matrix | parity_matrix::<cell>::<profile> |
//! | 9.13 | smoke test through `agentls exec` (step 6: cli::exec::smoke_test_subagent_*) | cli::exec::smoke_test_{openai,anthropic,gemini}, cli::exec::smoke_test_subagent_{openai,anthropic,gemini} |

use crate::support;
use crate::support::session_harness;

use std::sync::Arc;

use agentls::llm::ReasoningEffort;
use agentls::profiles::ProfileKind;
use agentls::session::{ConfigChange, EventKind, SessionState, Turn};
use serde_json::json;
use session_harness::calls::sent_result;
use session_harness::tools::{Big, Echo, Fail, Gate, Rendezvous};
use session_harness::{Harness, Setup, data, kinds, of_kind, reason, str_of, turn_kinds};
use support::mock_provider::{ErrorPreset, Turn as Reply};
use tokio::sync::{Barrier, Notify};

const P: ProfileKind = ProfileKind::Anthropic;

fn echo_setup() -> Setup {
    Setup::new(P).without_profile_tools().tool(Echo { tag: "echo" })
}

// §9.1 Core loop

#[tokio::test]
async fn session_is_created_with_profile_and_environment() {
    let mut h = Harness::start(echo_setup()).await;
    let start = h.until(EventKind::SessionStart).await;
    let started = data(&start[0]);
    assert_eq!(started["profile"], "anthropic");
    assert_eq!(started["tools"], json!(["echo"]));
    assert_eq!(h.handle.state(), SessionState::Idle);
    assert!(!h.handle.id().is_empty());
}

#[tokio::test]
async fn process_input_loops_model_tools_model_until_natural_completion() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("Let me echo.").tool_call("c1", "echo", json!({"text": "hi"})));
    h.mock.push(Reply::new().text("Done."));
    let events = h.run("echo hi").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.requests().len(), 2);
    assert!(h.request_text(1).contains("echo: hi"), "the tool result reaches the model");
    assert_eq!(turn_kinds(&h.handle.history()), ["user", "assistant", "tool_results", "assistant"]);
}

#[tokio::test]
async fn natural_completion_exits_on_text_only_response() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("All good."));
    let events = h.run("hello").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.requests().len(), 1);
    assert_eq!(h.handle.state(), SessionState::Idle);
    let end = of_kind(&events, EventKind::ProcessingEnd)[0];
    assert_eq!(str_of(end, "text"), "All good.");
}

#[tokio::test]
async fn question_at_the_end_leaves_the_session_awaiting_input() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("Which file do you mean?"));
    h.run("fix it").await;
    assert_eq!(h.handle.state(), SessionState::AwaitingInput);
    h.mock.push(Reply::new().text("Fixed."));
    h.run("main.rs").await;
    assert_eq!(h.handle.state(), SessionState::Idle);
}

#[tokio::test]
async fn max_tool_rounds_per_input_stops_the_loop() {
    let mut h = Harness::start(echo_setup().config(|c| c.max_tool_rounds_per_input = 1)).await;
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": "1"})));
    h.mock.push(Reply::new().tool_call("c2", "echo", json!({"text": "2"})));
    let events = h.run("go").await;
    assert_eq!(reason(&events), "round_limit");
    assert_eq!(data(of_kind(&events, EventKind::TurnLimit)[0])["round"], 1);
    assert_eq!(h.requests().len(), 1);
    assert_eq!(h.handle.state(), SessionState::Idle);
}

#[tokio::test]
async fn max_turns_stops_the_loop_across_inputs() {
    let mut h = Harness::start(echo_setup().config(|c| c.max_turns = 2)).await;
    h.mock.push(Reply::new().text("first"));
    assert_eq!(reason(&h.run("one").await), "completed");
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": "x"})));
    let events = h.run("two").await;
    assert_eq!(reason(&events), "turn_limit");
    assert_eq!(data(of_kind(&events, EventKind::TurnLimit)[0])["total_turns"], 2);
    let events = h.run("three").await;
    assert_eq!(reason(&events), "turn_limit");
    assert_eq!(h.requests().len(), 2, "no call after the limit");
}

#[tokio::test]
async fn cancel_stops_the_turn_and_the_session_stays_usable() {
    let release = Arc::new(Notify::new());
    let mut h = Harness::start(echo_setup().tool(Gate { release })).await;
    h.mock.push(Reply::new().tool_call("c1", "gate", json!({})));
    h.handle.submit("wait".into());
    h.until(EventKind::ToolCallStart).await;
    h.handle.cancel();
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "cancelled");
    assert_eq!(h.handle.state(), SessionState::Idle);
    // Every call still has a result, so the next request is valid.
    let history = h.handle.history();
    assert!(matches!(history.last(), Some(Turn::ToolResults(r)) if r.results[0].is_error));
    h.mock.push(Reply::new().text("back"));
    assert_eq!(reason(&h.run("again").await), "completed");
}

#[tokio::test]
async fn close_interrupts_and_ends_with_session_end_then_closed() {
    let release = Arc::new(Notify::new());
    let mut h = Harness::start(echo_setup().tool(Gate { release })).await;
    h.mock.push(Reply::new().tool_call("c1", "gate", json!({})));
    h.handle.submit("wait".into());
    h.until(EventKind::ToolCallStart).await;
    let events = h.close().await;
    assert!(kinds(&events).contains(&EventKind::ProcessingEnd));
    assert_eq!(events.last().map(|e| e.kind()), Some(EventKind::SessionEnd));
    assert!(h.events.recv().await.is_none(), "nothing after SESSION_END");
}

#[tokio::test]
async fn cancel_while_the_model_streams_stops_the_stream_and_keeps_the_history_valid() {
    let mut h = Harness::start(echo_setup()).await;
    let long = "word ".repeat(400);
    h.mock.push(Reply::new().text(&long).fragment(5).delay(std::time::Duration::from_millis(20)));
    h.handle.submit("talk".into());
    h.until(EventKind::AssistantTextDelta).await;
    h.handle.cancel();
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "cancelled");
    assert!(!kinds(&events).contains(&EventKind::AssistantTextEnd), "the answer was cut, not completed");
    // The interrupted answer is not recorded as a finished turn; the next request is valid.
    h.mock.push(Reply::new().text("short"));
    assert_eq!(reason(&h.run("again").await), "completed");
    let messages = h.body(1)["messages"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user"], "both inputs, no half answer: {messages:?}");
    assert!(!h.request_text(1).contains("word word"));
}

#[tokio::test]
async fn loop_detection_injects_a_warning_steering_turn() {
    let mut h = Harness::start(echo_setup().config(|c| c.loop_detection_window = 3)).await;
    for id in ["c1", "c2", "c3"] {
        h.mock.push(Reply::new().tool_call(id, "echo", json!({"text": "same"})));
    }
    h.mock.push(Reply::new().text("ok, changing approach"));
    let events = h.run("loop").await;
    let detected = of_kind(&events, EventKind::LoopDetection);
    assert_eq!(detected.len(), 1);
    assert!(str_of(detected[0], "message").starts_with("Loop detected: the last 3 tool calls"));
    assert!(
        h.handle
            .history()
            .iter()
            .any(|t| matches!(t, Turn::Steering(s) if s.content.starts_with("Loop detected")))
    );
    assert!(h.request_text(3).contains("Loop detected"), "the model sees the warning");
}

#[tokio::test]
async fn multiple_sequential_inputs_share_the_history() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("first answer"));
    h.run("first question").await;
    h.mock.push(Reply::new().text("second answer"));
    h.run("second question").await;
    let second = h.request_text(1);
    assert!(second.contains("first question") && second.contains("first answer"));
    assert!(second.contains("second question"));
}

// §9.2 custom tools

#[tokio::test]
async fn custom_tool_with_the_same_name_overrides_the_earlier_one() {
    let setup = echo_setup().tool(Echo { tag: "custom" });
    let mut h = Harness::start(setup).await;
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": "x"})));
    h.mock.push(Reply::new().text("done"));
    h.run("go").await;
    assert!(h.request_text(1).contains("custom: x"));
    let tools = h.requests()[0].body["tools"].as_array().map(Vec::len);
    assert_eq!(tools, Some(1));
}

// §9.3 Tool execution

#[tokio::test]
async fn unknown_tool_returns_an_error_result_to_the_model() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().tool_call("c1", "nope", json!({})));
    h.mock.push(Reply::new().text("sorry"));
    let events = h.run("go").await;
    assert_eq!(reason(&events), "completed");
    let end = of_kind(&events, EventKind::ToolCallEnd)[0];
    assert_eq!(str_of(end, "status"), "error");
    assert!(h.request_text(1).contains("Unknown tool: nope"));
}

#[tokio::test]
async fn invalid_arguments_return_an_error_result() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": 5})));
    h.mock.push(Reply::new().text("fixed"));
    h.run("go").await;
    let body = h.request_text(1);
    assert!(body.contains("Invalid arguments for tool echo"), "{body}");
}

/// A call whose arguments are not JSON at all is answered with the registry's own message,
/// which says so (not that they are not an object), and the model can send them again.
#[tokio::test]
async fn arguments_that_are_not_json_are_told_to_the_model_as_such() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().raw_tool_call("c1", "echo", r#"{"text": "hi""#));
    h.mock.push(Reply::new().tool_call("c2", "echo", json!({"text": "hi"})));
    h.mock.push(Reply::new().text("fixed"));
    let events = h.run("go").await;
    assert_eq!(reason(&events), "completed");
    let body = h.request_text(1);
    assert!(body.contains("Invalid arguments for tool echo: the arguments are not valid JSON ("), "{body}");
    assert!(!body.contains("must be a JSON object"), "{body}");
    let ends = of_kind(&events, EventKind::ToolCallEnd);
    assert_eq!([str_of(ends[0], "status"), str_of(ends[1], "status")], ["error", "ok"]);
    assert!(h.request_text(2).contains("echo: hi"), "the second call ran");
}

#[tokio::test]
async fn tool_errors_become_error_results_and_the_model_recovers() {
    let mut h = Harness::start(echo_setup().tool(Fail)).await;
    h.mock.push(Reply::new().tool_call("c1", "fail", json!({})));
    h.mock.push(Reply::new().tool_call("c2", "echo", json!({"text": "retry"})));
    h.mock.push(Reply::new().text("recovered"));
    let events = h.run("go").await;
    assert_eq!(reason(&events), "completed");
    assert!(h.request_text(1).contains("disk on fire"));
    assert!(h.request_text(2).contains("echo: retry"));
}

#[tokio::test]
async fn parallel_tool_calls_run_concurrently_with_results_in_call_order() {
    let barrier = Arc::new(Barrier::new(2));
    let mut h = Harness::start(echo_setup().tool(Rendezvous { barrier })).await;
    h.mock.push(Reply::new().tool_call("c1", "meet", json!({"who": "first"})).tool_call(
        "c2",
        "meet",
        json!({"who": "second"}),
    ));
    h.mock.push(Reply::new().text("both met"));
    let events = h.run("go").await;
    assert_eq!(reason(&events), "completed");
    let history = h.handle.history();
    let Some(Turn::ToolResults(r)) = history.get(2) else { panic!("tool results expected") };
    assert_eq!(r.results[0].content, "met first");
    assert_eq!(r.results[1].content, "met second");
}

#[tokio::test]
async fn one_call_per_step_executes_only_the_first_call() {
    let mut h = Harness::start(echo_setup().config(|c| c.one_call_per_step = true)).await;
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": "a"})).tool_call(
        "c2",
        "echo",
        json!({"text": "b"}),
    ));
    h.mock.push(Reply::new().text("ok"));
    h.run("go").await;
    let body = h.request_text(1);
    assert!(body.contains("echo: a"));
    assert!(!body.contains("echo: b"));
    assert!(body.contains("not executed"));
    assert!(h.request_text(0).contains("at most one tool call per step"));
}

// §9.5 truncation at session level

#[tokio::test]
async fn tool_call_end_has_full_output_and_the_model_gets_the_truncated_one() {
    let mut h = Harness::start(echo_setup().tool(Big)).await;
    h.mock.push(Reply::new().tool_call("c1", "big", json!({"size": 100_000})));
    h.mock.push(Reply::new().text("big"));
    let events = h.run("go").await;
    let end = of_kind(&events, EventKind::ToolCallEnd)[0];
    assert_eq!(str_of(end, "output").len(), 100_000);
    let body = h.request_text(1);
    assert!(body.contains("[WARNING: Tool output was truncated."));
    assert!(body.len() < 60_000, "the model did not receive the full output");
}

#[tokio::test]
async fn tool_output_limits_are_overridable() {
    let mut h = Harness::start(echo_setup().tool(Big).config(|c| {
        c.tool_output_limits.insert("big".into(), 100);
    }))
    .await;
    h.mock.push(Reply::new().tool_call("c1", "big", json!({"size": 1000})));
    h.mock.push(Reply::new().text("ok"));
    h.run("go").await;
    assert!(h.request_text(1).contains("900 characters were removed"));
}

#[tokio::test]
async fn tool_line_limits_are_overridable() {
    let mut h = Harness::start(echo_setup().config(|c| {
        c.tool_line_limits.insert("echo".into(), 4);
    }))
    .await;
    let text = (1..=10).map(|i| format!("line{i}")).collect::<Vec<_>>().join("\n");
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({ "text": text })));
    h.mock.push(Reply::new().text("ok"));
    let events = h.run("go").await;
    let sent = sent_result(P, &h.body(1), "c1").content;
    assert!(sent.contains("[... 6 lines omitted ...]"), "{sent}");
    assert!(!sent.contains("line5"));
    assert!(str_of(of_kind(&events, EventKind::ToolCallEnd)[0], "output").contains("line5"));
}

// §9.6 Steering

#[tokio::test]
async fn steer_is_injected_after_the_current_tool_round() {
    let release = Arc::new(Notify::new());
    let mut h = Harness::start(echo_setup().tool(Gate { release: release.clone() })).await;
    h.mock.push(Reply::new().tool_call("c1", "gate", json!({})));
    h.mock.push(Reply::new().text("adjusted"));
    h.handle.submit("build the app".into());
    h.until(EventKind::ToolCallStart).await;
    h.handle.steer("only the /health endpoint".into());
    release.notify_one();
    let events = h.until(EventKind::ProcessingEnd).await;
    let order = kinds(&events);
    let tool_end = order.iter().position(|k| *k == EventKind::ToolCallEnd).expect("tool end");
    let steered = order.iter().position(|k| *k == EventKind::SteeringInjected).expect("steering");
    assert!(tool_end < steered);
    assert!(
        h.handle
            .history()
            .iter()
            .any(|t| matches!(t, Turn::Steering(s) if s.content == "only the /health endpoint"))
    );
    // Converted to a user-role message for the model.
    let messages = h.requests()[1].body["messages"].clone();
    let last = messages.as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("only the /health endpoint"));
}

#[tokio::test]
async fn steer_while_idle_is_delivered_with_the_next_input() {
    let mut h = Harness::start(echo_setup()).await;
    h.handle.steer("be brief".into());
    h.mock.push(Reply::new().text("ok"));
    let events = h.run("hello").await;
    assert_eq!(of_kind(&events, EventKind::SteeringInjected).len(), 1);
    assert!(h.request_text(0).contains("be brief"));
}

#[tokio::test]
async fn follow_up_is_processed_after_the_current_input_completes() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("first done"));
    h.mock.push(Reply::new().text("second done"));
    h.handle.submit("first".into());
    h.handle.follow_up("second".into());
    let events = h.until(EventKind::ProcessingEnd).await;
    let inputs: Vec<String> =
        of_kind(&events, EventKind::UserInput).iter().map(|e| str_of(e, "content")).collect();
    assert_eq!(inputs, ["first", "second"]);
    assert_eq!(str_of(events.last().expect("end"), "text"), "second done");
}

// §9.7 Reasoning effort

#[tokio::test]
async fn reasoning_effort_is_passed_through_and_changes_on_the_next_call() {
    let release = Arc::new(Notify::new());
    let setup = Setup::new(ProfileKind::OpenAi)
        .without_profile_tools()
        .tool(Gate { release: release.clone() })
        .config(|c| c.reasoning_effort = Some(ReasoningEffort::High));
    let mut h = Harness::start(setup).await;
    h.mock.push(Reply::new().tool_call("c1", "gate", json!({})));
    h.mock.push(Reply::new().text("done"));
    h.handle.submit("think".into());
    h.until(EventKind::ToolCallStart).await;
    h.handle
        .configure(ConfigChange { reasoning_effort: Some(Some(ReasoningEffort::Low)), ..Default::default() });
    release.notify_one();
    h.until(EventKind::ProcessingEnd).await;
    let requests = h.requests();
    assert_eq!(requests[0].body["reasoning"]["effort"], "high");
    assert_eq!(requests[1].body["reasoning"]["effort"], "low");
}

#[tokio::test]
async fn every_reasoning_effort_value_reaches_the_request() {
    let mut h = Harness::start(Setup::new(ProfileKind::OpenAi).without_profile_tools()).await;
    let values =
        [Some(ReasoningEffort::Low), Some(ReasoningEffort::Medium), Some(ReasoningEffort::High), None];
    for effort in values {
        h.handle.configure(ConfigChange { reasoning_effort: Some(effort), ..Default::default() });
        h.mock.push(Reply::new().text("ok"));
        h.run("think").await;
    }
    let sent: Vec<_> = h.requests().iter().map(|r| r.body["reasoning"]["effort"].clone()).collect();
    assert_eq!(sent, [json!("low"), json!("medium"), json!("high"), serde_json::Value::Null]);
}

#[tokio::test]
async fn configure_reports_the_new_values_as_config_changed() {
    let mut h = Harness::start(echo_setup()).await;
    h.handle.configure(ConfigChange {
        model: Some("claude-haiku-4-5".into()),
        reasoning_effort: Some(Some(ReasoningEffort::Medium)),
        ..Default::default()
    });
    let events = h.until(EventKind::ConfigChanged).await;
    let changed = data(events.last().expect("config_changed"));
    assert_eq!(changed["model"], "claude-haiku-4-5");
    assert_eq!(changed["reasoning_effort"], "medium");
    assert_eq!(changed["approval"], "review", "unchanged values are reported too");
}

#[tokio::test]
async fn model_change_applies_to_the_next_call() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("a"));
    h.run("one").await;
    h.handle.configure(ConfigChange { model: Some("claude-haiku-4-5".into()), ..Default::default() });
    h.mock.push(Reply::new().text("b"));
    h.run("two").await;
    assert_eq!(h.requests()[1].body["model"], "claude-haiku-4-5");
    assert!(h.request_text(1).contains("Model: claude-haiku-4-5"));
}

// §9.10 Events

#[tokio::test]
async fn events_are_emitted_in_order_and_bracket_the_session() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("Reading it now.").tool_call("c1", "echo", json!({"text": "hi"})));
    h.mock.push(Reply::new().text("All done here."));
    let mut events = h.run("go").await;
    events.extend(h.close().await);
    let k = kinds(&events);
    use EventKind::*;
    assert_eq!(k.first(), Some(&SessionStart));
    assert_eq!(k.last(), Some(&SessionEnd));
    let pos =
        |kind: EventKind| k.iter().position(|x| *x == kind).unwrap_or_else(|| panic!("{kind:?} missing"));
    assert!(pos(UserInput) < pos(AssistantTextStart));
    assert!(pos(AssistantTextStart) < pos(AssistantTextDelta));
    assert!(pos(AssistantTextDelta) < pos(AssistantTextEnd));
    assert!(pos(AssistantTextEnd) < pos(ToolCallStart));
    assert!(pos(ToolCallStart) < pos(ToolCallEnd));
    assert!(pos(ToolCallEnd) < pos(ProcessingEnd));
    // Deltas add up to the text, nothing lost.
    let streamed: String = of_kind(&events, AssistantTextDelta).iter().map(|e| str_of(e, "delta")).collect();
    assert_eq!(streamed, "Reading it now.All done here.");
    let start = of_kind(&events, ToolCallStart)[0];
    assert_eq!(str_of(start, "summary"), "echo");
    assert_eq!(str_of(start, "call_id"), "c1");
    let end = of_kind(&events, ToolCallEnd)[0];
    assert_eq!(str_of(end, "output"), "echo: hi");
    assert!(data(end)["duration_ms"].is_u64());
    let text_end = of_kind(&events, AssistantTextEnd)[0];
    assert_eq!(data(text_end)["usage"]["input_tokens"], 10);
    assert!(data(text_end)["totals"]["input_tokens"].as_u64() >= Some(10));
    let json = serde_json::to_value(&events[0]).expect("serializes");
    assert_eq!(json["kind"], "session_start");
}

#[tokio::test]
async fn command_output_streams_while_the_command_runs() {
    let mut h = Harness::start(Setup::new(P)).await;
    let command = "echo first-line; while [ ! -e release ]; do sleep 0.01; done; echo second-line";
    h.mock.push(Reply::new().tool_call("c1", "shell", json!({ "command": command })));
    h.mock.push(Reply::new().text("done"));
    h.handle.submit("run".into());
    // The first line arrives while the command still waits: it is live, not replayed at the end.
    let before = h.until(EventKind::ToolCallOutputDelta).await;
    assert!(!kinds(&before).contains(&EventKind::ToolCallEnd));
    std::fs::write(h.path("release"), "").expect("release");
    let mut events = before;
    events.extend(h.until(EventKind::ProcessingEnd).await);
    let deltas = of_kind(&events, EventKind::ToolCallOutputDelta);
    assert!(deltas.iter().all(|d| str_of(d, "call_id") == "c1"));
    let streamed: String = deltas.iter().map(|d| str_of(d, "delta")).collect();
    assert_eq!(streamed, "first-line\nsecond-line\n");
    let k = kinds(&events);
    let last_delta = k.iter().rposition(|x| *x == EventKind::ToolCallOutputDelta).expect("delta");
    assert!(last_delta < k.iter().position(|x| *x == EventKind::ToolCallEnd).expect("end"));
}

/// One session that goes through every event kind of spec §2.9.
#[tokio::test]
async fn every_spec_event_kind_is_emitted() {
    let setup = Setup::new(P).config(|c| {
        c.loop_detection_window = 2;
        c.max_tool_rounds_per_input = 2;
        c.context_window_tokens = Some(1000);
    });
    let mut h = Harness::start(setup).await;
    h.handle.steer("keep it short".into());
    for id in ["c1", "c2"] {
        let reply = Reply::new().text("Running it.").tool_call(id, "shell", json!({"command": "echo same"}));
        h.mock.push(reply.usage(900, 10));
    }
    let mut events = h.run("first").await;
    assert_eq!(reason(&events), "round_limit");
    for _ in 0..3 {
        h.mock.push(ErrorPreset::Server);
    }
    events.extend(h.run("second").await);
    assert_eq!(reason(&events), "error");
    events.extend(h.close().await);
    use EventKind::*;
    let spec_kinds = [
        SessionStart,
        SessionEnd,
        UserInput,
        ProcessingEnd,
        AssistantTextStart,
        AssistantTextDelta,
        AssistantTextEnd,
        ToolCallStart,
        ToolCallOutputDelta,
        ToolCallEnd,
        SteeringInjected,
        TurnLimit,
        LoopDetection,
        Warning,
        Error,
    ];
    let seen = kinds(&events);
    for kind in spec_kinds {
        assert!(seen.contains(&kind), "{kind:?} was never emitted: {seen:?}");
    }
}

// §9.11 Error handling

#[tokio::test]
async fn transient_provider_errors_are_retried() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(ErrorPreset::Server);
    h.mock.push(Reply::new().text("after retry"));
    let events = h.run("go").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.requests().len(), 2);
}

#[tokio::test]
async fn authentication_errors_surface_at_once_and_close_the_session() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(ErrorPreset::Authentication);
    h.handle.submit("go".into());
    let events = h.until(EventKind::SessionEnd).await;
    let error = of_kind(&events, EventKind::Error)[0];
    assert_eq!(data(error)["fatal"], true);
    assert!(!data(error).to_string().contains("test-key-not-secret"), "no key in events");
    assert_eq!(h.requests().len(), 1, "no retry");
    assert_eq!(h.handle.state(), SessionState::Closed);
}

#[tokio::test]
async fn context_usage_above_80_percent_emits_a_warning() {
    let mut h = Harness::start(echo_setup().config(|c| c.context_window_tokens = Some(1000))).await;
    h.mock.push(Reply::new().text("ok").usage(900, 10));
    let events = h.run("go").await;
    let warning = of_kind(&events, EventKind::Warning)[0];
    // The provider counted 900 input tokens: the calibrated estimate of the next request (that
    // request and a two-character answer) is 901 of 1000.
    assert_eq!(str_of(warning, "message"), "Context usage at ~90% of context window");
    assert_eq!(
        (data(warning)["approx_tokens"].clone(), data(warning)["context_window"].clone()),
        (json!(901), json!(1000))
    );
}
