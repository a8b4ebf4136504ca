//! Client behaviour common to every dialect, driven by scripted turns: event assembly, retries
//! (and when not to retry), network failures, and cassette record/replay.

use crate::support;

use std::time::Duration;

use agentls::config::{ProviderKind, ProviderSettings};
use agentls::llm::{Client, ContentPart, FinishReason, LlmError, Message, Request, RetryPolicy, StreamEvent};
use serde_json::json;
use support::mock_provider::{Dialect, ErrorPreset, MockProvider, Reply, StreamFailure, Turn, wire_bytes};
use support::*;

fn request() -> Request {
    let mut r = Request::new("mock-model", vec![Message::system(SYSTEM), Message::user("go")]);
    r.tools = fixture_tools();
    r
}

fn scripted() -> Turn {
    Turn::new()
        .thinking("Let me look at the file first.", "sig-1")
        .text("Reading it now.")
        .tool_call("call_1", "read_file", json!({"path": "src/main.rs", "limit": 20}))
        .fragment(5)
        .usage(120, 30)
}

#[tokio::test]
async fn scripted_turns_stream_in_every_dialect() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push(scripted());
        let client = client_for(&mock, "mock-model");
        let (events, error) = collect(&client, &request()).await;
        assert_eq!(error, None, "{dialect:?}");
        assert_eq!(thinking_deltas(&events), "Let me look at the file first.", "{dialect:?}");
        assert_eq!(text_deltas(&events), "Reading it now.", "{dialect:?}");
        let fragments: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { id, arguments_fragment } if id == "call_1" => {
                    Some(arguments_fragment.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&fragments).unwrap(),
            json!({"path": "src/main.rs", "limit": 20})
        );
        let start =
            events.iter().position(|e| matches!(e, StreamEvent::ToolCallStart { id, .. } if id == "call_1"));
        let end =
            events.iter().position(|e| matches!(e, StreamEvent::ToolCallEnd { id, .. } if id == "call_1"));
        assert!(start.is_some() && start < end, "{dialect:?}: {events:?}");
        let response = finish_of(&events);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls, "{dialect:?}");
        assert_eq!(response.tool_calls()[0].arguments, json!({"path": "src/main.rs", "limit": 20}));
        assert_eq!(response.usage.input_tokens, 120, "{dialect:?}");
        assert_eq!(response.reasoning().as_deref(), Some("Let me look at the file first."));
        if dialect != Dialect::OpenAiChat {
            let signed = response
                .content
                .iter()
                .any(|p| matches!(p, ContentPart::Thinking { signature: Some(s), .. } if s == "sig-1"));
            assert!(signed, "{dialect:?}: {:?}", response.content);
        }
    }
}

#[tokio::test]
async fn scripted_turns_complete_in_every_dialect() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push(scripted());
        let response = client_for(&mock, "mock-model").complete(&request()).await.expect("complete");
        assert_eq!(response.text(), "Reading it now.", "{dialect:?}");
        assert_eq!(response.tool_calls()[0].name, "read_file", "{dialect:?}");
        assert_eq!(response.usage.output_tokens, 30, "{dialect:?}");
        assert_eq!(response.finish_reason, FinishReason::ToolCalls, "{dialect:?}");
    }
}

#[tokio::test]
async fn length_finish_reason_maps_in_every_dialect() {
    let reasons = [
        (Dialect::Anthropic, "max_tokens"),
        (Dialect::OpenAiResponses, "max_output_tokens"),
        (Dialect::OpenAiChat, "length"),
        (Dialect::Gemini, "MAX_TOKENS"),
    ];
    for (dialect, reason) in reasons {
        let mock = MockProvider::start(dialect).await;
        mock.push(Turn::new().text("partial").finish_reason(reason));
        let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
        assert_eq!(error, None);
        assert_eq!(finish_of(&events).finish_reason, FinishReason::Length, "{dialect:?}");
    }
}

#[tokio::test]
async fn transient_errors_are_retried_then_succeed() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push(ErrorPreset::RateLimit { retry_after_secs: 0.01 });
        mock.push(ErrorPreset::Overloaded);
        mock.push(ErrorPreset::Server);
        mock.push(Turn::new().text("finally"));
        let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
        assert_eq!(error, None, "{dialect:?}");
        assert_eq!(finish_of(&events).text(), "finally");
        assert_eq!(mock.request_count(), 4, "{dialect:?}");
        let bodies: Vec<_> = mock.requests().into_iter().map(|r| r.body).collect();
        assert!(bodies.windows(2).all(|w| w[0] == w[1]), "retries resend the same request");
    }
}

#[tokio::test]
async fn retries_give_up_after_the_limit() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    for _ in 0..5 {
        mock.push(ErrorPreset::Server);
    }
    let client = client_for(&mock, "mock-model").with_retry(RetryPolicy { max_retries: 2, ..fast_retry() });
    let error = client.complete(&request()).await.unwrap_err();
    assert!(matches!(error, LlmError::Server { status: Some(500), .. }), "{error:?}");
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test]
async fn retry_after_is_honoured_instead_of_the_backoff() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push(ErrorPreset::RateLimit { retry_after_secs: 0.02 });
        mock.push(Turn::new().text("ok"));
        // A backoff of an hour would hang the test; only the provider's delay lets it finish.
        let slow = RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(7200),
        };
        let client = client_for(&mock, "mock-model").with_retry(slow);
        let outcome = tokio::time::timeout(Duration::from_secs(60), collect(&client, &request())).await;
        let (events, error) = outcome.unwrap_or_else(|_| panic!("{dialect:?}: retry-after was not honoured"));
        assert_eq!(error, None);
        assert_eq!(finish_of(&events).text(), "ok");
    }
}

#[tokio::test]
async fn final_errors_are_never_retried() {
    for dialect in Dialect::ALL {
        for preset in [ErrorPreset::Authentication, ErrorPreset::Quota, ErrorPreset::ContextLength] {
            let mock = MockProvider::start(dialect).await;
            mock.push(preset.clone());
            mock.push(Turn::new().text("should not be reached"));
            let error = client_for(&mock, "mock-model").stream(&request()).await.err().expect("error");
            let expected = match preset {
                ErrorPreset::Authentication => matches!(error, LlmError::Authentication { .. }),
                ErrorPreset::Quota => matches!(error, LlmError::QuotaExceeded { .. }),
                _ => matches!(error, LlmError::ContextLengthExceeded { .. }),
            };
            assert!(expected, "{dialect:?} {preset:?}: {error:?}");
            assert_eq!(mock.request_count(), 1, "{dialect:?} {preset:?}");
        }
    }
}

#[tokio::test]
async fn midstream_failure_after_output_is_not_retried() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        // Enough events for text to have been handed on, then an overload error.
        mock.push(Turn::new().text("abcdefghijklmnop").fragment(2).fail_after(4, StreamFailure::Overloaded));
        mock.push(Turn::new().text("second"));
        let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
        assert!(!text_deltas(&events).is_empty(), "{dialect:?}");
        assert!(error.as_ref().is_some_and(|e| e.is_retryable()), "{dialect:?}: {error:?}");
        assert_eq!(mock.request_count(), 1, "{dialect:?}");
    }
}

#[tokio::test]
async fn midstream_failure_before_output_is_retried() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        let before_output = if dialect == Dialect::OpenAiResponses { 2 } else { 0 };
        mock.push(Turn::new().text("lost").fail_after(before_output, StreamFailure::RateLimit));
        mock.push(Turn::new().text("second"));
        let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
        assert_eq!(error, None, "{dialect:?}");
        assert_eq!(text_deltas(&events), "second", "{dialect:?}");
        assert_eq!(mock.request_count(), 2, "{dialect:?}");
    }
}

#[tokio::test]
async fn cut_streams_are_errors_in_every_dialect() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push(Turn::new().text("abcdefghij").fragment(3).fail_after(3, StreamFailure::Cut));
        let client = client_for(&mock, "mock-model").with_retry(RetryPolicy::none());
        let (events, error) = collect(&client, &request()).await;
        assert!(matches!(error, Some(LlmError::StreamCut { .. })), "{dialect:?}: {error:?}");
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Finish(_))));
    }
}

#[tokio::test]
async fn network_failures_name_the_url_and_are_retried() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    mock.push(Reply::Hangup);
    mock.push(Turn::new().text("after hangup"));
    let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
    assert_eq!(error, None);
    assert_eq!(finish_of(&events).text(), "after hangup");
    assert_eq!(mock.request_count(), 2);

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let settings = ProviderSettings {
        kind: ProviderKind::OpenAiChat,
        model: "m".into(),
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: None,
        api_key_var: None,
        chosen_by: "test".into(),
        network: Default::default(),
    };
    let client = Client::new(settings).unwrap().with_retry(RetryPolicy { max_retries: 1, ..fast_retry() });
    let error = client.complete(&request()).await.unwrap_err();
    match &error {
        LlmError::Network { url, .. } => {
            assert!(url.contains(&format!("127.0.0.1:{port}/v1/chat/completions")))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn recorded_runs_replay_identically_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(scripted());
    mock.push(Turn::new().text("done"));
    mock.push(ErrorPreset::Authentication);
    let recorder = client_for(&mock, "mock-model").recording_to(&cassette).unwrap();
    let (live_events, error) = collect(&recorder, &request()).await;
    assert_eq!(error, None);
    let live_complete = recorder.complete(&request()).await.unwrap();
    let live_error = recorder.complete(&request()).await.unwrap_err();

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains(fixture_key(Dialect::Anthropic)), "the key leaked into the cassette");

    let replay = Client::new(ProviderSettings {
        kind: ProviderKind::Replay,
        model: "replay".into(),
        base_url: cassette.display().to_string(),
        api_key: None,
        api_key_var: None,
        chosen_by: "test".into(),
        network: Default::default(),
    })
    .unwrap();
    let (replayed, error) = collect(&replay, &request()).await;
    assert_eq!(error, None);
    assert_eq!(replayed, live_events);
    assert_eq!(replay.complete(&request()).await.unwrap(), live_complete);
    assert_eq!(replay.complete(&request()).await.unwrap_err(), live_error);
    let exhausted = replay.complete(&request()).await.unwrap_err();
    assert!(matches!(exhausted, LlmError::Cassette { .. }), "{exhausted:?}");
    assert_eq!(mock.request_count(), 3, "replay never touches the network");
}

#[tokio::test]
async fn a_server_answering_a_streaming_request_with_json_still_streams() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push_wire(&format!("{}/response_two_tools.json", dialect.wire_dir()));
        let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
        assert_eq!(error, None, "{dialect:?}");
        let started: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallStart { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let response = finish_of(&events);
        let names: Vec<&str> = response.tool_calls().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.len(), 2, "{dialect:?}: {response:?}");
        assert_eq!(started, names, "{dialect:?}");
        assert_eq!(response.finish_reason, FinishReason::ToolCalls, "{dialect:?}");
    }
    // Gemini's streamGenerateContent without alt=sse: a JSON array of the stream's chunks.
    let mock = MockProvider::start(Dialect::Gemini).await;
    let sse = String::from_utf8(wire_bytes("gemini/stream_two_tools.sse")).unwrap();
    let chunks: Vec<serde_json::Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    mock.push(Reply::Json { status: 200, headers: vec![], body: serde_json::Value::Array(chunks) });
    let (events, error) = collect(&client_for(&mock, "mock-model"), &request()).await;
    assert_eq!(error, None);
    let calls: Vec<String> = finish_of(&events).tool_calls().iter().map(|c| c.name.clone()).collect();
    assert_eq!(calls, ["read_file", "grep"]);
}
