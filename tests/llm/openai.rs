//! OpenAI Responses adapter against the wire transcripts served by the mock provider.

use crate::support;

use agentls::llm::{ContentPart, FinishReason, LlmError, Message, ReasoningEffort, Request, RetryPolicy};
use serde_json::json;
use support::mock_provider::{Dialect, MockProvider, Reply};
use support::*;

fn text_request() -> Request {
    let mut r = Request::new(
        "gpt-4.1",
        vec![Message::system(SYSTEM), Message::user("Say hello in one short sentence.")],
    );
    r.max_tokens = Some(1024);
    r
}

fn tools_request() -> Request {
    let mut r = Request::new("gpt-5", vec![Message::system(SYSTEM), Message::user(TOOLS_PROMPT)]);
    r.tools = fixture_tools();
    r.reasoning_effort = Some(ReasoningEffort::Low);
    r.max_tokens = Some(8192);
    r.provider_options = json!({"openai": {"prompt_cache_key": "workspace-7f3a/session-42"}});
    r
}

#[tokio::test]
async fn text_request_and_stream_match_the_transcripts() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push_wire("openai_responses/stream_text.sse");
    let client = client_for(&mock, "gpt-4.1");
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(error, None);
    assert_request_matches(&mock, 0, "openai_responses/request_text.json");
    assert_eq!(text_deltas(&events), "Hello! How can I help you today?");
    let response = finish_of(&events);
    assert_eq!(response.text(), "Hello! How can I help you today?");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert!(response.usage.output_tokens > 0);
}

#[tokio::test]
async fn reasoning_summary_streams_as_thinking_with_encrypted_content() {
    let (mock, client) =
        serving(Dialect::OpenAiResponses, &["openai_responses/stream_reasoning_text.sse"], "gpt-5").await;
    let r = reasoning_request("gpt-5");
    let events = stream_matching(&mock, &client, &r, 0, "openai_responses/request_reasoning.json").await;
    let thinking = thinking_deltas(&events);
    assert!(thinking.starts_with("**Checking 1001 for factors**"), "{thinking}");
    let response = finish_of(&events);
    match &response.content[0] {
        ContentPart::Thinking { text, signature, id } => {
            assert_eq!(text, &thinking);
            assert!(signature.as_deref().is_some_and(|s| s.starts_with("gAAAAABpQx7R")));
            assert_eq!(id.as_deref(), Some("rs_0b7d3e9f1a2c4e6b0169aa01d2a3b4c5d6e7f8091a2b3c4d5e"));
        }
        other => panic!("expected reasoning first: {other:?}"),
    }
    assert_eq!(response.text(), "No. 1001 = 7 × 11 × 13, so it is composite.");
    assert!(response.usage.reasoning_tokens > 0, "{:?}", response.usage);
}

#[tokio::test]
async fn function_calls_stream_and_reasoning_items_are_echoed() {
    let wires = ["openai_responses/stream_two_tools.sse", "openai_responses/stream_text.sse"];
    let (mock, client) = serving(Dialect::OpenAiResponses, &wires, "gpt-5").await;
    let request = tools_request();
    let events = stream_matching(&mock, &client, &request, 0, "openai_responses/request_tools.json").await;
    let fragments = argument_fragments(&events, "call_Q3n8XbV1kR7mT2wL5pZ9cY4d");
    assert_eq!(fragments.concat(), "{\"path\":\"src/main.rs\"}");
    assert!(fragments.len() > 1);
    let response = finish_of(&events);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].arguments, json!({"pattern": "TODO", "path": "src"}));

    let mut next = with_fixture_results(&request, &response);
    next.parallel_tool_calls = Some(true);
    stream_matching(&mock, &client, &next, 1, "openai_responses/request_tool_results.json").await;
}

#[tokio::test]
async fn non_streaming_response_is_parsed() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push_wire("openai_responses/response_two_tools.json");
    let client = client_for(&mock, "gpt-5");
    let response = client.complete(&tools_request()).await.expect("complete");
    assert_eq!(mock.requests()[0].body["stream"], json!(false));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_Q3n8XbV1kR7mT2wL5pZ9cY4d");
    assert_eq!(calls[0].arguments, json!({"path": "src/main.rs"}));
}

#[tokio::test]
async fn error_transcripts_are_classified() {
    let cases: [(&str, ErrorCheck); 5] = [
        (
            "error_401_invalid_api_key.http",
            |e| matches!(e, LlmError::Authentication { var, .. } if var == "OPENAI_API_KEY"),
        ),
        ("error_429_rate_limit.http", |e| matches!(e, LlmError::RateLimit { retry_after: Some(_), .. })),
        ("error_429_insufficient_quota.http", |e| matches!(e, LlmError::QuotaExceeded { .. })),
        ("error_500_server_error.http", |e| matches!(e, LlmError::Server { .. })),
        ("error_400_context_length_exceeded.http", |e| matches!(e, LlmError::ContextLengthExceeded { .. })),
    ];
    let (mock, _, _) =
        assert_errors_classified(Dialect::OpenAiResponses, "gpt-4.1", &text_request(), &cases).await;
    assert!(!mock.requests().is_empty());
}

#[tokio::test]
async fn midstream_failures_are_classified() {
    let cases: [(&str, ErrorCheck); 3] = [
        (
            "stream_error_response_failed_rate_limit.sse",
            |e| matches!(e, LlmError::RateLimit { retry_after: Some(d), .. } if d.as_millis() == 11054),
        ),
        ("stream_error_response_failed_context.sse", |e| matches!(e, LlmError::ContextLengthExceeded { .. })),
        ("stream_error_event.sse", |e| !matches!(e, LlmError::StreamCut { .. })),
    ];
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    let client = client_for(&mock, "gpt-4.1").with_retry(RetryPolicy::none());
    for (file, check) in cases {
        mock.push_wire(&format!("openai_responses/{file}"));
        let (events, error) = collect(&client, &text_request()).await;
        assert!(events.is_empty(), "{file}: {events:?}");
        let error = error.expect(file);
        assert!(check(&error), "{file}: {error:?}");
    }
}

#[tokio::test]
async fn failed_response_before_any_output_is_retried() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push_wire("openai_responses/stream_error_response_failed_rate_limit.sse");
    mock.push_wire("openai_responses/stream_text.sse");
    // The transcript asks for 11 s; cap it so the test stays fast.
    let client = client_for(&mock, "gpt-4.1").with_retry(RetryPolicy {
        max_retries: 2,
        base_delay: std::time::Duration::from_millis(5),
        max_delay: std::time::Duration::from_millis(20),
    });
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(error, None);
    assert_eq!(finish_of(&events).text(), "Hello! How can I help you today?");
    assert_eq!(mock.request_count(), 2);
}

#[tokio::test]
async fn cut_transcript_is_a_stream_cut() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push(Reply::wire_cut("openai_responses/stream_text.sse", 9));
    let client = client_for(&mock, "gpt-4.1").with_retry(RetryPolicy::none());
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(text_deltas(&events), "Hello! How can I help you today?");
    assert!(matches!(error, Some(LlmError::StreamCut { .. })), "{error:?}");
}
