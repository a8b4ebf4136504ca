//! Provider-neutral request/response types shared by every adapter. Everything here is
//! `Serialize + Deserialize` because sessions and cassettes store them as JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

pub use crate::config::ReasoningEffort;

/// Who said a message. `Tool` messages carry only [`ContentPart::ToolResult`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One conversation message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentPart>,
}

impl Message {
    pub fn new(role: Role, content: Vec<ContentPart>) -> Self {
        Self { role, content }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![ContentPart::text(text)])
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentPart::text(text)])
    }

    /// The assistant turn as the model produced it (echo it back unchanged: signatures matter).
    pub fn assistant(content: Vec<ContentPart>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A message with the results of one round of tool calls.
    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self::new(Role::Tool, results.into_iter().map(ContentPart::ToolResult).collect())
    }

    /// Concatenated text parts.
    pub fn text(&self) -> String {
        collect_text(&self.content)
    }
}

/// Image bytes with their media type (`image/png`, ...). Serialized as base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
}

/// A call the model asked for: the one type every layer uses, from the provider's reply to the
/// tool registry and the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them: the parsed JSON, or, when its text was not JSON,
    /// that text as a JSON string (so providers and transcripts get it back unchanged).
    /// [`ToolCall::parsed_arguments`] tells the two apart.
    pub arguments: Value,
    /// Opaque provider token that must be echoed with the call (Gemini `thoughtSignature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolCall {
    /// A call whose arguments are the model's text: parsed when it is JSON (empty text is `{}`),
    /// kept as it is otherwise.
    pub fn from_text(id: impl Into<String>, name: impl Into<String>, arguments: &str) -> Self {
        Self { id: id.into(), name: name.into(), arguments: parse_arguments(arguments), signature: None }
    }

    /// The arguments as JSON, or why the text the model sent is not JSON. A JSON string whose
    /// text parses was sent as a string (JSON, but not an object); one whose text does not is
    /// the model's unparsed text.
    pub fn parsed_arguments(&self) -> Result<&Value, serde_json::Error> {
        match &self.arguments {
            Value::String(text) => {
                serde_json::from_str::<serde::de::IgnoredAny>(text).map(|_| &self.arguments)
            }
            parsed => Ok(parsed),
        }
    }
}

/// Tool arguments as JSON; empty means `{}`. Unparseable text is kept as a string so the tool
/// layer can report the problem to the model.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// The result of running a tool, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    /// Name of the tool that ran (Gemini needs it with each result).
    pub name: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// A piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    Image(Image),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    /// Reasoning the model showed (or summarized). `signature` is the provider's opaque proof
    /// (Anthropic `signature`, OpenAI `encrypted_content`, Gemini `thoughtSignature`) and must be
    /// echoed unchanged; `id` is the provider's item id where it has one (OpenAI reasoning items).
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// Reasoning the provider encrypted (Anthropic `redacted_thinking`); echoed unchanged.
    RedactedThinking {
        data: String,
    },
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    pub fn thinking(text: impl Into<String>, signature: Option<String>) -> Self {
        Self::Thinking { text: text.into(), signature, id: None }
    }
}

/// A tool the model may call; `parameters` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// Shared: a session's tools are the same in every request, and their schemas are built once
    /// (when the tool is registered), not per request.
    pub parameters: Arc<Value>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
    Required,
    Named(String),
}

/// One model call. System prompts are `Role::System` messages (adapters hoist them).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Vec<ToolDefinition>,
    /// Sent only when `tools` is not empty.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Per-provider extra body fields, keyed by provider name (`{"openai": {"prompt_cache_key":
    /// "..."}}`); the object for the active provider is merged into the request body last.
    #[serde(default)]
    pub provider_options: Value,
}

impl Request {
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self { model: model.into(), messages, ..Default::default() }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum FinishReason {
    #[default]
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other(String),
}

impl From<String> for FinishReason {
    fn from(s: String) -> Self {
        match s.as_str() {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "tool_calls" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            _ => Self::Other(s),
        }
    }
}

impl From<FinishReason> for String {
    fn from(r: FinishReason) -> Self {
        match r {
            FinishReason::Stop => "stop".into(),
            FinishReason::Length => "length".into(),
            FinishReason::ToolCalls => "tool_calls".into(),
            FinishReason::ContentFilter => "content_filter".into(),
            FinishReason::Other(s) => s,
        }
    }
}

/// Token counts. `input_tokens` includes cached tokens; `output_tokens` includes reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + o.input_tokens,
            output_tokens: self.output_tokens + o.output_tokens,
            reasoning_tokens: self.reasoning_tokens + o.reasoning_tokens,
            cache_read_tokens: self.cache_read_tokens + o.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens + o.cache_write_tokens,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        *self = *self + o;
    }
}

/// A complete model answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    pub model: String,
    pub content: Vec<ContentPart>,
    pub finish_reason: FinishReason,
    pub usage: Usage,
}

impl Response {
    /// Concatenated text parts.
    pub fn text(&self) -> String {
        collect_text(&self.content)
    }

    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }

    /// Concatenated visible reasoning (thinking text / summaries), if any.
    pub fn reasoning(&self) -> Option<String> {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Thinking { text, .. } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// The assistant message to append to the history for the next request.
    pub fn to_message(&self) -> Message {
        Message::assistant(self.content.clone())
    }
}

/// One streamed increment. `Finish` is always last and carries the assembled response
/// (including thinking signatures and usage); a stream without it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    ToolCallStart { id: String, name: String },
    ToolCallDelta { id: String, arguments_fragment: String },
    ToolCallEnd { id: String, name: String, arguments: Value },
    Finish(Response),
}

fn collect_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_parts_round_trip_through_json() {
        let parts = vec![
            ContentPart::text("hi"),
            ContentPart::Image(Image { media_type: "image/png".into(), data: vec![0, 159, 255] }),
            ContentPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
                signature: None,
            }),
            ContentPart::ToolResult(ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                content: "x".into(),
                is_error: true,
                images: vec![],
            }),
            ContentPart::thinking("hmm", Some("sig".into())),
            ContentPart::RedactedThinking { data: "enc".into() },
        ];
        let text = serde_json::to_string(&parts).unwrap();
        assert!(text.contains(r#""data":"AJ//""#), "{text}");
        let back: Vec<ContentPart> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, parts);
    }

    #[test]
    fn a_call_keeps_text_that_is_not_json_and_says_why() {
        let parsed = ToolCall::from_text("c1", "read_file", r#"{"path": "a"}"#);
        assert_eq!(parsed.parsed_arguments().ok(), Some(&json!({"path": "a"})));
        assert_eq!(ToolCall::from_text("c1", "t", " ").parsed_arguments().ok(), Some(&json!({})));
        let broken = ToolCall::from_text("c1", "read_file", r#"{"path": "#);
        assert_eq!(broken.arguments, json!(r#"{"path": "#), "providers and transcripts get the text back");
        let error = broken.parsed_arguments().expect_err("not JSON");
        assert!(error.is_eof(), "{error}");
        // JSON that is a string is JSON (the registry says it is not an object).
        let string = ToolCall::from_text("c1", "t", r#""{\"path\": 1}""#);
        assert_eq!(string.parsed_arguments().ok(), Some(&json!(r#"{"path": 1}"#)));
        let back: ToolCall = serde_json::from_value(serde_json::to_value(&broken).unwrap()).unwrap();
        assert_eq!(back, broken);
    }

    #[test]
    fn finish_reason_keeps_unknown_values() {
        let r: FinishReason = serde_json::from_value(json!("refusal")).unwrap();
        assert_eq!(r, FinishReason::Other("refusal".into()));
        assert_eq!(serde_json::to_value(FinishReason::ToolCalls).unwrap(), json!("tool_calls"));
    }

    #[test]
    fn response_helpers_pick_their_parts() {
        let r = Response {
            content: vec![
                ContentPart::thinking("a", None),
                ContentPart::text("x"),
                ContentPart::ToolCall(ToolCall {
                    id: "1".into(),
                    name: "t".into(),
                    arguments: json!({}),
                    signature: None,
                }),
                ContentPart::text("y"),
            ],
            ..Default::default()
        };
        assert_eq!(r.text(), "xy");
        assert_eq!(r.tool_calls().len(), 1);
        assert_eq!(r.reasoning().as_deref(), Some("a"));
        let u = Usage { input_tokens: 3, output_tokens: 4, ..Default::default() };
        assert_eq!((u + u).total(), 14);
    }
}
