//! Chat Completions (`POST {base}/chat/completions`) as served by OpenAI, Ollama, vLLM, llama.cpp
//! and OpenRouter: each server's reasoning field, tool-call fragments keyed by `index` (or whole
//! calls), usage chunks, `[DONE]`, and mid-stream `error` chunks.

use serde::Serialize;
use serde_json::{Value, json};

use super::adapter::{
    Body, HttpCall, Members, ProviderAdapter, StreamDecoder, cut, data_url, headers_with_key, parse_data,
    str_at, stream_error, system_text, u64_at,
};
use super::assemble::Assembler;
use super::error::LlmError;
use super::openai::Function;
use super::types::{
    ContentPart, FinishReason, Request, Response, Role, StreamEvent, ToolCall, ToolChoice, ToolDefinition,
    Usage, parse_arguments,
};
use crate::config::{ProviderKind, ProviderSettings};

pub struct OpenAiChat {
    settings: ProviderSettings,
    members: Members,
}

impl OpenAiChat {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings, members: Members::default() }
    }

    fn is_openrouter(&self) -> bool {
        self.settings.base_url.contains("openrouter.ai")
    }

    /// The body of a request to this server (OpenRouter's extensions when the base URL is
    /// OpenRouter's).
    pub fn request_body(&self, request: &Request, stream: bool) -> Body {
        request_body(request, stream, self.is_openrouter(), &self.members)
    }
}

/// OpenAI reasoning models take the system prompt as a `developer` message.
fn system_role(model: &str) -> &'static str {
    let m = model.rsplit('/').next().unwrap_or(model);
    let reasoning =
        m.starts_with("gpt-5") || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()));
    if reasoning { "developer" } else { "system" }
}

fn user_content(parts: &[ContentPart]) -> Value {
    let has_images = parts.iter().any(|p| matches!(p, ContentPart::Image(_)));
    if !has_images {
        let text: String = parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        return json!(text);
    }
    let items: Vec<Value> = parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentPart::Image(img) => {
                Some(json!({"type": "image_url", "image_url": {"url": data_url(&img.media_type, &img.data)}}))
            }
            _ => None,
        })
        .collect();
    Value::Array(items)
}

fn messages(request: &Request) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = system_text(&request.messages) {
        out.push(json!({"role": system_role(&request.model), "content": system}));
    }
    for message in &request.messages {
        match message.role {
            Role::System => {}
            Role::User => out.push(json!({"role": "user", "content": user_content(&message.content)})),
            Role::Assistant => {
                let text = message.text();
                let calls: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(call) => Some(json!({
                            "id": call.id, "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments.to_string()}
                        })),
                        _ => None,
                    })
                    .collect();
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                out.push(m);
            }
            Role::Tool => {
                let mut images = Vec::new();
                for part in &message.content {
                    if let ContentPart::ToolResult(result) = part {
                        out.push(json!({"role": "tool", "tool_call_id": result.call_id, "content": result.content}));
                        images.extend(result.images.iter().cloned().map(ContentPart::Image));
                    }
                }
                // Tool messages are text-only; images follow as a user message.
                if !images.is_empty() {
                    out.push(json!({"role": "user", "content": user_content(&images)}));
                }
            }
        }
    }
    out
}

/// Chat Completions' tool: the function under its own key.
#[derive(Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    function: Function<'a>,
}

fn tools_member(tools: &[ToolDefinition]) -> Vec<Tool<'_>> {
    tools.iter().map(|t| Tool { r#type: "function", function: Function::of(t) }).collect()
}

fn request_body(request: &Request, stream: bool, openrouter: bool, members: &Members) -> Body {
    let mut body = Body::default();
    body.insert("model", json!(request.model));
    body.insert("messages", Value::Array(messages(request)));
    if !request.tools.is_empty() {
        body.insert_serialised(
            "tools",
            members
                .tools
                .get(request.tools.as_slice(), |t| serde_json::value::to_raw_value(&tools_member(t))),
        );
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice", choice);
        if let Some(parallel) = request.parallel_tool_calls.or((!openrouter).then_some(true)) {
            body.insert("parallel_tool_calls", json!(parallel));
        }
    }
    if let Some(effort) = request.reasoning_effort {
        if openrouter {
            body.insert("reasoning", json!({"effort": effort.as_str()}));
        } else {
            body.insert("reasoning_effort", json!(effort.as_str()));
        }
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_completion_tokens", json!(max));
    }
    if openrouter {
        body.insert("usage", json!({"include": true}));
    }
    body.insert("stream", json!(stream));
    if stream {
        body.insert("stream_options", json!({"include_usage": true}));
    }
    body.merge_provider_options(request, ProviderKind::OpenAiChat);
    body
}

fn usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u64_at(u, "/prompt_tokens"),
        output_tokens: u64_at(u, "/completion_tokens"),
        reasoning_tokens: u64_at(u, "/completion_tokens_details/reasoning_tokens"),
        cache_read_tokens: u64_at(u, "/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

fn finish_reason(reason: &str) -> Option<FinishReason> {
    Some(match reason {
        "" => return None,
        "stop" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    })
}

/// The reasoning text of a delta or message, whichever field name the server uses.
fn reasoning(v: &Value) -> &str {
    ["reasoning", "reasoning_content"]
        .iter()
        .map(|k| str_at(v, &format!("/{k}")))
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

/// A body that reports an error instead of (or along with) choices.
fn error_payload(v: &Value) -> Option<&Value> {
    let failed = str_at(v, "/choices/0/finish_reason") == "error";
    let err = v.get("error").filter(|e| !e.is_null());
    match (err, failed) {
        (Some(_), _) => Some(v),
        (None, true) => Some(v),
        _ => None,
    }
}

impl ProviderAdapter for OpenAiChat {
    fn http_call(&self, request: &Request, stream: bool) -> Result<HttpCall, LlmError> {
        Ok(HttpCall {
            url: format!("{}/chat/completions", self.settings.base_url),
            headers: headers_with_key(&self.settings, "authorization", "Bearer ")?,
            body: self.request_body(request, stream),
        })
    }

    fn parse_response(&self, body: &Value) -> Result<Response, LlmError> {
        if let Some(err) = error_payload(body) {
            return Err(stream_error(&self.settings, err));
        }
        let message = body.pointer("/choices/0/message").cloned().unwrap_or_default();
        let mut content = Vec::new();
        let thought = reasoning(&message);
        if !thought.is_empty() {
            content.push(ContentPart::thinking(thought, None));
        }
        let text = str_at(&message, "/content");
        if !text.is_empty() {
            content.push(ContentPart::text(text));
        }
        for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            content.push(ContentPart::ToolCall(ToolCall {
                id: str_at(call, "/id").into(),
                name: str_at(call, "/function/name").into(),
                arguments: parse_arguments(str_at(call, "/function/arguments")),
                signature: None,
            }));
        }
        let has_calls = content.iter().any(|p| matches!(p, ContentPart::ToolCall(_)));
        Ok(Response {
            id: str_at(body, "/id").into(),
            model: str_at(body, "/model").into(),
            content,
            finish_reason: finish_reason(str_at(body, "/choices/0/finish_reason")).unwrap_or(if has_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            }),
            usage: body.get("usage").map(usage).unwrap_or_default(),
        })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(Decoder {
            settings: self.settings.clone(),
            out: Assembler::new(),
            ids: Default::default(),
            finished_choice: false,
            done: false,
        })
    }
}

struct Decoder {
    settings: ProviderSettings,
    out: Assembler,
    /// Tool-call index → id of the call open at that index.
    ids: std::collections::HashMap<u64, String>,
    finished_choice: bool,
    done: bool,
}

impl Decoder {
    fn finish(&mut self) {
        if !self.done {
            self.out.finish();
            self.done = true;
        }
    }
}

impl StreamDecoder for Decoder {
    fn event(&mut self, _name: &str, data: &str) -> Result<(), LlmError> {
        if data.trim() == "[DONE]" {
            self.finish();
            return Ok(());
        }
        let v = parse_data(self.settings.kind, data)?;
        if let Some(err) = error_payload(&v) {
            return Err(stream_error(&self.settings, err));
        }
        if self.out.id.is_empty() {
            self.out.id = str_at(&v, "/id").into();
            self.out.model = str_at(&v, "/model").into();
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.out.usage = usage(u);
        }
        let Some(choice) = v.pointer("/choices/0") else { return Ok(()) };
        let delta = choice.get("delta").cloned().unwrap_or_default();
        let thought = reasoning(&delta);
        if !thought.is_empty() {
            self.out.thinking("reasoning", thought);
        }
        let text = str_at(&delta, "/content");
        if !text.is_empty() {
            self.out.end_thinking("reasoning");
            self.out.text(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            self.out.end_thinking("reasoning");
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let key = index.to_string();
            let id = str_at(call, "/id");
            // A new id at a known index means a new call (servers that send whole calls).
            if !id.is_empty() && self.ids.get(&index).is_some_and(|open| open != id) {
                self.out.end_tool(&key, None);
            }
            if !self.out.has_tool(&key) {
                let id = if id.is_empty() { format!("call_{index}") } else { id.to_string() };
                self.ids.insert(index, id.clone());
                self.out.start_tool(&key, &id, str_at(call, "/function/name"));
            }
            self.out.tool_args(&key, str_at(call, "/function/arguments"));
        }
        if let Some(reason) = finish_reason(str_at(choice, "/finish_reason")) {
            self.out.finish_reason = Some(reason);
            self.finished_choice = true;
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), LlmError> {
        // Some compatible servers omit `[DONE]`; a finish_reason is enough to trust the answer.
        if self.finished_choice {
            self.finish();
        }
        if self.done { Ok(()) } else { Err(cut(self.settings.kind, "[DONE]")) }
    }

    fn drain(&mut self) -> Vec<StreamEvent> {
        self.out.drain()
    }
}
