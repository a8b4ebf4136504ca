//! An MCP server's tool schema as each dialect sends it (`src/llm/schema.rs`): the request body
//! the mock provider recorded holds the schema without the features that provider rejects, and
//! the rest of it as the server wrote it. The responses are the dialects' wire transcripts.

use crate::support;

use agentls::llm::{Message, Request, ToolDefinition};
use serde_json::{Value, json};
use support::mock_provider::{Dialect, MockProvider};
use support::*;

/// A schema as MCP servers write them (a Python SDK's, with `$defs`; a root `anyOf`; an array
/// without `items`; `$schema`).
fn server_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "target": {"$ref": "#/$defs/Target", "description": "where"},
            "tags": {"type": "array"}
        },
        "anyOf": [{"required": ["target"]}, {"required": ["tags"]}],
        "$defs": {"Target": {"type": "object", "properties": {"name": {"type": "string"}}}}
    })
}

fn request(model: &str) -> Request {
    let mut r = Request::new(model, vec![Message::system(SYSTEM), Message::user(TOOLS_PROMPT)]);
    r.tools = vec![ToolDefinition {
        name: "mcp__docs__find".into(),
        description: "Finds a target.".into(),
        parameters: server_schema().into(),
    }];
    r.max_tokens = Some(1024);
    r
}

/// The parameters of the one tool in a recorded body.
fn sent(dialect: Dialect, body: &Value) -> Value {
    match dialect {
        Dialect::Anthropic => body["tools"][0]["input_schema"].clone(),
        Dialect::OpenAiResponses => body["tools"][0]["parameters"].clone(),
        Dialect::OpenAiChat => body["tools"][0]["function"]["parameters"].clone(),
        Dialect::Gemini => body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"].clone(),
    }
}

async fn schema_sent(dialect: Dialect, model: &str, transcript: &str) -> Value {
    let mock = MockProvider::start(dialect).await;
    mock.push_wire(transcript);
    let client = client_for(&mock, model);
    client.complete(&request(model)).await.expect("the transcript answers");
    sent(dialect, &mock.requests()[0].body)
}

#[tokio::test]
async fn anthropic_gets_no_combinator_at_the_root() {
    let mut expected = server_schema();
    expected.as_object_mut().unwrap().remove("anyOf");
    let got = schema_sent(Dialect::Anthropic, "claude-sonnet-4-5", "anthropic/response_two_tools.json").await;
    assert_eq!(got, expected);
}

#[tokio::test]
async fn openai_gets_no_root_combinator_and_items_for_every_array() {
    let mut expected = server_schema();
    expected.as_object_mut().unwrap().remove("anyOf");
    expected["properties"]["tags"]["items"] = json!({});
    for (dialect, transcript) in [
        (Dialect::OpenAiResponses, "openai_responses/response_two_tools.json"),
        (Dialect::OpenAiChat, "openai_chat/response_two_tools.json"),
    ] {
        assert_eq!(schema_sent(dialect, "gpt-5", transcript).await, expected, "{dialect:?}");
    }
}

#[tokio::test]
async fn gemini_gets_no_schema_keyword_and_references_inlined() {
    let got = schema_sent(Dialect::Gemini, "gemini-3-pro-preview", "gemini/response_two_tools.json").await;
    assert_eq!(
        got,
        json!({
            "type": "object",
            "properties": {
                "target": {"type": "object", "properties": {"name": {"type": "string"}}, "description": "where"},
                "tags": {"type": "array"}
            },
            "anyOf": [{"required": ["target"]}, {"required": ["tags"]}]
        })
    );
}
