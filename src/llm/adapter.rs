//! The seam between the client and one provider dialect: how a neutral [`Request`] becomes an
//! HTTP call, and how a provider's body or SSE events become a neutral [`Response`] / events.
//!
//! Invariant: a session offers the same tools, and mostly the same system prompt, in every
//! request, so each dialect serialises those once per content ([`Members`]) and splices the bytes
//! into every body ([`Body`]): they are neither copied into a JSON tree nor escaped per request.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::{LlmError, classify};
use super::types::{ContentPart, Message, Request, Response, Role, StreamEvent, ToolDefinition};
use crate::config::{ProviderKind, ProviderSettings};

/// A ready-to-send HTTP request.
#[derive(Debug)]
pub struct HttpCall {
    pub url: String,
    pub headers: HeaderMap,
    pub body: Body,
}

/// A request body: a JSON object whose members are values, except those serialised ahead of
/// time (tools, system prompt), which are written as they are. A key is in one of the two, never both.
#[derive(Debug, Default)]
pub struct Body {
    members: Map<String, Value>,
    serialised: Vec<(&'static str, Arc<RawValue>)>,
}

impl Body {
    pub fn insert(&mut self, key: &str, value: Value) {
        self.serialised.retain(|(k, _)| *k != key);
        self.members.insert(key.to_string(), value);
    }

    /// Adds a member serialised ahead of time.
    pub fn insert_serialised(&mut self, key: &'static str, json: Arc<RawValue>) {
        self.members.remove(key);
        self.serialised.retain(|(k, _)| *k != key);
        self.serialised.push((key, json));
    }

    /// Merges `request.provider_options[<provider>]` into the body (its keys win).
    pub fn merge_provider_options(&mut self, request: &Request, kind: ProviderKind) {
        let Some(Value::Object(extra)) = request.provider_options.get(kind.as_str()) else { return };
        for (k, v) in extra {
            self.insert(k, v.clone());
        }
    }

    /// The body's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a JSON object of JSON values serialises")
    }
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len() + self.serialised.len()))?;
        for (key, value) in &self.members {
            map.serialize_entry(key, value)?;
        }
        for (key, json) in &self.serialised {
            map.serialize_entry(key, json.as_ref())?;
        }
        map.end()
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

/// A member serialised once and written as it is while its source stays the same: a session
/// sends the same tools, and mostly the same system prompt, in every request. Comparing sources is
/// cheap: tool schemas are shared `Arc`s, equal by address; a system prompt is one `memcmp`.
pub struct Serialised<K> {
    cached: Mutex<Option<(K, Arc<RawValue>)>>,
}

impl<K> Default for Serialised<K> {
    fn default() -> Self {
        Self { cached: Mutex::new(None) }
    }
}

impl<K> Serialised<K> {
    /// The member made from `source`, written by `render` only when the source changed.
    pub fn get<Q>(
        &self,
        source: &Q,
        render: impl FnOnce(&Q) -> serde_json::Result<Box<RawValue>>,
    ) -> Arc<RawValue>
    where
        Q: ?Sized + PartialEq<K> + ToOwned<Owned = K>,
    {
        let mut cached = self.cached.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((seen, json)) = cached.as_ref()
            && source == seen
        {
            return json.clone();
        }
        let json: Arc<RawValue> = render(source).expect("a request member serialises").into();
        *cached = Some((source.to_owned(), json.clone()));
        json
    }
}

/// The members a dialect serialises once and reuses in every request of its session.
#[derive(Default)]
pub struct Members {
    pub tools: Serialised<Vec<ToolDefinition>>,
    pub system: Serialised<String>,
}

pub trait ProviderAdapter: Send + Sync {
    /// The HTTP call for `request`, streaming or not.
    fn http_call(&self, request: &Request, stream: bool) -> Result<HttpCall, LlmError>;
    /// Serialises what the requests to come share (tools, system prompt): a session does it with
    /// its first request's contents when it starts, so its first prompt does not wait for it.
    fn prepare(&self, request: &Request) {
        let _ = self.http_call(request, true);
    }
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

/// All system messages' text, joined by blank lines (borrowed when there is one, as usual).
pub fn system_text(messages: &[Message]) -> Option<Cow<'_, str>> {
    let mut system = messages.iter().filter(|m| m.role == Role::System);
    if let (Some(only), None) = (system.next(), system.next())
        && let [ContentPart::Text { text }] = only.content.as_slice()
    {
        return (!text.is_empty()).then_some(Cow::Borrowed(text.as_str()));
    }
    let parts: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.text())
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| Cow::Owned(parts.join("\n\n")))
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use serde_json::json;

    use super::*;

    fn tool(name: &str, schema: &Arc<Value>) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: format!("{name} \"quoted\""),
            parameters: schema.clone(),
        }
    }

    #[test]
    fn members_are_serialised_once_per_source() {
        let schema = Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}}));
        let tools = vec![tool("read", &schema), tool("write", &schema)];
        let cache = Serialised::default();
        let renders = Cell::new(0);
        let render = |tools: &[ToolDefinition]| {
            renders.set(renders.get() + 1);
            serde_json::value::to_raw_value(&Value::Array(
                tools.iter().map(|t| json!({"name": t.name, "schema": t.parameters})).collect(),
            ))
        };
        let first = cache.get(tools.as_slice(), render);
        let again = cache.get(tools.clone().as_slice(), render);
        assert!(Arc::ptr_eq(&first, &again), "the same tools reuse the serialised member");
        assert_eq!(renders.get(), 1);
        let parsed: Value = serde_json::from_str(first.get()).unwrap();
        assert_eq!(parsed[1], json!({"name": "write", "schema": *schema}));

        // Another tool set (a schema with the same content counts as the same; one more tool does not).
        let same_content = Arc::new(Value::clone(&schema));
        let same = [tool("read", &same_content), tool("write", &schema)];
        assert!(Arc::ptr_eq(&first, &cache.get(same.as_slice(), render)));
        let fewer = cache.get(&tools[..1], render);
        assert_eq!(renders.get(), 2);
        assert_eq!(serde_json::from_str::<Value>(fewer.get()).unwrap().as_array().unwrap().len(), 1);
    }

    #[test]
    fn one_system_message_is_borrowed_and_several_are_joined() {
        let one = [Message::system("be brief"), Message::user("hi")];
        assert!(matches!(system_text(&one), Some(Cow::Borrowed("be brief"))));
        let two = [Message::system("be brief"), Message::system("be kind")];
        assert_eq!(system_text(&two).as_deref(), Some("be brief\n\nbe kind"));
        assert_eq!(system_text(&[Message::system(""), Message::user("hi")]), None);
    }

    #[test]
    fn a_body_writes_values_and_serialised_members_and_provider_options_win() {
        let mut body = Body::default();
        body.insert("model", json!("m"));
        body.insert("stream", json!(true));
        body.insert_serialised(
            "tools",
            serde_json::value::to_raw_value(&json!([{"name": "a"}])).unwrap().into(),
        );
        let written: Value = serde_json::from_slice(&body.to_bytes()).unwrap();
        assert_eq!(written, json!({"model": "m", "stream": true, "tools": [{"name": "a"}]}));
        assert_eq!(body.to_string(), String::from_utf8(body.to_bytes()).unwrap());

        let mut request = Request::new("m", Vec::new());
        request.provider_options =
            json!({"anthropic": {"tools": [], "stream": false, "top_k": 3}, "openai": {"x": 1}});
        body.merge_provider_options(&request, ProviderKind::Anthropic);
        let written: Value = serde_json::from_slice(&body.to_bytes()).unwrap();
        assert_eq!(written, json!({"model": "m", "stream": false, "tools": [], "top_k": 3}));
    }
}
