//! Gemini `generateContent` / `streamGenerateContent?alt=sse` (`{base}/v1beta/models/...`):
//! function calls (always whole), thinking config (`thinkingLevel` on Gemini 3, a token budget
//! before), and thought signatures echoed on the parts that carried them.

use serde::Serialize;
use serde_json::{Value, json};

use super::adapter::{
    Body, HttpCall, Members, ProviderAdapter, StreamDecoder, b64, cut, headers_with_key, merge_same_role,
    parse_data, str_at, stream_error, system_text, u64_at,
};
use super::assemble::Assembler;
use super::error::LlmError;
use super::types::{
    ContentPart, FinishReason, Image, ReasoningEffort, Request, Response, Role, StreamEvent, ToolChoice,
    ToolDefinition, Usage,
};
use crate::config::{ProviderKind, ProviderSettings};

/// Ids we invent for calls Gemini sent without one; they are not echoed back.
const SYNTHETIC_ID_PREFIX: &str = "gemini-call-";

pub struct Gemini {
    settings: ProviderSettings,
    members: Members,
}

impl Gemini {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings, members: Members::default() }
    }
}

fn thinking_config(model: &str, effort: ReasoningEffort) -> Value {
    let m = model.to_ascii_lowercase();
    if m.contains("gemini-3") {
        // Gemini 3 Pro accepts only LOW and HIGH; Flash models take all four levels.
        let pro = m.contains("pro");
        let level = match effort {
            ReasoningEffort::Minimal if pro => "LOW",
            ReasoningEffort::Minimal => "MINIMAL",
            ReasoningEffort::Low => "LOW",
            ReasoningEffort::Medium if pro => "HIGH",
            ReasoningEffort::Medium => "MEDIUM",
            ReasoningEffort::High => "HIGH",
        };
        json!({"includeThoughts": true, "thinkingLevel": level})
    } else {
        let budget = match effort {
            ReasoningEffort::Minimal => 512,
            ReasoningEffort::Low => 1024,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 24576,
        };
        json!({"includeThoughts": true, "thinkingBudget": budget})
    }
}

fn inline(image: &Image) -> Value {
    json!({"inlineData": {"mimeType": image.media_type, "data": b64(&image.data)}})
}

fn parts(role: Role, content: &[ContentPart]) -> Vec<Value> {
    let mut out = Vec::new();
    for part in content {
        match part {
            ContentPart::Text { text } if !text.is_empty() => out.push(json!({"text": text})),
            ContentPart::Image(image) => out.push(inline(image)),
            ContentPart::Thinking { text, signature, .. } if role == Role::Assistant => {
                let mut p = json!({"text": text});
                if !text.is_empty() {
                    p["thought"] = json!(true);
                }
                if let Some(sig) = signature {
                    p["thoughtSignature"] = json!(sig);
                } else if text.is_empty() {
                    continue;
                }
                out.push(p);
            }
            ContentPart::ToolCall(call) if role == Role::Assistant => {
                let mut fc = json!({"name": call.name, "args": call.arguments});
                if !call.id.starts_with(SYNTHETIC_ID_PREFIX) {
                    fc["id"] = json!(call.id);
                }
                let mut p = json!({"functionCall": fc});
                if let Some(sig) = &call.signature {
                    p["thoughtSignature"] = json!(sig);
                }
                out.push(p);
            }
            ContentPart::ToolResult(result) => {
                let key = if result.is_error { "error" } else { "result" };
                let mut fr = json!({"name": result.name, "response": {key: result.content}});
                if !result.call_id.starts_with(SYNTHETIC_ID_PREFIX) {
                    fr["id"] = json!(result.call_id);
                }
                out.push(json!({"functionResponse": fr}));
                out.extend(result.images.iter().map(inline));
            }
            _ => {}
        }
    }
    out
}

/// The one tool object of the `tools` member, which lists every function.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: std::borrow::Cow<'a, Value>,
}

fn tools_member(tools: &[ToolDefinition]) -> [Tools<'_>; 1] {
    [Tools {
        function_declarations: tools
            .iter()
            .map(|t| Declaration {
                name: &t.name,
                description: &t.description,
                parameters_json_schema: super::schema::for_dialect(
                    &t.parameters,
                    super::schema::Dialect::Gemini,
                ),
            })
            .collect(),
    }]
}

fn request_body(request: &Request, members: &Members) -> Body {
    let mut body = Body::default();
    if let Some(system) = system_text(&request.messages) {
        let instruction = |s: &str| serde_json::value::to_raw_value(&json!({"parts": [{"text": s}]}));
        body.insert_serialised("systemInstruction", members.system.get(&*system, instruction));
    }
    let turns: Vec<(String, Vec<Value>)> = request
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            let role = if m.role == Role::Assistant { "model" } else { "user" };
            (role.to_string(), parts(m.role, &m.content))
        })
        .collect();
    let contents: Vec<Value> = merge_same_role(turns)
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    body.insert("contents", Value::Array(contents));
    if !request.tools.is_empty() {
        body.insert_serialised(
            "tools",
            members
                .tools
                .get(request.tools.as_slice(), |t| serde_json::value::to_raw_value(&tools_member(t))),
        );
        let config = match &request.tool_choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Named(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert("toolConfig", json!({"functionCallingConfig": config}));
    }
    let mut generation = serde_json::Map::new();
    if let Some(max) = request.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(effort) = request.reasoning_effort {
        generation.insert("thinkingConfig".into(), thinking_config(&request.model, effort));
    }
    if !generation.is_empty() {
        body.insert("generationConfig", Value::Object(generation));
    }
    body.merge_provider_options(request, ProviderKind::Gemini);
    body
}

fn finish_reason(reason: &str) -> Option<FinishReason> {
    Some(match reason {
        "" => return None,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_ascii_lowercase()),
    })
}

/// Gemini counts thoughts apart from candidates; neutral output includes reasoning.
fn usage(u: &Value) -> Usage {
    let thoughts = u64_at(u, "/thoughtsTokenCount");
    Usage {
        input_tokens: u64_at(u, "/promptTokenCount"),
        output_tokens: u64_at(u, "/candidatesTokenCount") + thoughts,
        reasoning_tokens: thoughts,
        cache_read_tokens: u64_at(u, "/cachedContentTokenCount"),
        cache_write_tokens: 0,
    }
}

impl ProviderAdapter for Gemini {
    fn http_call(&self, request: &Request, stream: bool) -> Result<HttpCall, LlmError> {
        let method = if stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
        let model = request.model.trim_start_matches("models/");
        Ok(HttpCall {
            url: format!("{}/v1beta/models/{model}:{method}", self.settings.base_url),
            headers: headers_with_key(&self.settings, "x-goog-api-key", "")?,
            body: request_body(request, &self.members),
        })
    }

    fn parse_response(&self, body: &Value) -> Result<Response, LlmError> {
        let mut decoder = Decoder::new(self.settings.clone());
        let body = match body {
            Value::Array(chunks) => chunks.clone(),
            one => vec![one.clone()],
        };
        for chunk in &body {
            decoder.chunk(chunk)?;
        }
        let response = decoder.out.finish();
        Ok(response)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(Decoder::new(self.settings.clone()))
    }
}

struct Decoder {
    settings: ProviderSettings,
    out: Assembler,
    calls: usize,
    finished: bool,
    done: bool,
}

impl Decoder {
    fn new(settings: ProviderSettings) -> Self {
        Self { settings, out: Assembler::new(), calls: 0, finished: false, done: false }
    }

    fn chunk(&mut self, v: &Value) -> Result<(), LlmError> {
        if v.get("error").is_some() {
            return Err(stream_error(&self.settings, v));
        }
        if self.out.id.is_empty() {
            self.out.id = str_at(v, "/responseId").into();
            self.out.model = str_at(v, "/modelVersion").into();
        }
        if let Some(u) = v.get("usageMetadata") {
            self.out.usage = usage(u);
        }
        if let Some(reason) = v.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            tracing::debug!(reason, "gemini blocked the prompt");
            self.out.finish_reason = Some(FinishReason::ContentFilter);
            self.finished = true;
        }
        let Some(candidate) = v.pointer("/candidates/0") else { return Ok(()) };
        for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
            let signature = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_string);
            if let Some(call) = part.get("functionCall") {
                self.out.end_thinking("thought");
                let id = match call.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => id.to_string(),
                    _ => format!("{SYNTHETIC_ID_PREFIX}{}", self.calls),
                };
                let key = format!("call{}", self.calls);
                self.calls += 1;
                let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
                self.out.whole_tool(&key, &id, str_at(call, "/name"), &args.to_string(), signature);
                continue;
            }
            let text = str_at(part, "/text");
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                self.out.thinking("thought", text);
                if signature.is_some() {
                    self.out.thinking_signature("thought", signature, None);
                }
                continue;
            }
            self.out.end_thinking("thought");
            self.out.text(text);
            // A signature on a plain text part is kept as an empty signed thinking part.
            if signature.is_some() {
                self.out.push_part(ContentPart::Thinking { text: String::new(), signature, id: None });
            }
        }
        if let Some(reason) = finish_reason(str_at(candidate, "/finishReason")) {
            self.out.finish_reason = Some(reason);
            self.finished = true;
        }
        Ok(())
    }
}

impl StreamDecoder for Decoder {
    fn event(&mut self, _name: &str, data: &str) -> Result<(), LlmError> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let v = parse_data(self.settings.kind, data)?;
        let v = match v {
            Value::Array(mut items) if items.len() == 1 => items.remove(0),
            other => other,
        };
        self.chunk(&v)?;
        if self.finished && !self.done {
            self.out.finish();
            self.done = true;
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), LlmError> {
        if self.done { Ok(()) } else { Err(cut(self.settings.kind, "a chunk with finishReason")) }
    }

    fn drain(&mut self) -> Vec<StreamEvent> {
        self.out.drain()
    }
}
