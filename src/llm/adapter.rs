//! The seam between the client and one provider dialect: how a neutral [`Request`] becomes an
//! HTTP call, and how a provider's body or SSE events become a neutral [`Response`] / events.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::error::{LlmError, classify};
use super::types::{Message, Request, Response, Role, StreamEvent};
use crate::config::{ProviderKind, ProviderSettings};

/// A ready-to-send HTTP request.
#[derive(Debug)]
pub struct HttpCall {
    pub url: String,
    pub headers: HeaderMap,
    pub body: Value,
}

pub trait ProviderAdapter: Send + Sync {
    /// The HTTP call for `request`, streaming or not.
    fn http_call(&self, request: &Request, stream: bool) -> Result<HttpCall, LlmError>;
    /// Parses a non-streaming success body.
    fn parse_response(&self, body: &Value) -> Result<Response, LlmError>;
    /// A fresh decoder for one streamed response.
    fn decoder(&self) -> Box<dyn StreamDecoder>;
}

/// Turns one provider's SSE events into neutral events.
pub trait StreamDecoder: Send {
    /// Handles one SSE event (`name` is the `event:` field, often empty).
    fn event(&mut self, name: &str, data: &str) -> Result<(), LlmError>;
    /// The server closed the stream; errors with `StreamCut` unless the terminal event was seen.
    fn end(&mut self) -> Result<(), LlmError>;
    /// Events produced since the last call.
    fn drain(&mut self) -> Vec<StreamEvent>;
}

/// A header value marked sensitive so it is never printed by `Debug` or logged by HTTP layers.
pub fn secret_header(value: &str) -> Result<HeaderValue, LlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::InvalidRequest {
        provider: ProviderKind::Replay,
        status: None,
        message: "the API key contains characters that are not allowed in an HTTP header".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// Base headers plus the auth header `name: prefix + key` when a key is configured.
pub fn headers_with_key(
    settings: &ProviderSettings,
    name: &'static str,
    prefix: &str,
) -> Result<HeaderMap, LlmError> {
    let mut headers = HeaderMap::new();
    headers.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(key) = &settings.api_key {
        let value = secret_header(&format!("{prefix}{}", key.expose())).map_err(|e| match e {
            LlmError::InvalidRequest { message, .. } => {
                LlmError::InvalidRequest { provider: settings.kind, status: None, message }
            }
            other => other,
        })?;
        headers.insert(HeaderName::from_static(name), value);
    }
    Ok(headers)
}

/// Merges `request.provider_options[<provider>]` into the body (its keys win).
pub fn merge_provider_options(body: &mut Value, request: &Request, kind: ProviderKind) {
    let Some(Value::Object(extra)) = request.provider_options.get(kind.as_str()) else { return };
    if let Value::Object(map) = body {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// All system messages' text, joined by blank lines.
pub fn system_text(messages: &[Message]) -> Option<String> {
    let parts: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.text())
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Parses one SSE data payload; a payload that is not JSON is a protocol error.
pub fn parse_data(kind: ProviderKind, data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::Provider {
        provider: kind,
        status: None,
        message: format!("unparseable stream event ({e}): {}", data.chars().take(200).collect::<String>()),
    })
}

/// A mid-stream error event, classified.
pub fn stream_error(settings: &ProviderSettings, payload: &Value) -> LlmError {
    classify(settings.kind, None, None, payload, settings.api_key_var.as_deref())
}

pub fn cut(kind: ProviderKind, what: &str) -> LlmError {
    LlmError::StreamCut { provider: kind, message: format!("the connection closed before {what}") }
}

pub fn data_url(media_type: &str, data: &[u8]) -> String {
    use base64::Engine;
    format!("data:{media_type};base64,{}", base64::engine::general_purpose::STANDARD.encode(data))
}

pub fn b64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

pub fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Merges consecutive messages with the same role (providers that demand alternation).
pub fn merge_same_role(messages: Vec<(String, Vec<Value>)>) -> Vec<(String, Vec<Value>)> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for (role, parts) in messages {
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => out.push((role, parts)),
        }
    }
    out
}
