//! Anthropic Messages adapter against the wire transcripts served by the mock provider.

use crate::support;

use agentls::llm::{
    ContentPart, FinishReason, LlmError, Message, ReasoningEffort, Request, Role, StreamEvent,
};
use serde_json::json;
use support::mock_provider::{Dialect, MockProvider, Reply};
use support::*;

const MODEL: &str = "claude-sonnet-4-5";

fn text_request() -> Request {
    let mut r =
        Request::new(MODEL, vec![Message::system(SYSTEM), Message::user("Say hello in one short sentence.")]);
    r.max_tokens = Some(1024);
    r
}

fn tools_request() -> Request {
    let mut r = Request::new(MODEL, vec![Message::system(SYSTEM), Message::user(TOOLS_PROMPT)]);
    r.tools = fixture_tools();
    r.max_tokens = Some(4096);
    r
}

#[tokio::test]
async fn text_request_and_stream_match_the_transcripts() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push_wire("anthropic/stream_text.sse");
    let client = client_for(&mock, MODEL);
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(error, None);
    assert_request_matches(&mock, 0, "anthropic/request_text.json");
    assert_eq!(
        events[..2],
        [
            StreamEvent::TextDelta("Hello! How".into()),
            StreamEvent::TextDelta(" can I help you today?".into())
        ]
    );
    let response = finish_of(&events);
    assert_eq!(response.text(), "Hello! How can I help you today?");
    assert_eq!(response.id, "msg_01T9xKq2VbN7mRc4LpZ8aW3e");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0, "{:?}", response.usage);
}

#[tokio::test]
async fn thinking_requests_use_budget_or_adaptive_effort() {
    let wires = ["anthropic/stream_thinking_text.sse", "anthropic/stream_thinking_text.sse"];
    let (mock, client) = serving(Dialect::Anthropic, &wires, MODEL).await;
    let r = reasoning_request(MODEL);
    let events = stream_matching(&mock, &client, &r, 0, "anthropic/request_thinking.json").await;

    let response = finish_of(&events);
    let thinking = thinking_deltas(&events);
    assert!(thinking.starts_with("1001 is odd") && thinking.ends_with("1001 = 7 × 11 × 13."), "{thinking}");
    match &response.content[0] {
        ContentPart::Thinking { text, signature, .. } => {
            assert_eq!(text, &thinking);
            assert!(signature.as_deref().is_some_and(|s| {
                s.starts_with("EqQBCkgIChABGAIqQLx2Vf0m8TzJc3Qe1pWk9HnR4yB7aLdS6uXo0iGvE5tM")
            }));
        }
        other => panic!("expected thinking first, got {other:?}"),
    }
    assert_eq!(response.text(), "No. 1001 = 7 × 11 × 13, so it is composite.");

    let mut adaptive = Request::new("claude-opus-4-6", r.messages.clone());
    adaptive.reasoning_effort = Some(ReasoningEffort::Medium);
    let (_, error) = collect(&client, &adaptive).await;
    assert_eq!(error, None);
    assert_request_matches(&mock, 1, "anthropic/request_thinking_adaptive_effort.json");
}

#[tokio::test]
async fn tool_stream_joins_fragments_and_history_is_echoed_with_cache_breakpoints() {
    let wires = ["anthropic/stream_two_tools.sse", "anthropic/stream_text.sse"];
    let (mock, client) = serving(Dialect::Anthropic, &wires, MODEL).await;
    let request = tools_request();
    let events = stream_matching(&mock, &client, &request, 0, "anthropic/request_tools.json").await;

    let starts: Vec<_> = events.iter().filter(|e| matches!(e, StreamEvent::ToolCallStart { .. })).collect();
    assert_eq!(starts.len(), 2);
    let fragments = argument_fragments(&events, "toolu_01Ay3NcJ6pQs8WdE1rKm5uVt");
    assert_eq!(fragments, ["{\"pattern\": \"TOD", "O\", \"path\"", ": \"src\"}"]);
    let response = finish_of(&events);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls = response.tool_calls();
    assert_eq!(calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(calls[1].arguments, json!({"pattern": "TODO", "path": "src"}));
    assert!(events.contains(&StreamEvent::ToolCallEnd {
        id: "toolu_01Fq8ZkR2mXw9VbT4nLc7pHs".into(),
        name: "read_file".into(),
        arguments: json!({"path": "src/main.rs"}),
    }));

    let next = with_fixture_results(&request, &response);
    stream_matching(&mock, &client, &next, 1, "anthropic/request_tool_results.json").await;
}

#[tokio::test]
async fn thinking_blocks_are_echoed_with_signatures_before_tool_use() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push_wire("anthropic/stream_text.sse");
    let client = client_for(&mock, MODEL);
    let mut r = tools_request();
    r.reasoning_effort = Some(ReasoningEffort::Low);
    r.messages.push(Message::assistant(vec![
        ContentPart::thinking("Let me look.", Some("sig-abc".into())),
        ContentPart::RedactedThinking { data: "enc-xyz".into() },
        tool_call("toolu_1", "read_file", json!({"path": "a"}), None),
    ]));
    r.messages.push(Message::tool_results(vec![tool_result("toolu_1", "read_file", "content")]));
    let (_, error) = collect(&client, &r).await;
    assert_eq!(error, None);
    let body = &mock.requests()[0].body;
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "Let me look.", "signature": "sig-abc"})
    );
    assert_eq!(assistant["content"][1], json!({"type": "redacted_thinking", "data": "enc-xyz"}));
    assert_eq!(assistant["content"][2]["type"], "tool_use");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(body["messages"][2]["content"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(body["thinking"]["budget_tokens"].as_u64().unwrap() < body["max_tokens"].as_u64().unwrap());
}

#[tokio::test]
async fn non_streaming_response_is_parsed() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push_wire("anthropic/response_two_tools.json");
    let client = client_for(&mock, MODEL);
    let response = client.complete(&tools_request()).await.expect("complete");
    assert_eq!(mock.requests()[0].body["stream"], json!(false));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(calls[1].arguments, json!({"pattern": "TODO", "path": "src"}));
    assert_eq!(response.to_message().role, Role::Assistant);
}

#[tokio::test]
async fn error_transcripts_are_classified() {
    let cases: [(&str, ErrorCheck); 6] = [
        (
            "error_401_authentication.http",
            |e| matches!(e, LlmError::Authentication { var, .. } if var == "ANTHROPIC_API_KEY"),
        ),
        (
            "error_429_rate_limit.http",
            |e| matches!(e, LlmError::RateLimit { retry_after: Some(d), .. } if d.as_secs() == 27),
        ),
        ("error_529_overloaded.http", |e| matches!(e, LlmError::Overloaded { .. })),
        ("error_500_api_error.http", |e| matches!(e, LlmError::Server { status: Some(500), .. })),
        ("error_400_prompt_too_long.http", |e| matches!(e, LlmError::ContextLengthExceeded { .. })),
        ("error_400_context_with_max_tokens.http", |e| matches!(e, LlmError::ContextLengthExceeded { .. })),
    ];
    let (_, _, streamed) = assert_errors_classified(Dialect::Anthropic, MODEL, &text_request(), &cases).await;
    for error in streamed {
        assert!(!error.to_string().contains(fixture_key(Dialect::Anthropic)), "{error}");
    }
}

#[tokio::test]
async fn midstream_error_after_text_is_reported_not_retried() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push_wire("anthropic/stream_error_midstream.sse");
    mock.push_wire("anthropic/stream_text.sse");
    let client = client_for(&mock, MODEL);
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(events, [StreamEvent::TextDelta("Hello! How".into())]);
    assert!(matches!(error, Some(LlmError::Overloaded { .. })), "{error:?}");
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn cut_transcript_is_a_stream_cut() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::wire_cut("anthropic/stream_text.sse", 6));
    let client = client_for(&mock, MODEL);
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(text_deltas(&events), "Hello! How can I help you today?");
    assert!(matches!(error, Some(LlmError::StreamCut { .. })), "{error:?}");
}
