//! The one support module of the integration tests: every test binary (`tests/*/main.rs`)
//! includes it once, as `crate::support`, and each test module uses what it needs. The benches
//! include the pieces they share with the tests by `#[path]` (the mock provider, the LSP codec and
//! editor answers of `lsp_wire.rs`, TLS, installs).
#![allow(dead_code)]

pub mod exec_binary;
pub mod installed;
pub mod lsp_client;
pub mod lsp_wire;
pub mod memory_env;
pub mod mitmproxy;
pub mod mock_provider;
pub mod processes;
pub mod server_env;
pub mod session_harness;
pub mod text_edits;
pub mod tls;
pub mod tools_support;

use std::time::Duration;

use agentls::config::{ProviderKind, ProviderSettings, Secret};
use agentls::llm::{Client, LlmError, RetryPolicy, StreamEvent};
use futures::StreamExt;
use mock_provider::{Dialect, MockProvider};
use serde_json::Value;

/// The keys the wire transcripts were written with, so header assertions compare exactly.
pub fn fixture_key(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Anthropic => "sk-ant-api03-TEST",
        Dialect::OpenAiResponses | Dialect::OpenAiChat => "sk-proj-TEST",
        Dialect::Gemini => "AIzaSy-TEST",
    }
}

pub fn provider_kind(dialect: Dialect) -> ProviderKind {
    dialect.provider().parse().expect("known provider")
}

pub fn settings_for(mock: &MockProvider, model: &str) -> ProviderSettings {
    let dialect = mock.dialect();
    ProviderSettings {
        kind: provider_kind(dialect),
        model: model.to_string(),
        base_url: mock.url(),
        api_key: Some(Secret::new(fixture_key(dialect))),
        api_key_var: Some(dialect.key_var().to_string()),
        chosen_by: "test".into(),
        network: Default::default(),
    }
}

/// Retries quickly (tests must not sleep for seconds) unless the provider names a delay.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy { max_retries: 3, base_delay: Duration::from_millis(5), max_delay: Duration::from_secs(5) }
}

pub fn client_for(mock: &MockProvider, model: &str) -> Client {
    Client::new(settings_for(mock, model)).expect("client").with_retry(fast_retry())
}

/// Every item of a stream: the events, then the error that ended it (if any).
pub async fn collect(
    client: &Client,
    request: &agentls::llm::Request,
) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut stream = match client.stream(request).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// A mock provider of `dialect` that serves the wire transcripts `wires` in order, and a client
/// of `model` for it.
pub async fn serving(dialect: Dialect, wires: &[&str], model: &str) -> (MockProvider, Client) {
    let mock = MockProvider::start(dialect).await;
    for wire in wires {
        mock.push_wire(wire);
    }
    let client = client_for(&mock, model);
    (mock, client)
}

/// Streams `request`, which must end without an error and be the mock's `index`-th request,
/// matching the `transcript`; the events.
pub async fn stream_matching(
    mock: &MockProvider,
    client: &Client,
    request: &agentls::llm::Request,
    index: usize,
    transcript: &str,
) -> Vec<StreamEvent> {
    let (events, error) = collect(client, request).await;
    assert_eq!(error, None);
    assert_request_matches(mock, index, transcript);
    events
}

/// The argument fragments of the tool call `id`, in the order they streamed.
pub fn argument_fragments<'a>(events: &'a [StreamEvent], id: &str) -> Vec<&'a str> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallDelta { id: call, arguments_fragment } if call == id => {
                Some(arguments_fragment.as_str())
            }
            _ => None,
        })
        .collect()
}

/// The request after `request` answered by `response`: the history with the answer and the
/// fixture's results of its `read_file` and `grep` calls (with the ids the response gave them,
/// which the `request_tool_results.json` transcripts hold).
pub fn with_fixture_results(
    request: &agentls::llm::Request,
    response: &agentls::llm::Response,
) -> agentls::llm::Request {
    let calls = response.tool_calls();
    let id_of = |tool: &str| calls.iter().find(|c| c.name == tool).map(|c| c.id.clone()).expect(tool);
    let mut next = request.clone();
    next.messages.push(response.to_message());
    next.messages.push(agentls::llm::Message::tool_results(vec![
        tool_result(&id_of("read_file"), "read_file", READ_RESULT),
        tool_result(&id_of("grep"), "grep", GREP_RESULT),
    ]));
    next
}

pub fn finish_of(events: &[StreamEvent]) -> agentls::llm::Response {
    match events.last() {
        Some(StreamEvent::Finish(r)) => r.clone(),
        other => panic!("stream did not end with Finish: {other:?}"),
    }
}

pub fn text_deltas(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| if let StreamEvent::TextDelta(t) = e { Some(t.as_str()) } else { None })
        .collect()
}

pub fn thinking_deltas(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| if let StreamEvent::ThinkingDelta(t) = e { Some(t.as_str()) } else { None })
        .collect()
}

/// Puts two request bodies into one canonical shape where the API accepts either spelling:
/// string vs. single-text-block content, argument JSON strings vs. their parsed value,
/// `is_error:false` vs. absent, and Gemini's optional `includeThoughts`.
pub fn normalize(dialect: Dialect, body: &Value) -> Value {
    let mut v = body.clone();
    walk(&mut v, dialect);
    v
}

fn walk(v: &mut Value, dialect: Dialect) {
    match v {
        Value::Object(map) => {
            if dialect == Dialect::Anthropic {
                if let Some(Value::String(s)) = map.get("content").cloned()
                    && map.contains_key("role")
                {
                    map.insert("content".into(), serde_json::json!([{"type": "text", "text": s}]));
                }
                if map.get("type").and_then(Value::as_str) == Some("tool_result") {
                    if let Some(Value::Array(blocks)) = map.get("content").cloned() {
                        let all_text =
                            blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("text"));
                        if all_text {
                            let text: String =
                                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
                            map.insert("content".into(), Value::String(text));
                        }
                    }
                    if map.get("is_error") == Some(&Value::Bool(false)) {
                        map.remove("is_error");
                    }
                }
            }
            if dialect == Dialect::Gemini {
                map.remove("includeThoughts");
            }
            if let Some(Value::String(args)) = map.get("arguments").cloned()
                && let Ok(parsed) = serde_json::from_str::<Value>(&args)
            {
                map.insert("arguments".into(), parsed);
            }
            for (_, child) in map.iter_mut() {
                walk(child, dialect);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| walk(i, dialect)),
        _ => {}
    }
}

pub const SYSTEM: &str = "You are a concise coding assistant running inside an editor.";

/// The request of the reasoning transcripts (`request_reasoning.json`, `request_thinking.json`)
/// for `model`: a question to think about, with a low effort.
pub fn reasoning_request(model: &str) -> agentls::llm::Request {
    use agentls::llm::{Message, ReasoningEffort, Request};
    let mut r = Request::new(model, vec![Message::system(SYSTEM), Message::user("Is 1001 a prime number?")]);
    r.reasoning_effort = Some(ReasoningEffort::Low);
    r.max_tokens = Some(8192);
    r
}
pub const TOOLS_PROMPT: &str = "Open src/main.rs and find TODO comments under src/.";
pub const READ_RESULT: &str = "fn main() {\n    // TODO: parse args\n    println!(\"hi\");\n}\n";
pub const GREP_RESULT: &str =
    "src/main.rs:2:    // TODO: parse args\nsrc/lsp.rs:40:    // TODO: handle shutdown";

/// The two tools every `request_tools*.json` transcript declares.
pub fn fixture_tools() -> Vec<agentls::llm::ToolDefinition> {
    use serde_json::json;
    vec![
        agentls::llm::ToolDefinition {
            name: "read_file".into(),
            description: "Read a UTF-8 text file from the workspace.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string",
                "description": "Workspace-relative file path"}}, "required": ["path"]})
            .into(),
        },
        agentls::llm::ToolDefinition {
            name: "grep".into(),
            description: "Search files under a directory with a regex.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for"},
                "path": {"type": "string", "description": "Directory to search"}}, "required": ["pattern", "path"]})
            .into(),
        },
    ]
}

/// Asserts that the mock's `index`-th request matches a `request_*.json` transcript: method,
/// path, every transcript header (exactly) and the normalized body.
pub fn assert_request_matches(mock: &MockProvider, index: usize, transcript: &str) {
    let expected = mock_provider::wire_json(transcript);
    let requests = mock.requests();
    let got = requests.get(index).unwrap_or_else(|| panic!("no request #{index} (have {})", requests.len()));
    assert_eq!(got.method, expected["method"], "{transcript}: method");
    assert_eq!(got.path, expected["path"], "{transcript}: path");
    for (name, value) in expected["headers"].as_object().expect("headers") {
        assert_eq!(got.header(name), value.as_str(), "{transcript}: header {name}");
    }
    let dialect = mock.dialect();
    pretty_assertions::assert_eq!(
        normalize(dialect, &got.body),
        normalize(dialect, &expected["body"]),
        "{transcript}: body"
    );
}

pub fn tool_result(call_id: &str, name: &str, content: &str) -> agentls::llm::ToolResult {
    agentls::llm::ToolResult {
        call_id: call_id.into(),
        name: name.into(),
        content: content.into(),
        is_error: false,
        images: vec![],
    }
}

pub fn tool_call(
    id: &str,
    name: &str,
    arguments: Value,
    signature: Option<&str>,
) -> agentls::llm::ContentPart {
    agentls::llm::ContentPart::ToolCall(agentls::llm::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        signature: signature.map(str::to_string),
    })
}

/// A predicate over an error, for tables of error cases.
pub type ErrorCheck = fn(&LlmError) -> bool;

/// Serves each error transcript of `cases` (a file of `dialect`'s wire folder) to a streamed and
/// then to a complete `request` of a client without retries; both errors must pass the case's
/// check. Returns the mock and the client, for more, and the streamed errors.
pub async fn assert_errors_classified(
    dialect: Dialect,
    model: &str,
    request: &agentls::llm::Request,
    cases: &[(&str, ErrorCheck)],
) -> (MockProvider, Client, Vec<LlmError>) {
    let mock = MockProvider::start(dialect).await;
    let client = client_for(&mock, model).with_retry(RetryPolicy::none());
    let mut streamed = Vec::new();
    for (file, check) in cases {
        mock.push_wire(&format!("{}/{file}", dialect.wire_dir()));
        let error = client.stream(request).await.err().expect(file);
        assert!(check(&error), "{file}: {error:?}");
        streamed.push(error);
        mock.push_wire(&format!("{}/{file}", dialect.wire_dir()));
        let error = client.complete(request).await.expect_err(file);
        assert!(check(&error), "{file} (complete): {error:?}");
    }
    (mock, client, streamed)
}
