//! Chat Completions adapter against the OpenAI transcripts and the compatible servers' quirks
//! (Ollama, vLLM, llama.cpp, OpenRouter).

use crate::support;

use agentls::config::Secret;
use agentls::llm::{
    Client, ContentPart, FinishReason, LlmError, Message, ReasoningEffort, Request, RetryPolicy, StreamEvent,
};
use serde_json::json;
use support::mock_provider::{Dialect, MockProvider, Reply, wire_json};
use support::*;

fn text_request() -> Request {
    let mut r = Request::new(
        "gpt-4.1",
        vec![Message::system(SYSTEM), Message::user("Say hello in one short sentence.")],
    );
    r.max_tokens = Some(1024);
    r
}

fn tools_request(model: &str) -> Request {
    let mut r = Request::new(model, vec![Message::system(SYSTEM), Message::user(TOOLS_PROMPT)]);
    r.tools = fixture_tools();
    r.max_tokens = Some(4096);
    r
}

#[tokio::test]
async fn text_and_reasoning_requests_match_the_transcripts() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    mock.push_wire("openai_chat/stream_text.sse");
    mock.push_wire("openai_chat/stream_reasoning_text.sse");
    let client = client_for(&mock, "gpt-4.1");
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(error, None);
    assert_request_matches(&mock, 0, "openai_chat/request_text.json");
    assert_eq!(
        events[..2],
        [
            StreamEvent::TextDelta("Hello! How".into()),
            StreamEvent::TextDelta(" can I help you today?".into())
        ]
    );
    assert_eq!(finish_of(&events).finish_reason, FinishReason::Stop);

    let r = reasoning_request("gpt-5");
    let events = stream_matching(&mock, &client, &r, 1, "openai_chat/request_reasoning.json").await;
    let response = finish_of(&events);
    assert_eq!(response.text(), "No. 1001 = 7 × 11 × 13, so it is composite.");
    assert_eq!(response.usage.reasoning_tokens, 192);
    assert_eq!(response.usage.input_tokens, 31);
    assert_eq!(response.usage.output_tokens, 214);
}

#[tokio::test]
async fn tool_fragments_join_by_index_and_results_are_echoed() {
    let wires = ["openai_chat/stream_two_tools.sse", "openai_chat/stream_text.sse"];
    let (mock, client) = serving(Dialect::OpenAiChat, &wires, "gpt-4.1").await;
    let request = tools_request("gpt-4.1");
    let events = stream_matching(&mock, &client, &request, 0, "openai_chat/request_tools.json").await;
    let fragments = argument_fragments(&events, "call_H6s2JfN9vB4xK1qW8tR3mE7u");
    assert_eq!(fragments, ["{\"pattern\"", ": \"TODO\", ", "\"path\": \"src\"}"]);
    let response = finish_of(&events);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls()[0].arguments, json!({"path": "src/main.rs"}));

    let next = with_fixture_results(&request, &response);
    stream_matching(&mock, &client, &next, 1, "openai_chat/request_tool_results.json").await;
}

#[tokio::test]
async fn non_streaming_response_is_parsed() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    mock.push_wire("openai_chat/response_two_tools.json");
    let client = client_for(&mock, "gpt-4.1");
    let response = client.complete(&tools_request("gpt-4.1")).await.expect("complete");
    let body = &mock.requests()[0].body;
    assert_eq!(body["stream"], json!(false));
    assert!(body.get("stream_options").is_none());
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls()[1].arguments, json!({"pattern": "TODO", "path": "src"}));
    assert_eq!(response.usage.cache_read_tokens, 1408);
}

#[tokio::test]
async fn compatible_servers_reasoning_and_tool_styles() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    let client = client_for(&mock, "qwen3:8b");
    let request = tools_request("qwen3:8b");

    // Ollama: `reasoning`, whole calls in one chunk.
    mock.push_wire("openai_chat/compat/ollama_stream_reasoning_tools.sse");
    let (events, error) = collect(&client, &request).await;
    assert_eq!(error, None);
    let response = finish_of(&events);
    assert_eq!(response.reasoning().as_deref(), Some("The user wants the file and a TODO search."));
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), &calls[0].arguments),
        ("call_k3v9x2qd", &json!({"path": "src/main.rs"}))
    );
    assert_eq!(
        (calls[1].id.as_str(), &calls[1].arguments),
        ("call_p8m1z7wn", &json!({"pattern": "TODO", "path": "src"}))
    );

    // llama.cpp: `reasoning_content`, first fragment carries id, name and argument text.
    mock.push_wire("openai_chat/compat/llamacpp_stream_reasoning_tools.sse");
    let (events, error) = collect(&client, &request).await;
    assert_eq!(error, None);
    let response = finish_of(&events);
    assert_eq!(response.reasoning().as_deref(), Some("Need to read the file and grep for TODO."));
    let calls = response.tool_calls();
    assert_eq!(calls[0].id, "Qm3Xr8Tz1Kp6Wv9Ls2Nd5Bf7Hj0Yc4Ga");
    assert_eq!(calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(calls[1].arguments, json!({"pattern": "TODO", "path": "src"}));

    // vLLM: `reasoning` then content.
    mock.push_wire("openai_chat/compat/vllm_stream_reasoning_text.sse");
    let (events, error) = collect(&client, &request).await;
    assert_eq!(error, None);
    assert_eq!(thinking_deltas(&events), "1001 = 7 × 143 and 143 = 11 × 13.");
    let response = finish_of(&events);
    assert!(matches!(response.content[0], ContentPart::Thinking { .. }));
    assert_eq!(response.text(), "No. 1001 = 7 × 11 × 13, so it is composite.");

    // OpenRouter: comment keep-alives, `reasoning` + reasoning_details, repeated finish chunks.
    mock.push_wire("openai_chat/compat/openrouter_stream_reasoning_tools.sse");
    let (events, error) = collect(&client, &request).await;
    assert_eq!(error, None);
    let response = finish_of(&events);
    assert_eq!(response.reasoning().as_deref(), Some("Read the file, then grep src for TODO."));
    assert_eq!(response.tool_calls().len(), 2);
    assert_eq!(response.tool_calls()[1].arguments, json!({"pattern": "TODO", "path": "src"}));
}

#[tokio::test]
async fn compatible_request_shapes() {
    let ollama = MockProvider::start(Dialect::OpenAiChat).await;
    ollama.push_wire("openai_chat/compat/ollama_stream_reasoning_tools.sse");
    let mut settings = settings_for(&ollama, "qwen3:8b");
    settings.api_key = Some(Secret::new("ollama"));
    let client = Client::new(settings).unwrap();
    let mut r = tools_request("qwen3:8b");
    r.max_tokens = None;
    r.reasoning_effort = Some(ReasoningEffort::Medium);
    collect(&client, &r).await;
    let expected = wire_json("openai_chat/compat/ollama_request_reasoning_tools.json");
    let got = &ollama.requests()[0];
    assert_eq!(got.path, expected["path"]);
    assert_eq!(got.header("authorization"), Some("Bearer ollama"));
    // `strict: false` is the documented default; servers that do not know it ignore it.
    let got_body = without_strict(&got.body);
    for key in ["model", "messages", "tools", "reasoning_effort", "stream", "stream_options"] {
        assert_eq!(got_body[key], expected["body"][key], "{key}");
    }

    // OpenRouter (recognised by its base URL): `reasoning: {effort}` and usage accounting.
    let mut openrouter = settings_for(&ollama, "anthropic/claude-sonnet-4.5");
    openrouter.base_url = "https://openrouter.ai/api/v1".into();
    let mut r = tools_request("anthropic/claude-sonnet-4.5");
    r.max_tokens = None;
    r.reasoning_effort = Some(ReasoningEffort::Medium);
    let body = agentls::llm::openai_chat::OpenAiChat::new(openrouter).request_body(&r, true);
    let body = serde_json::to_value(&body).unwrap();
    let expected = wire_json("openai_chat/compat/openrouter_request_reasoning_tools.json");
    assert_eq!(without_strict(&body), expected["body"]);
}

fn without_strict(body: &serde_json::Value) -> serde_json::Value {
    let mut body = body.clone();
    for tool in body["tools"].as_array_mut().into_iter().flatten() {
        tool["function"].as_object_mut().map(|f| f.remove("strict"));
    }
    body
}

#[tokio::test]
async fn error_transcripts_are_classified() {
    let cases: [(&str, ErrorCheck); 11] = [
        (
            "error_401_invalid_api_key.http",
            |e| matches!(e, LlmError::Authentication { var, .. } if var == "OPENAI_API_KEY"),
        ),
        (
            "error_429_rate_limit.http",
            |e| matches!(e, LlmError::RateLimit { retry_after: Some(d), .. } if d.as_secs() == 12),
        ),
        ("error_429_insufficient_quota.http", |e| matches!(e, LlmError::QuotaExceeded { .. })),
        ("error_500_server_error.http", |e| matches!(e, LlmError::Server { .. })),
        ("error_400_context_length_exceeded.http", |e| matches!(e, LlmError::ContextLengthExceeded { .. })),
        ("error_400_context_length_exceeded_gpt5.http", |e| {
            matches!(e, LlmError::ContextLengthExceeded { .. })
        }),
        ("compat/llamacpp_error_400_context_size.http", |e| {
            matches!(e, LlmError::ContextLengthExceeded { .. })
        }),
        ("compat/vllm_error_400_context_length.http", |e| {
            matches!(e, LlmError::ContextLengthExceeded { .. })
        }),
        (
            "compat/ollama_error_404_model_not_found.http",
            |e| matches!(e, LlmError::InvalidRequest { status: Some(404), message, .. } if message.contains("not found")),
        ),
        ("compat/openrouter_error_401.http", |e| matches!(e, LlmError::Authentication { .. })),
        ("compat/openrouter_error_402_credits.http", |e| matches!(e, LlmError::QuotaExceeded { .. })),
    ];
    let (mock, client, _) =
        assert_errors_classified(Dialect::OpenAiChat, "gpt-4.1", &text_request(), &cases).await;
    mock.push_wire("openai_chat/compat/openrouter_error_429_rate_limit.http");
    let error = client.stream(&text_request()).await.err().unwrap();
    assert!(
        matches!(&error, LlmError::RateLimit { retry_after: Some(d), message, .. }
        if d.as_secs() == 20 && message.contains("rate-limited upstream")),
        "{error:?}"
    );
}

#[tokio::test]
async fn midstream_errors_after_text_are_classified_and_not_retried() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    let client = client_for(&mock, "gpt-4.1");
    for file in
        ["openai_chat/stream_error_midstream.sse", "openai_chat/compat/openrouter_stream_midstream_error.sse"]
    {
        let before = mock.request_count();
        mock.push_wire(file);
        mock.push_wire("openai_chat/stream_text.sse");
        let (events, error) = collect(&client, &text_request()).await;
        assert_eq!(events, [StreamEvent::TextDelta("Hello! How".into())], "{file}");
        let error = error.expect(file);
        assert!(!matches!(error, LlmError::StreamCut { .. }), "{file}: {error:?}");
        assert!(error.is_retryable(), "{file}: {error:?}");
        assert_eq!(mock.request_count(), before + 1, "{file}: must not retry after output");
        assert_eq!(mock.pending(), 1);
        // Consume the unused reply so the next case starts clean.
        collect(&client, &text_request()).await;
    }
}

#[tokio::test]
async fn stream_without_done_or_finish_is_cut() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    mock.push(Reply::wire_cut("openai_chat/stream_text.sse", 3));
    let client = client_for(&mock, "gpt-4.1").with_retry(RetryPolicy::none());
    let (events, error) = collect(&client, &text_request()).await;
    assert_eq!(text_deltas(&events), "Hello! How can I help you today?");
    assert!(matches!(error, Some(LlmError::StreamCut { .. })), "{error:?}");
}
