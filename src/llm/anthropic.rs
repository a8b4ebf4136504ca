//! Anthropic Messages API (`POST {base}/v1/messages`): tool use, thinking echoed with signatures,
//! effort, and prompt caching (breakpoints on system, tools and the latest turn).

use serde::Serialize;
use serde_json::{Value, json};

use super::adapter::{
    Body, HttpCall, Members, ProviderAdapter, StreamDecoder, b64, cut, headers_with_key, merge_same_role,
    parse_data, str_at, stream_error, system_text, u64_at,
};
use super::assemble::Assembler;
use super::error::LlmError;
use super::types::{
    ContentPart, FinishReason, Image, ReasoningEffort, Request, Response, Role, StreamEvent, ToolCall,
    ToolChoice, ToolDefinition, Usage, parse_arguments,
};
use crate::config::ProviderSettings;

pub const API_VERSION: &str = "2023-06-01";
const DEFAULT_MAX_TOKENS: u32 = 8192;
const ADAPTIVE_MAX_TOKENS: u32 = 16000;

pub struct Anthropic {
    settings: ProviderSettings,
    members: Members,
}

impl Anthropic {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings, members: Members::default() }
    }
}

/// Models that take `thinking: adaptive` plus `output_config.effort` instead of a token budget.
fn adaptive_thinking(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    ["-4-6", "-4-7", "-4-8", "-4-9", "-4.6", "-4.7", "claude-5", "-5-"].iter().any(|v| m.contains(v))
}

fn budget(effort: ReasoningEffort) -> u32 {
    match effort {
        ReasoningEffort::Minimal => 1024,
        ReasoningEffort::Low => 2048,
        ReasoningEffort::Medium => 8192,
        ReasoningEffort::High => 16384,
    }
}

fn image_block(image: &Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": b64(&image.data)}})
}

fn blocks(role: Role, parts: &[ContentPart]) -> Vec<Value> {
    let mut out = Vec::new();
    for part in parts {
        match part {
            ContentPart::Text { text } if !text.is_empty() => out.push(json!({"type": "text", "text": text})),
            ContentPart::Image(image) => out.push(image_block(image)),
            ContentPart::ToolCall(call) if role == Role::Assistant => out.push(json!({
                "type": "tool_use", "id": call.id, "name": call.name,
                "input": if call.arguments.is_object() { call.arguments.clone() } else { json!({}) }
            })),
            // Thinking without a signature came from another provider; Anthropic would reject it.
            ContentPart::Thinking { text, signature: Some(sig), .. } if role == Role::Assistant => {
                out.push(json!({"type": "thinking", "thinking": text, "signature": sig}))
            }
            ContentPart::RedactedThinking { data } if role == Role::Assistant => {
                out.push(json!({"type": "redacted_thinking", "data": data}))
            }
            ContentPart::ToolResult(result) => {
                let content = if result.images.is_empty() {
                    json!(result.content)
                } else {
                    let mut items = vec![json!({"type": "text", "text": result.content})];
                    items.extend(result.images.iter().map(image_block));
                    Value::Array(items)
                };
                out.push(json!({
                    "type": "tool_result", "tool_use_id": result.call_id,
                    "content": content, "is_error": result.is_error
                }));
            }
            _ => {}
        }
    }
    out
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: std::borrow::Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Value>,
}

/// The `tools` member: the last tool carries the cache breakpoint that covers all of them.
fn tools_member(tools: &[ToolDefinition]) -> Vec<Tool<'_>> {
    let last = tools.len().saturating_sub(1);
    tools
        .iter()
        .enumerate()
        .map(|(i, t)| Tool {
            name: &t.name,
            description: &t.description,
            input_schema: super::schema::for_dialect(&t.parameters, super::schema::Dialect::Anthropic),
            cache_control: (i == last).then(|| json!({"type": "ephemeral"})),
        })
        .collect()
}

fn request_body(request: &Request, stream: bool, members: &Members) -> Body {
    let cache = !request.tools.is_empty();
    let ephemeral = json!({"type": "ephemeral"});
    let mut body = Body::default();
    body.insert("model", json!(request.model));

    let adaptive = adaptive_thinking(&request.model);
    let mut max_tokens = request.max_tokens.unwrap_or(if adaptive && request.reasoning_effort.is_some() {
        ADAPTIVE_MAX_TOKENS
    } else {
        DEFAULT_MAX_TOKENS
    });
    if let Some(effort) = request.reasoning_effort {
        if adaptive {
            body.insert("thinking", json!({"type": "adaptive"}));
            let effort = if effort == ReasoningEffort::Minimal { "low" } else { effort.as_str() };
            body.insert("output_config", json!({"effort": effort}));
        } else {
            let tokens = budget(effort);
            // The budget must stay below max_tokens.
            max_tokens = max_tokens.max(tokens + 1024);
            body.insert("thinking", json!({"type": "enabled", "budget_tokens": tokens}));
        }
    }
    body.insert("max_tokens", json!(max_tokens));

    if let Some(system) = system_text(&request.messages) {
        if cache {
            let block = |s: &str| {
                serde_json::value::to_raw_value(
                    &json!([{"type": "text", "text": s, "cache_control": ephemeral}]),
                )
            };
            body.insert_serialised("system", members.system.get(&*system, block));
        } else {
            body.insert("system", json!(system));
        }
    }
    if !request.tools.is_empty() {
        body.insert_serialised(
            "tools",
            members
                .tools
                .get(request.tools.as_slice(), |t| serde_json::value::to_raw_value(&tools_member(t))),
        );
        let parallel = request.parallel_tool_calls.unwrap_or(true);
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto", "disable_parallel_tool_use": !parallel}),
            ToolChoice::Required => json!({"type": "any", "disable_parallel_tool_use": !parallel}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Named(name) => {
                json!({"type": "tool", "name": name, "disable_parallel_tool_use": !parallel})
            }
        };
        body.insert("tool_choice", choice);
    }

    let turns: Vec<(String, Vec<Value>)> = request
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            let role = if m.role == Role::Assistant { "assistant" } else { "user" };
            (role.to_string(), blocks(m.role, &m.content))
        })
        .collect();
    let mut turns = merge_same_role(turns);
    if cache
        && turns.len() > 1
        && let Some(last) = turns.last_mut().and_then(|(_, parts)| parts.last_mut())
    {
        last["cache_control"] = ephemeral;
    }
    let messages: Vec<Value> =
        turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
    body.insert("messages", Value::Array(messages));
    body.insert("stream", json!(stream));
    body.merge_provider_options(request, crate::config::ProviderKind::Anthropic);
    body
}

fn finish_reason(stop: &str) -> Option<FinishReason> {
    Some(match stop {
        "" => return None,
        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    })
}

/// Anthropic reports uncached input separately; neutral `input_tokens` includes the cache.
fn usage(u: &Value, into: &mut Usage) {
    let read = u64_at(u, "/cache_read_input_tokens");
    let write = u64_at(u, "/cache_creation_input_tokens");
    if u.get("input_tokens").is_some_and(|v| v.is_u64()) {
        into.input_tokens = u64_at(u, "/input_tokens") + read + write;
        into.cache_read_tokens = read;
        into.cache_write_tokens = write;
    }
    if u.get("output_tokens").is_some_and(|v| v.is_u64()) {
        into.output_tokens = u64_at(u, "/output_tokens");
    }
}

impl ProviderAdapter for Anthropic {
    fn http_call(&self, request: &Request, stream: bool) -> Result<HttpCall, LlmError> {
        let mut headers = headers_with_key(&self.settings, "x-api-key", "")?;
        headers.insert("anthropic-version", reqwest::header::HeaderValue::from_static(API_VERSION));
        Ok(HttpCall {
            url: format!("{}/v1/messages", self.settings.base_url),
            headers,
            body: request_body(request, stream, &self.members),
        })
    }

    fn parse_response(&self, body: &Value) -> Result<Response, LlmError> {
        let mut content = Vec::new();
        for block in body.get("content").and_then(Value::as_array).into_iter().flatten() {
            match str_at(block, "/type") {
                "text" => content.push(ContentPart::text(str_at(block, "/text"))),
                "thinking" => content.push(ContentPart::thinking(
                    str_at(block, "/thinking"),
                    block.get("signature").and_then(Value::as_str).map(str::to_string),
                )),
                "redacted_thinking" => {
                    content.push(ContentPart::RedactedThinking { data: str_at(block, "/data").into() })
                }
                "tool_use" => content.push(ContentPart::ToolCall(ToolCall {
                    id: str_at(block, "/id").into(),
                    name: str_at(block, "/name").into(),
                    arguments: block.get("input").cloned().unwrap_or_else(|| parse_arguments("")),
                    signature: None,
                })),
                _ => {}
            }
        }
        let mut u = Usage::default();
        if let Some(v) = body.get("usage") {
            usage(v, &mut u);
        }
        let has_calls = content.iter().any(|p| matches!(p, ContentPart::ToolCall(_)));
        Ok(Response {
            id: str_at(body, "/id").into(),
            model: str_at(body, "/model").into(),
            content,
            finish_reason: finish_reason(str_at(body, "/stop_reason")).unwrap_or(if has_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            }),
            usage: u,
        })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(Decoder { settings: self.settings.clone(), out: Assembler::new(), done: false })
    }
}

struct Decoder {
    settings: ProviderSettings,
    out: Assembler,
    done: bool,
}

impl StreamDecoder for Decoder {
    fn event(&mut self, _name: &str, data: &str) -> Result<(), LlmError> {
        let v = parse_data(self.settings.kind, data)?;
        let key = v.get("index").map(|i| i.to_string()).unwrap_or_default();
        match str_at(&v, "/type") {
            "message_start" => {
                self.out.id = str_at(&v, "/message/id").into();
                self.out.model = str_at(&v, "/message/model").into();
                if let Some(u) = v.pointer("/message/usage") {
                    usage(u, &mut self.out.usage);
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or_default();
                match str_at(&block, "/type") {
                    "text" => self.out.text(str_at(&block, "/text")),
                    "thinking" => self.out.thinking(&key, str_at(&block, "/thinking")),
                    "redacted_thinking" => self
                        .out
                        .push_part(ContentPart::RedactedThinking { data: str_at(&block, "/data").into() }),
                    "tool_use" => {
                        self.out.start_tool(&key, str_at(&block, "/id"), str_at(&block, "/name"));
                        // Some servers send the whole input up front instead of deltas.
                        if let Some(input) =
                            block.get("input").filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            self.out.tool_args(&key, &input.to_string());
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or_default();
                match str_at(&delta, "/type") {
                    "text_delta" => self.out.text(str_at(&delta, "/text")),
                    "thinking_delta" => self.out.thinking(&key, str_at(&delta, "/thinking")),
                    "signature_delta" => {
                        self.out.thinking_signature(&key, Some(str_at(&delta, "/signature").into()), None)
                    }
                    "input_json_delta" => self.out.tool_args(&key, str_at(&delta, "/partial_json")),
                    _ => {}
                }
            }
            "content_block_stop" => {
                self.out.end_tool(&key, None);
                self.out.end_thinking(&key);
            }
            "message_delta" => {
                if let Some(reason) = finish_reason(str_at(&v, "/delta/stop_reason")) {
                    self.out.finish_reason = Some(reason);
                }
                if let Some(u) = v.get("usage") {
                    usage(u, &mut self.out.usage);
                }
            }
            "message_stop" => {
                self.out.finish();
                self.done = true;
            }
            "error" => return Err(stream_error(&self.settings, &v)),
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), LlmError> {
        if self.done { Ok(()) } else { Err(cut(self.settings.kind, "message_stop")) }
    }

    fn drain(&mut self) -> Vec<StreamEvent> {
        self.out.drain()
    }
}
