//! OpenAI Responses API (`POST {base}/responses`, base ends in `/v1`): function calls, reasoning
//! effort with summaries, and stateless reasoning (`store:false`, encrypted reasoning items echoed).

use serde::Serialize;
use serde_json::{Value, json};

use super::adapter::{
    Body, HttpCall, Members, ProviderAdapter, StreamDecoder, cut, data_url, headers_with_key, parse_data,
    str_at, stream_error, system_text, u64_at,
};
use super::assemble::Assembler;
use super::error::LlmError;
use super::types::{
    ContentPart, FinishReason, Request, Response, Role, StreamEvent, ToolCall, ToolChoice, ToolDefinition,
    Usage, parse_arguments,
};
use crate::config::{ProviderKind, ProviderSettings};

pub struct OpenAiResponses {
    settings: ProviderSettings,
    members: Members,
}

impl OpenAiResponses {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings, members: Members::default() }
    }
}

fn user_content(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(json!({"type": "input_text", "text": text})),
            ContentPart::Image(img) => {
                Some(json!({"type": "input_image", "image_url": data_url(&img.media_type, &img.data)}))
            }
            _ => None,
        })
        .collect()
}

fn input_items(request: &Request) -> Vec<Value> {
    let mut items = Vec::new();
    for message in &request.messages {
        match message.role {
            Role::System => {}
            Role::User => {
                let content = user_content(&message.content);
                if !content.is_empty() {
                    items.push(json!({"type": "message", "role": "user", "content": content}));
                }
            }
            Role::Assistant => {
                for part in &message.content {
                    match part {
                        ContentPart::Text { text } if !text.is_empty() => items.push(json!({
                            "type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": text}]
                        })),
                        // Only reasoning this API produced (it has encrypted content) can go back.
                        ContentPart::Thinking { text, signature: Some(encrypted), id } => {
                            let summary: Vec<Value> = if text.is_empty() {
                                vec![]
                            } else {
                                vec![json!({"type": "summary_text", "text": text})]
                            };
                            let mut item = json!({"type": "reasoning", "summary": summary, "encrypted_content": encrypted});
                            if let Some(id) = id {
                                item["id"] = json!(id);
                            }
                            items.push(item);
                        }
                        ContentPart::ToolCall(call) => items.push(json!({
                            "type": "function_call", "call_id": call.id, "name": call.name,
                            "arguments": call.arguments.to_string()
                        })),
                        _ => {}
                    }
                }
            }
            Role::Tool => {
                let mut images = Vec::new();
                for part in &message.content {
                    if let ContentPart::ToolResult(result) = part {
                        items.push(json!({
                            "type": "function_call_output", "call_id": result.call_id, "output": result.content
                        }));
                        images.extend(result.images.iter().cloned().map(ContentPart::Image));
                    }
                }
                // Function outputs are text; images a tool produced follow as user content.
                if !images.is_empty() {
                    items.push(json!({"type": "message", "role": "user", "content": user_content(&images)}));
                }
            }
        }
    }
    items
}

/// A function as both OpenAI APIs describe it; `strict: false` lets the model see the schema
/// without strict mode's limits.
#[derive(Serialize)]
pub(super) struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: std::borrow::Cow<'a, Value>,
    strict: bool,
}

impl<'a> Function<'a> {
    pub(super) fn of(tool: &'a ToolDefinition) -> Self {
        let parameters = super::schema::for_dialect(&tool.parameters, super::schema::Dialect::OpenAi);
        Self { name: &tool.name, description: &tool.description, parameters, strict: false }
    }
}

/// The Responses API's tool: the function's fields next to its type.
#[derive(Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    #[serde(flatten)]
    function: Function<'a>,
}

fn tools_member(tools: &[ToolDefinition]) -> Vec<Tool<'_>> {
    tools.iter().map(|t| Tool { r#type: "function", function: Function::of(t) }).collect()
}

fn request_body(request: &Request, stream: bool, members: &Members) -> Body {
    let mut body = Body::default();
    body.insert("model", json!(request.model));
    if let Some(system) = system_text(&request.messages) {
        body.insert_serialised("instructions", members.system.get(&*system, serde_json::value::to_raw_value));
    }
    body.insert("input", Value::Array(input_items(request)));
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
            ToolChoice::Named(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice", choice);
        body.insert("parallel_tool_calls", json!(request.parallel_tool_calls.unwrap_or(true)));
    }
    if let Some(effort) = request.reasoning_effort {
        body.insert("reasoning", json!({"effort": effort.as_str(), "summary": "auto"}));
        body.insert("include", json!(["reasoning.encrypted_content"]));
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens", json!(max));
    }
    body.insert("store", json!(false));
    body.insert("stream", json!(stream));
    body.merge_provider_options(request, ProviderKind::OpenAi);
    body
}

fn usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u64_at(u, "/input_tokens"),
        output_tokens: u64_at(u, "/output_tokens"),
        reasoning_tokens: u64_at(u, "/output_tokens_details/reasoning_tokens"),
        cache_read_tokens: u64_at(u, "/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

fn finish_reason(response: &Value) -> FinishReason {
    match str_at(response, "/status") {
        "incomplete" => match str_at(response, "/incomplete_details/reason") {
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Length,
        },
        _ => FinishReason::Stop,
    }
}

fn summary_text(item: &Value) -> String {
    let parts: Vec<&str> = item
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("text").and_then(Value::as_str))
        .collect();
    parts.join("\n\n")
}

fn reasoning_part(item: &Value) -> ContentPart {
    ContentPart::Thinking {
        text: summary_text(item),
        signature: item.get("encrypted_content").and_then(Value::as_str).map(str::to_string),
        id: item.get("id").and_then(Value::as_str).map(str::to_string),
    }
}

fn output_parts(output: &Value) -> Vec<ContentPart> {
    let mut content = Vec::new();
    for item in output.as_array().into_iter().flatten() {
        match str_at(item, "/type") {
            "reasoning" => content.push(reasoning_part(item)),
            "message" => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match str_at(part, "/type") {
                        "output_text" => content.push(ContentPart::text(str_at(part, "/text"))),
                        "refusal" => content.push(ContentPart::text(str_at(part, "/refusal"))),
                        _ => {}
                    }
                }
            }
            "function_call" => content.push(ContentPart::ToolCall(ToolCall {
                id: str_at(item, "/call_id").into(),
                name: str_at(item, "/name").into(),
                arguments: parse_arguments(str_at(item, "/arguments")),
                signature: None,
            })),
            _ => {}
        }
    }
    content
}

impl ProviderAdapter for OpenAiResponses {
    fn http_call(&self, request: &Request, stream: bool) -> Result<HttpCall, LlmError> {
        Ok(HttpCall {
            url: format!("{}/responses", self.settings.base_url),
            headers: headers_with_key(&self.settings, "authorization", "Bearer ")?,
            body: request_body(request, stream, &self.members),
        })
    }

    fn parse_response(&self, body: &Value) -> Result<Response, LlmError> {
        if str_at(body, "/status") == "failed" {
            return Err(stream_error(&self.settings, body.get("error").unwrap_or(body)));
        }
        let content = output_parts(body.get("output").unwrap_or(&Value::Null));
        let has_calls = content.iter().any(|p| matches!(p, ContentPart::ToolCall(_)));
        let reason = match finish_reason(body) {
            FinishReason::Stop if has_calls => FinishReason::ToolCalls,
            r => r,
        };
        Ok(Response {
            id: str_at(body, "/id").into(),
            model: str_at(body, "/model").into(),
            content,
            finish_reason: reason,
            usage: body.get("usage").map(usage).unwrap_or_default(),
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
        // Items are addressed by output_index; item ids are the fallback for servers omitting it.
        let key = v
            .get("output_index")
            .map(|i| i.to_string())
            .or_else(|| v.get("item_id").or_else(|| v.pointer("/item/id")).map(|i| i.to_string()))
            .unwrap_or_default();
        match str_at(&v, "/type") {
            "response.created" | "response.in_progress" => {
                self.out.id = str_at(&v, "/response/id").into();
                self.out.model = str_at(&v, "/response/model").into();
            }
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or_default();
                if str_at(&item, "/type") == "function_call" {
                    self.out.start_tool(&key, str_at(&item, "/call_id"), str_at(&item, "/name"));
                    self.out.tool_args(&key, str_at(&item, "/arguments"));
                }
            }
            "response.output_text.delta" => self.out.text(str_at(&v, "/delta")),
            "response.refusal.delta" => self.out.text(str_at(&v, "/delta")),
            "response.reasoning_summary_part.added" if u64_at(&v, "/summary_index") > 0 => {
                self.out.thinking(&key, "\n\n")
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.out.thinking(&key, str_at(&v, "/delta"))
            }
            "response.function_call_arguments.delta" => self.out.tool_args(&key, str_at(&v, "/delta")),
            "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or_default();
                match str_at(&item, "/type") {
                    "reasoning" => {
                        let signature =
                            item.get("encrypted_content").and_then(Value::as_str).map(str::to_string);
                        let id = item.get("id").and_then(Value::as_str).map(str::to_string);
                        self.out.thinking_signature(&key, signature, id);
                        self.out.end_thinking(&key);
                    }
                    "function_call" => {
                        if !self.out.has_tool(&key) {
                            self.out.start_tool(&key, str_at(&item, "/call_id"), str_at(&item, "/name"));
                        }
                        self.out.end_tool(&key, item.get("arguments").and_then(Value::as_str));
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = v.get("response").cloned().unwrap_or_default();
                if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
                    self.out.usage = usage(u);
                }
                self.out.finish_reason = Some(finish_reason(&response));
                self.out.finish();
                self.done = true;
            }
            "response.failed" => {
                let error = v.pointer("/response/error").filter(|e| e.is_object()).unwrap_or(&v);
                return Err(stream_error(&self.settings, error));
            }
            "error" => return Err(stream_error(&self.settings, &v)),
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), LlmError> {
        if self.done { Ok(()) } else { Err(cut(self.settings.kind, "response.completed")) }
    }

    fn drain(&mut self) -> Vec<StreamEvent> {
        self.out.drain()
    }
}
