//! Gemini adapter against the wire transcripts (CRLF-separated SSE) served by the mock provider.

use crate::support;

use agentls::llm::{FinishReason, LlmError, Message, ReasoningEffort, Request, RetryPolicy, StreamEvent};
use serde_json::json;
use support::mock_provider::{Dialect, MockProvider, Reply};
use support::*;

const SIG: &str = "CiQBjz1rX7Wq2Lm9Vb4Tz8Nc1Hs6Jd0Fy5Ga3Qe7Uo2Ip4KaEmwBjz1rX9Sl1Dx6Cv8Bn3Mm0ZtRk5Pw7Yq2Ls4Nf6Hj8Gd0Ea3Tc5Vb7Xn9Zm1Kq3Wr5Ys7Ut9Io1Op3As5Df7Gh9Jk1Lz3Xc5Vb7Nm9Qw1Er3Ty5Ui7Op9Aa==";

fn text_request() -> Request {
    let mut r = Request::new(
        "gemini-2.5-flash",
        vec![Message::system(SYSTEM), Message::user("Say hello in one short sentence.")],
    );
    r.max_tokens = Some(1024);
    r
}

fn tools_request() -> Request {
    let mut r =
        Request::new("gemini-3-pro-preview", vec![Message::system(SYSTEM), Message::user(TOOLS_PROMPT)]);
    r.tools = fixture_tools();
    r.max_tokens = Some(8192);
    r.reasoning_effort = Some(ReasoningEffort::Low);
    r
}

#[tokio::test]
async fn text_request_and_crlf_stream_match_the_transcripts() {
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push_wire("gemini/stream_text.sse");
    let client = client_for(&mock, "gemini-2.5-flash");
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(error, None);
    assert_request_matches(&mock, 0, "gemini/request_text.json");
    assert_eq!(
        events[..2],
        [
            StreamEvent::TextDelta("Hello! How can I".into()),
            StreamEvent::TextDelta(" help you today?".into())
        ]
    );
    let response = finish_of(&events);
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert!(response.usage.input_tokens > 0);
}

#[tokio::test]
async fn thinking_config_follows_the_model_generation() {
    let wires = ["gemini/stream_thinking_text.sse", "gemini/stream_thinking_text.sse"];
    let (mock, client) = serving(Dialect::Gemini, &wires, "gemini-2.5-flash").await;
    let mut r = reasoning_request("gemini-2.5-flash");
    let events = stream_matching(&mock, &client, &r, 0, "gemini/request_thinking.json").await;
    assert_eq!(mock.requests()[0].body["generationConfig"]["thinkingConfig"]["includeThoughts"], json!(true));
    let thinking = thinking_deltas(&events);
    assert!(thinking.starts_with("**Factoring 1001**") && thinking.contains("**Confirming"), "{thinking}");
    let response = finish_of(&events);
    assert_eq!(response.text(), "No. 1001 = 7 × 11 × 13, so it is composite.");
    assert_eq!(response.usage.reasoning_tokens, 211);
    assert_eq!(response.usage.output_tokens, 18 + 211);

    r.model = "gemini-3-pro-preview".into();
    collect(&client, &r).await;
    assert_request_matches(&mock, 1, "gemini/request_thinking_level_gemini3.json");
}

#[tokio::test]
async fn function_calls_keep_signatures_and_are_echoed_verbatim() {
    let wires = ["gemini/stream_two_tools.sse", "gemini/stream_text.sse"];
    let (mock, client) = serving(Dialect::Gemini, &wires, "gemini-3-pro-preview").await;
    let request = tools_request();
    let events = stream_matching(&mock, &client, &request, 0, "gemini/request_tools.json").await;
    assert!(events.contains(&StreamEvent::ToolCallEnd {
        id: "g7p2q9xk".into(),
        name: "grep".into(),
        arguments: json!({"pattern": "TODO", "path": "src"}),
    }));
    let response = finish_of(&events);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls = response.tool_calls();
    assert_eq!(calls[0].signature.as_deref(), Some(SIG));
    assert_eq!(calls[1].signature, None);

    let next = with_fixture_results(&request, &response);
    stream_matching(&mock, &client, &next, 1, "gemini/request_tool_results.json").await;
}

#[tokio::test]
async fn gemini25_calls_without_ids_get_local_ids_that_are_not_sent_back() {
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push_wire("gemini/stream_two_tools_gemini25.sse");
    mock.push_wire("gemini/stream_text.sse");
    let client = client_for(&mock, "gemini-2.5-flash");
    let mut request = tools_request();
    request.model = "gemini-2.5-flash".into();
    let (events, error) = collect(&client, &request).await;
    assert_eq!(error, None);
    let response = finish_of(&events);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id);
    let results = calls.iter().map(|c| tool_result(&c.id, &c.name, "ok")).collect();
    let mut next = request.clone();
    next.messages.push(response.to_message());
    next.messages.push(Message::tool_results(results));
    collect(&client, &next).await;
    let body = &mock.requests()[1].body;
    let model_turn = &body["contents"][1];
    assert_eq!(
        model_turn["parts"][0]["functionCall"],
        json!({"name": "read_file", "args": {"path": "src/main.rs"}})
    );
    assert_eq!(model_turn["parts"][0]["thoughtSignature"], json!(SIG));
    assert_eq!(
        body["contents"][2]["parts"][1]["functionResponse"],
        json!({"name": "grep", "response": {"result": "ok"}})
    );
}

#[tokio::test]
async fn non_streaming_response_is_parsed() {
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push_wire("gemini/response_two_tools.json");
    let client = client_for(&mock, "gemini-3-pro-preview");
    let response = client.complete(&tools_request()).await.expect("complete");
    assert_eq!(mock.requests()[0].path, "/v1beta/models/gemini-3-pro-preview:generateContent");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls()[0].id, "r4d8f1lz");
    assert_eq!(response.tool_calls()[0].signature.as_deref(), Some(SIG));
    assert_eq!(response.usage.reasoning_tokens, 142);
}

#[tokio::test]
async fn error_transcripts_are_classified() {
    let cases: [(&str, ErrorCheck); 6] = [
        (
            "error_400_api_key_invalid.http",
            |e| matches!(e, LlmError::Authentication { var, .. } if var == "GEMINI_API_KEY"),
        ),
        ("error_403_permission_denied.http", |e| matches!(e, LlmError::Authentication { .. })),
        (
            "error_429_resource_exhausted.http",
            |e| matches!(e, LlmError::RateLimit { retry_after: Some(d), .. } if d.as_secs() == 26),
        ),
        ("error_500_internal.http", |e| matches!(e, LlmError::Server { .. })),
        ("error_503_unavailable.http", |e| matches!(e, LlmError::Overloaded { .. })),
        ("error_400_context_length.http", |e| matches!(e, LlmError::ContextLengthExceeded { .. })),
    ];
    assert_errors_classified(Dialect::Gemini, "gemini-2.5-flash", &text_request(), &cases).await;
}

#[tokio::test]
async fn midstream_error_after_text_is_overload_and_not_retried() {
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push_wire("gemini/stream_error_midstream.sse");
    mock.push_wire("gemini/stream_text.sse");
    let client = client_for(&mock, "gemini-2.5-flash");
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(events, [StreamEvent::TextDelta("Hello! How can I".into())]);
    assert!(matches!(error, Some(LlmError::Overloaded { .. })), "{error:?}");
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn stream_without_finish_reason_is_cut() {
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push(Reply::wire_cut("gemini/stream_text.sse", 1));
    let client = client_for(&mock, "gemini-2.5-flash").with_retry(RetryPolicy::none());
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(text_deltas(&events), "Hello! How can I");
    assert!(matches!(error, Some(LlmError::StreamCut { .. })), "{error:?}");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Finish(_))));
}
