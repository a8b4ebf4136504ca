//! Typed LLM errors and their classification from each provider's status codes, error bodies and
//! mid-stream error events. Invariant: no message built here contains an API key.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ProviderKind;

/// Everything that can go wrong talking to a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LlmError {
    #[error("{provider} rejected the API key ({message}); check {var}")]
    Authentication { provider: ProviderKind, var: String, message: String },
    #[error("{provider} rate limit reached: {message}")]
    RateLimit { provider: ProviderKind, message: String, retry_after: Option<Duration> },
    #[error("{provider} quota or credits exhausted: {message}; check your plan and billing")]
    QuotaExceeded { provider: ProviderKind, message: String },
    #[error("{provider} is overloaded: {message}; try again later")]
    Overloaded { provider: ProviderKind, message: String, retry_after: Option<Duration> },
    #[error("{provider} server error{}: {message}", status_suffix(*.status))]
    Server { provider: ProviderKind, status: Option<u16>, message: String, retry_after: Option<Duration> },
    /// A failure a retry may mend; `message` says what failed and what to check.
    #[error("cannot reach {url}: {message}")]
    Network { url: String, message: String },
    /// A connection that cannot be made until the user changes something (an untrusted
    /// certificate, a proxy that wants credentials, unusable network settings); never retried.
    #[error("cannot reach {url}: {message}")]
    Connection { url: String, message: String },
    #[error("the conversation does not fit the model's context window ({provider}: {message})")]
    ContextLengthExceeded { provider: ProviderKind, message: String },
    #[error("{provider} rejected the request{}: {message}", status_suffix(*.status))]
    InvalidRequest { provider: ProviderKind, status: Option<u16>, message: String },
    #[error("the {provider} response stream ended early: {message}")]
    StreamCut { provider: ProviderKind, message: String },
    #[error("{provider} error{}: {message}", status_suffix(*.status))]
    Provider { provider: ProviderKind, status: Option<u16>, message: String },
    #[error("cassette {path}: {message}")]
    Cassette { path: String, message: String },
}

fn status_suffix(status: Option<u16>) -> String {
    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
}

impl LlmError {
    /// Rate limits, overload, 5xx, network failures and cut streams are worth another try.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimit { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Network { .. }
                | Self::StreamCut { .. }
        )
    }

    /// The delay the provider asked for, if it named one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimit { retry_after, .. }
            | Self::Overloaded { retry_after, .. }
            | Self::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Replaces every occurrence of `secret` in the error's text (defence in depth: some servers
    /// echo what they were sent).
    pub fn scrub(mut self, secret: Option<&str>) -> Self {
        let Some(secret) = secret.filter(|s| s.len() >= 4) else { return self };
        let fix = |s: &mut String| {
            if s.contains(secret) {
                *s = s.replace(secret, "[redacted]");
            }
        };
        match &mut self {
            Self::Authentication { message, .. }
            | Self::RateLimit { message, .. }
            | Self::QuotaExceeded { message, .. }
            | Self::Overloaded { message, .. }
            | Self::Server { message, .. }
            | Self::ContextLengthExceeded { message, .. }
            | Self::InvalidRequest { message, .. }
            | Self::StreamCut { message, .. }
            | Self::Provider { message, .. }
            | Self::Cassette { message, .. } => fix(message),
            Self::Network { url, message } | Self::Connection { url, message } => {
                fix(url);
                fix(message);
            }
        }
        self
    }
}

/// What an error body says, whatever the provider's envelope.
#[derive(Debug, Default)]
struct ErrorFields {
    /// `error.type` (Anthropic, OpenAI, llama.cpp) or `error.status` (Gemini).
    kind: String,
    /// `error.code` as text (OpenAI code strings; OpenRouter/Gemini numeric codes).
    code: String,
    message: String,
    /// Gemini `details[].reason` values and quota ids.
    reasons: Vec<String>,
    /// Gemini `RetryInfo.retryDelay`.
    retry_delay: Option<Duration>,
}

fn fields_of(body: &Value) -> ErrorFields {
    // Gemini sometimes wraps the envelope in a one-element array.
    let body = match body {
        Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    };
    let err = body.get("error").filter(|e| e.is_object()).unwrap_or(body);
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let mut fields = ErrorFields {
        kind: text(err.get("type")),
        code: text(err.get("code")),
        message: text(err.get("message")),
        ..Default::default()
    };
    if let Some(status) = err.get("status").and_then(Value::as_str) {
        fields.kind = status.to_string();
    }
    if fields.message.is_empty() {
        fields.message = text(body.get("message"));
    }
    // OpenRouter hides the upstream's words in metadata.raw.
    if let Some(raw) = err.pointer("/metadata/raw").and_then(Value::as_str) {
        fields.message = format!("{} ({raw})", fields.message);
    }
    for detail in err.get("details").and_then(Value::as_array).into_iter().flatten() {
        if let Some(reason) = detail.get("reason").and_then(Value::as_str) {
            fields.reasons.push(reason.to_string());
        }
        for v in detail.get("violations").and_then(Value::as_array).into_iter().flatten() {
            if let Some(id) = v.get("quotaId").and_then(Value::as_str) {
                fields.reasons.push(id.to_string());
            }
        }
        if let Some(delay) = detail.get("retryDelay").and_then(Value::as_str) {
            fields.retry_delay = parse_go_duration(delay);
        }
    }
    fields
}

static CONTEXT_MESSAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)prompt is too long|exceed(s|ed)? (the )?context|context (length|window|size)|maximum context length|input token count .* exceeds|exceeds the maximum number of tokens|input tokens exceed",
    )
    .expect("valid regex")
});

static TRY_AGAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)try again in (\d+(?:\.\d+)?)\s*(ms|s|seconds?)\b").expect("valid regex")
});

/// "11.054s", "26s", "1.5s", "20ms", "6m0s".
fn parse_go_duration(text: &str) -> Option<Duration> {
    static PART: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\d+(?:\.\d+)?)(ms|h|m|s)").expect("valid regex"));
    let mut total = 0f64;
    let mut any = false;
    for cap in PART.captures_iter(text.trim()) {
        let n: f64 = cap[1].parse().ok()?;
        total += match &cap[2] {
            "ms" => n / 1000.0,
            "s" => n,
            "m" => n * 60.0,
            _ => n * 3600.0,
        };
        any = true;
    }
    any.then(|| Duration::from_secs_f64(total))
}

/// The "Please try again in 11.054s" hint in OpenAI messages.
fn try_again_hint(message: &str) -> Option<Duration> {
    let cap = TRY_AGAIN.captures(message)?;
    let n: f64 = cap[1].parse().ok()?;
    Some(Duration::from_secs_f64(if &cap[2] == "ms" { n / 1000.0 } else { n }))
}

/// `retry-after-ms`, then `retry-after` (seconds or an HTTP date).
pub fn retry_after_header(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return (ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0));
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// Classifies an error from its HTTP status (None for mid-stream errors), headers and body.
pub fn classify(
    provider: ProviderKind,
    status: Option<u16>,
    headers: Option<&HeaderMap>,
    body: &Value,
    key_var: Option<&str>,
) -> LlmError {
    let f = fields_of(body);
    // Mid-stream envelopes (OpenRouter, Gemini) carry the HTTP-like status as a numeric code.
    let status = status.or_else(|| f.code.parse::<u16>().ok().filter(|c| (100..600).contains(c)));
    let message = if f.message.is_empty() {
        status.map(|s| format!("HTTP {s}")).unwrap_or_else(|| "unknown error".into())
    } else {
        f.message.clone()
    };
    let retry_after =
        headers.and_then(retry_after_header).or(f.retry_delay).or_else(|| try_again_hint(&message));
    let kind = f.kind.as_str();
    let code = f.code.as_str();
    let has_reason = |r: &str| f.reasons.iter().any(|x| x.contains(r));

    let auth = status == Some(401)
        || (status == Some(403) && provider != ProviderKind::Anthropic)
        || matches!(kind, "authentication_error" | "PERMISSION_DENIED" | "UNAUTHENTICATED")
        || code == "invalid_api_key"
        || has_reason("API_KEY_INVALID");
    if auth {
        let var = key_var.map(str::to_string).unwrap_or_else(|| {
            provider.key_vars().first().map(|v| v.to_string()).unwrap_or_else(|| "the API key".into())
        });
        return LlmError::Authentication { provider, var, message };
    }
    let quota = status == Some(402)
        || matches!(kind, "billing_error" | "insufficient_quota")
        || matches!(code, "insufficient_quota" | "usage_not_included")
        || (kind == "RESOURCE_EXHAUSTED" && has_reason("PerDay"));
    if quota {
        return LlmError::QuotaExceeded { provider, message };
    }
    let context = code == "context_length_exceeded"
        || kind == "exceed_context_size_error"
        || kind == "request_too_large"
        || status == Some(413)
        || (status.is_none_or(|s| s == 400) && CONTEXT_MESSAGE.is_match(&message));
    if context {
        return LlmError::ContextLengthExceeded { provider, message };
    }
    if status == Some(429)
        || matches!(kind, "rate_limit_error" | "RESOURCE_EXHAUSTED")
        || code == "rate_limit_exceeded"
    {
        return LlmError::RateLimit { provider, message, retry_after };
    }
    if matches!(status, Some(529 | 503 | 502))
        || matches!(kind, "overloaded_error" | "UNAVAILABLE")
        || code == "server_is_overloaded"
    {
        return LlmError::Overloaded { provider, message, retry_after };
    }
    if status.is_some_and(|s| s >= 500 || s == 408 || s == 409)
        || matches!(kind, "api_error" | "server_error" | "timeout_error" | "INTERNAL" | "DEADLINE_EXCEEDED")
        || code == "server_error"
    {
        return LlmError::Server { provider, status, message, retry_after };
    }
    if status.is_some_and(|s| (400..500).contains(&s))
        || matches!(kind, "invalid_request_error" | "not_found_error" | "INVALID_ARGUMENT" | "NOT_FOUND")
    {
        return LlmError::InvalidRequest { provider, status, message };
    }
    LlmError::Provider { provider, status, message }
}

/// Classifies a non-success HTTP response body (which may not be JSON at all).
pub fn classify_http(
    provider: ProviderKind,
    status: u16,
    headers: &HeaderMap,
    body: &str,
    key_var: Option<&str>,
) -> LlmError {
    let value = serde_json::from_str::<Value>(body).unwrap_or_else(|_| {
        let snippet: String = body.chars().take(300).collect();
        serde_json::json!({ "message": snippet.trim() })
    });
    classify(provider, Some(status), Some(headers), &value, key_var)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_parse_in_go_and_hint_styles() {
        assert_eq!(parse_go_duration("26s"), Some(Duration::from_secs(26)));
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(try_again_hint("Please try again in 11.054s. Visit"), Some(Duration::from_millis(11054)));
        assert_eq!(try_again_hint("no hint"), None);
    }

    #[test]
    fn numeric_codes_in_stream_errors_act_as_status() {
        let e = classify(
            ProviderKind::OpenAiChat,
            None,
            None,
            &json!({"error": {"code": 502, "message": "Provider disconnected"}}),
            None,
        );
        assert!(matches!(e, LlmError::Overloaded { .. }), "{e:?}");
    }

    #[test]
    fn scrub_removes_the_key() {
        let e = LlmError::InvalidRequest {
            provider: ProviderKind::OpenAi,
            status: Some(400),
            message: "bad key sk-secret-123".into(),
        }
        .scrub(Some("sk-secret-123"));
        assert!(!e.to_string().contains("sk-secret-123"));
    }
}
