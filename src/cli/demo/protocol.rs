//! The part of the agentls protocol (docs/protocol.md) the demo client speaks, as types: the
//! payloads it receives (`agentls/event`, `agentls/review`, `agentls/permission`) and the
//! command arguments it sends. Fields the demo does not use are not declared.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const EVENT: &str = "agentls/event";
pub const REVIEW: &str = "agentls/review";
pub const PERMISSION: &str = "agentls/permission";

pub const NEW_SESSION: &str = "agentls.newSession";
pub const PROMPT: &str = "agentls.prompt";
pub const RESOLVE_REVIEW: &str = "agentls.resolveReview";
pub const RESOLVE_PERMISSION: &str = "agentls.resolvePermission";

/// `agentls/event`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventParams {
    pub kind: String,
    #[serde(default)]
    pub data: Value,
}

/// `data` of `assistant_text_delta`.
#[derive(Debug, Deserialize)]
pub struct TextDelta {
    pub delta: String,
}

/// `data` of `tool_call_start`.
#[derive(Debug, Deserialize)]
pub struct ToolCallStart {
    pub call_id: String,
}

/// `data` of `tool_call_end`.
#[derive(Debug, Deserialize)]
pub struct ToolCallEnd {
    pub tool_name: String,
    pub summary: String,
    pub status: String,
    #[serde(default)]
    pub output: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// `data` of `error`.
#[derive(Debug, Deserialize)]
pub struct ErrorEvent {
    pub message: String,
    #[serde(default)]
    pub fatal: bool,
}

/// `data` of `processing_end`.
#[derive(Debug, Deserialize)]
pub struct ProcessingEnd {
    pub reason: String,
}

/// `agentls/review`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewParams {
    pub review_id: String,
    /// The tool call that proposed the change.
    #[serde(default)]
    pub call_id: Option<String>,
    pub files: Vec<ReviewFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewFile {
    pub uri: String,
    pub path: String,
    pub op: String,
    pub diff: String,
    pub hunks: Vec<ReviewHunk>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewHunk {
    pub index: usize,
    /// 0-based.
    pub old_start: usize,
    pub old_text: String,
    pub new_text: String,
}

/// `agentls/permission`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionParams {
    pub request_id: String,
    #[serde(default)]
    pub call_id: Option<String>,
    pub command: String,
    pub cwd: String,
}

/// The result of `agentls.newSession`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResult {
    pub session_id: String,
    pub profile: String,
    pub model: String,
}

/// Arguments of `agentls.resolveReview`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveReview {
    pub review_id: String,
    pub decision: &'static str,
    pub files: Vec<ResolvedFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedFile {
    pub uri: String,
    pub accepted_hunks: Vec<usize>,
}

/// Arguments of `agentls.resolvePermission`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvePermission {
    pub request_id: String,
    pub decision: &'static str,
}
