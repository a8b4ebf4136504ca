//! The payloads of agentls's own methods (docs/protocol.md): the notifications the server sends
//! (`agentls/event`, `agentls/review`, `agentls/permission`, `agentls/trustRequired`) and the requests it makes of
//! plugin clients (`agentls/saveDocuments`, `agentls/diagnostics`).
//!
//! Invariant: every `agentls/*` message is built from these types, never from ad-hoc JSON, and
//! their field names are docs/protocol.md's (a test reads the document's examples back through
//! them). A renamed field is a compile error in every sender.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tower_lsp_server::ls_types::Diagnostic;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

use crate::session::{AgentPath, Event, EventData};

/// `agentls/event`: one session event.
pub enum EventNotification {}
impl Notification for EventNotification {
    type Params = EventParams;
    const METHOD: &'static str = "agentls/event";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventParams {
    pub session_id: String,
    #[serde(flatten)]
    pub event: EventData,
    /// RFC 3339.
    pub timestamp: String,
    /// The subagent that emitted the event; absent for the session's own events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentParams>,
}

impl EventParams {
    pub fn of(event: &Event) -> Self {
        Self {
            session_id: event.session_id.to_string(),
            event: event.data.clone(),
            timestamp: event.timestamp.to_rfc3339(),
            agent: event.agent.as_ref().map(AgentParams::from),
        }
    }
}

/// A subagent of the session (`sessionId` of the message is the session the client drives).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentParams {
    /// The id its parent's model uses (`agent-1`).
    pub agent_id: String,
    /// The subagent's own session id.
    pub session_id: String,
    /// The session that spawned it.
    pub parent_session_id: String,
    /// The parent's `spawn_agent` call.
    pub parent_call_id: String,
}

impl From<&AgentPath> for AgentParams {
    fn from(path: &AgentPath) -> Self {
        Self {
            agent_id: path.agent_id.clone(),
            session_id: path.session_id.clone(),
            parent_session_id: path.parent_session_id.clone(),
            parent_call_id: path.parent_call_id.clone(),
        }
    }
}

/// `agentls/review`: a change set waiting for `agentls.resolveReview`.
pub enum ReviewNotification {}
impl Notification for ReviewNotification {
    type Params = ReviewParams;
    const METHOD: &'static str = "agentls/review";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewParams {
    pub review_id: String,
    pub session_id: String,
    /// The tool call that proposed the change (filled in by the event pump).
    pub call_id: Option<String>,
    pub files: Vec<ReviewFile>,
    /// The subagent whose call proposed it (filled in by the event pump); absent for the session's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentParams>,
}

/// What happens to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewOp {
    Create,
    Modify,
    Delete,
    Rename,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewFile {
    pub uri: String,
    /// As a person reads it: relative to the session's folder when inside it.
    pub path: String,
    pub op: ReviewOp,
    /// Unified, three lines of context.
    pub diff: String,
    pub hunks: Vec<ReviewHunk>,
    /// The target of a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_uri: Option<String>,
}

/// One unit of acceptance; lines are 0-based.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewHunk {
    pub index: usize,
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub old_text: String,
    pub new_text: String,
}

/// `agentls/permission`: a shell command waiting for `agentls.resolvePermission`.
pub enum PermissionNotification {}
impl Notification for PermissionNotification {
    type Params = PermissionParams;
    const METHOD: &'static str = "agentls/permission";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionParams {
    pub request_id: String,
    pub session_id: String,
    pub call_id: String,
    pub tool_name: String,
    pub command: String,
    pub cwd: String,
    /// The answers `agentls.resolvePermission` accepts.
    pub options: Vec<String>,
    /// The subagent whose call asks (filled in by the event pump); absent for the session's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentParams>,
}

/// `agentls/trustRequired` (server → a plugin client that announced `trust`): a workspace
/// folder is not trusted and its project file sets keys that were ignored for it; the client
/// decides (its own trust store, or the user) and grants with `agentls.trustFolder`.
pub enum TrustRequiredNotification {}
impl Notification for TrustRequiredNotification {
    type Params = TrustRequiredParams;
    const METHOD: &'static str = "agentls/trustRequired";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustRequiredParams {
    pub root_uri: String,
    /// The project file, as a path.
    pub file: String,
    pub ignored: Vec<IgnoredKeyParams>,
    /// The shell command that grants the same trust.
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoredKeyParams {
    pub key: String,
    pub reason: String,
}

/// `agentls.trustFolder`'s argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustFolderParams {
    pub root_uri: String,
}

/// `agentls.trustFolder`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustFolderResult {
    pub root_uri: String,
    pub trusted: bool,
}

/// `agentls/diagnostics` (server → plugin client): the editor's diagnostics of a file or of the
/// workspace.
pub enum DiagnosticsRequest {}
impl Request for DiagnosticsRequest {
    type Params = DiagnosticsParams;
    type Result = DiagnosticsResult;
    const METHOD: &'static str = "agentls/diagnostics";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsParams {
    /// `None`: the whole workspace.
    pub uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiagnosticsResult {
    #[serde(default)]
    pub files: Vec<FileDiagnostics>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiagnostics {
    pub uri: String,
    #[serde(default)]
    pub diagnostics: Vec<Diagnostic>,
}

/// `agentls/saveDocuments` (server → plugin client): save these open documents. Any result
/// means saved.
pub enum SaveDocumentsRequest {}
impl Request for SaveDocumentsRequest {
    type Params = SaveDocumentsParams;
    type Result = Value;
    const METHOD: &'static str = "agentls/saveDocuments";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveDocumentsParams {
    pub uris: Vec<String>,
}

#[cfg(test)]
mod tests {
    //! docs/protocol.md's examples read back through the types, field for field.

    use serde::de::DeserializeOwned;

    use super::*;

    /// The JSON code blocks of docs/protocol.md.
    fn examples() -> Vec<Value> {
        let doc = include_str!("../../docs/protocol.md");
        doc.split("```json\n")
            .skip(1)
            .filter_map(|block| block.split("```").next())
            .filter_map(|text| {
                // Elided values (`"0b6c…"`) are fine; `…` outside strings (a shortened array) is not.
                serde_json::from_str::<Value>(text).ok()
            })
            .collect()
    }

    /// The first example with `key` and without `unlike` (which would make it another message).
    fn example_with(key: &str, unlike: &str) -> Value {
        examples()
            .into_iter()
            .find(|v| v.get(key).is_some() && v.get(unlike).is_none())
            .unwrap_or_else(|| panic!("docs/protocol.md has no example with `{key}`"))
    }

    /// Reads `example` as `T` and writes it back: every documented field is known, none is lost.
    fn round_trip<T: Serialize + DeserializeOwned>(example: Value) {
        let typed: T = serde_json::from_value(example.clone())
            .unwrap_or_else(|e| panic!("docs/protocol.md example does not fit the type: {e}\n{example}"));
        assert_eq!(serde_json::to_value(&typed).expect("serialize"), example);
    }

    #[test]
    fn the_documented_examples_are_the_types() {
        let event = example_with("timestamp", "command");
        assert_eq!(event["kind"], "tool_call_end");
        round_trip::<EventParams>(event);
        round_trip::<ReviewParams>(example_with("reviewId", "command"));
        round_trip::<PermissionParams>(example_with("requestId", "decision"));
        round_trip::<DiagnosticsResult>(example_with("files", "reviewId"));
        round_trip::<TrustRequiredParams>(example_with("ignored", "sessionId"));
        round_trip::<TrustFolderParams>(example_with("rootUri", "ignored"));
    }

    #[test]
    fn the_documented_subagent_event_is_the_type() {
        let event = examples()
            .into_iter()
            .find(|v| v.get("agent").is_some() && v.get("timestamp").is_some())
            .expect("docs/protocol.md has a subagent's event");
        assert_eq!(event["agent"]["parentCallId"], "toolu_04");
        round_trip::<EventParams>(event);
    }

    #[test]
    fn an_event_is_sent_with_its_session_kind_time_and_data() {
        let event = Event::new(
            "s1".into(),
            EventData::AssistantTextDelta(crate::session::Delta { delta: "hi".into() }),
        );
        let sent = serde_json::to_value(EventParams::of(&event)).expect("serialize");
        assert_eq!(sent["sessionId"], "s1");
        assert_eq!(sent["kind"], "assistant_text_delta");
        assert_eq!(sent["data"], serde_json::json!({"delta": "hi"}));
        assert_eq!(sent["timestamp"], event.timestamp.to_rfc3339());
    }
}
