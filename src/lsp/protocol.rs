//! The payloads of agentls's own protocol (docs/protocol.md), the one source every host and
//! mirror follows: each `agentls.*` command ([`Command`]: its name, `Params` and `Result`), the
//! notifications the server sends (`agentls/event`, `agentls/review`, `agentls/permission`,
//! `agentls/trustRequired`), the requests it makes of plugin clients (`agentls/saveDocuments`,
//! `agentls/diagnostics`) and the notification it gets from them (`agentls/userTyping`).
//!
//! Invariant: every `agentls/*` message and every command's argument and result is built from
//! or read into these types, never ad-hoc JSON, and their names are docs/protocol.md's: a test
//! reads each of the document's examples back through them, and fails when a command,
//! notification or event kind has no example. A renamed field is a compile error in every
//! sender and reader (the server, the demo client).

use serde::de::{DeserializeOwned, Deserializer, Error as _, Unexpected};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;
use tower_lsp_server::ls_types::{self, Diagnostic, Range};

use crate::config::{Approval, ProfileKind, ReasoningEffort};
use crate::session::{AgentPath, ContextStats, Event, EventData, SessionState};

/// An `agentls.*` command: `workspace/executeCommand` with one object argument (`Params`),
/// answered with one object (`Result`). `lsp::commands` maps each to its handler; its name is
/// written here and nowhere else.
pub trait Command {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned;
    type Result: Serialize + DeserializeOwned;
}

/// The LSP command that runs `C` with `params`, as a code action carries it.
pub fn lsp_command<C: Command>(title: String, params: &C::Params) -> ls_types::Command {
    let argument = serde_json::to_value(params).expect("a command's params serialize to JSON");
    ls_types::Command { title, command: C::NAME.to_string(), arguments: Some(vec![argument]) }
}

/// `agentls.newSession`: starts a session.
pub enum NewSession {}
impl Command for NewSession {
    const NAME: &'static str = "agentls.newSession";
    type Params = NewSessionParams;
    type Result = SessionCreated;
}

/// `agentls.prompt`: queues user input, on a new session when none is named or open.
pub enum Prompt {}
impl Command for Prompt {
    const NAME: &'static str = "agentls.prompt";
    type Params = PromptParams;
    type Result = InputQueued;
}

/// `agentls.steer`: a message for the running turn, before its next model call.
pub enum Steer {}
impl Command for Steer {
    const NAME: &'static str = "agentls.steer";
    type Params = InputParams;
    type Result = InputQueued;
}

/// `agentls.followUp`: input that runs after the current one.
pub enum FollowUp {}
impl Command for FollowUp {
    const NAME: &'static str = "agentls.followUp";
    type Params = InputParams;
    type Result = InputQueued;
}

/// `agentls.cancel`: interrupts the session's turn.
pub enum Cancel {}
impl Command for Cancel {
    const NAME: &'static str = "agentls.cancel";
    type Params = SessionParams;
    type Result = TurnCancelled;
}

/// `agentls.closeSession`: cancels, then ends the session.
pub enum CloseSession {}
impl Command for CloseSession {
    const NAME: &'static str = "agentls.closeSession";
    type Params = SessionParams;
    type Result = SessionClosed;
}

/// `agentls.listSessions`: the open sessions, then the stored ones that are not open.
pub enum ListSessions {}
impl Command for ListSessions {
    const NAME: &'static str = "agentls.listSessions";
    type Params = ListSessionsParams;
    type Result = SessionList;
}

/// `agentls.resumeSession`: reopens a stored session (or names the open one).
pub enum ResumeSession {}
impl Command for ResumeSession {
    const NAME: &'static str = "agentls.resumeSession";
    type Params = SessionParams;
    type Result = SessionResumed;
}

/// `agentls.history`: the conversation of an open or stored session, for showing it.
pub enum History {}
impl Command for History {
    const NAME: &'static str = "agentls.history";
    type Params = SessionParams;
    type Result = HistoryResult;
}

/// `agentls.configure`: changes an open session's model, reasoning effort or approval.
pub enum Configure {}
impl Command for Configure {
    const NAME: &'static str = "agentls.configure";
    type Params = ConfigureParams;
    type Result = SessionInfo;
}

/// `agentls.compact`: summarises the history after the current input.
pub enum Compact {}
impl Command for Compact {
    const NAME: &'static str = "agentls.compact";
    type Params = SessionParams;
    type Result = CompactionQueued;
}

/// `agentls.undoTurn`: reverts a turn's file changes (the latest turn that changed files, or the
/// named one and every later one), keeping the user's edits since; optionally cuts the
/// conversation back to before it.
pub enum UndoTurn {}
impl Command for UndoTurn {
    const NAME: &'static str = "agentls.undoTurn";
    type Params = UndoTurnParams;
    type Result = TurnsReverted;
}

/// `agentls.redoTurn`: re-applies the turns the latest undo reverted.
pub enum RedoTurn {}
impl Command for RedoTurn {
    const NAME: &'static str = "agentls.redoTurn";
    type Params = SessionParams;
    type Result = TurnsReverted;
}

/// `agentls.resolveReview`: the answer to an `agentls/review`.
pub enum ResolveReview {}
impl Command for ResolveReview {
    const NAME: &'static str = "agentls.resolveReview";
    type Params = ResolveReviewParams;
    type Result = ReviewResolved;
}

/// `agentls.resolvePermission`: the answer to an `agentls/permission`.
pub enum ResolvePermission {}
impl Command for ResolvePermission {
    const NAME: &'static str = "agentls.resolvePermission";
    type Params = ResolvePermissionParams;
    type Result = PermissionResolved;
}

/// `agentls.trustFolder`: the user (through a plugin that follows its editor's trust, or its own
/// question) trusts a workspace folder.
pub enum TrustFolder {}
impl Command for TrustFolder {
    const NAME: &'static str = "agentls.trustFolder";
    type Params = TrustFolderParams;
    type Result = TrustFolderResult;
}

/// `agentls.mcpServers`: the MCP servers a session in a folder uses, with their state, tools and
/// last error (each enabled one is started if it is not running).
pub enum McpServers {}
impl Command for McpServers {
    const NAME: &'static str = "agentls.mcpServers";
    type Params = McpServersParams;
    type Result = McpServerList;
}

/// `agentls.mcpRestart`: ends an MCP server's program (or connection) and starts it again.
pub enum McpRestart {}
impl Command for McpRestart {
    const NAME: &'static str = "agentls.mcpRestart";
    type Params = McpRestartParams;
    type Result = McpRestarted;
}

/// A string field that must hold more than blanks (ids, prompt text).
fn non_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = String::deserialize(deserializer)?;
    if text.trim().is_empty() {
        return Err(D::Error::invalid_value(Unexpected::Str(&text), &"a non-empty string"));
    }
    Ok(text)
}

/// An optional [`non_empty`] string: absent or `null` is `None`, blank is an error.
fn non_empty_option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    match Option::<String>::deserialize(deserializer)? {
        Some(text) if text.trim().is_empty() => {
            Err(D::Error::invalid_value(Unexpected::Str(&text), &"a non-empty string"))
        }
        other => Ok(other),
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    /// Default: the configuration's profile, else the one matching the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileKind>,
    /// Overrides the configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Default: the first workspace folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_uri: Option<String>,
}

/// A started (or already open) session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreated {
    pub session_id: String,
    pub profile: ProfileKind,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    /// Default: the latest open session (of the context file's folder), else a new one.
    #[serde(default, deserialize_with = "non_empty_option", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(deserialize_with = "non_empty")]
    pub text: String,
    /// The file the user is looking at, and the selection in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<PromptContext>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptContext {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
}

/// `agentls.steer` and `agentls.followUp`: text for an open session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputParams {
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
    #[serde(deserialize_with = "non_empty")]
    pub text: String,
}

/// The session that took the input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputQueued {
    pub session_id: String,
}

/// The argument of the commands that only name a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCancelled {
    pub session_id: String,
    pub cancelled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionClosed {
    pub session_id: String,
    pub closed: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListSessionsParams {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}

/// One session of `agentls.listSessions` (and the result of `agentls.configure`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    pub root_uri: Option<String>,
    pub profile: String,
    pub model: String,
    /// Whether it is open: `status` is then [`SessionStatus::Open`].
    pub open: bool,
    #[serde(flatten)]
    pub status: SessionStatus,
}

/// What is known of an open session, and of a stored one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SessionStatus {
    Open(OpenSession),
    Stored(StoredSession),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenSession {
    pub reasoning_effort: Option<ReasoningEffort>,
    pub approval: Approval,
    pub state: SessionState,
    pub context: ContextInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSession {
    /// RFC 3339.
    pub created: String,
    /// The first prompt, shortened.
    pub title: String,
}

/// The calibrated estimate of the next request's input tokens, the calibration factor and the
/// model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextInfo {
    pub estimate_tokens: u64,
    pub calibration: f64,
    pub context_window: u64,
}

impl From<ContextStats> for ContextInfo {
    fn from(stats: ContextStats) -> Self {
        Self {
            estimate_tokens: stats.estimate_tokens,
            calibration: stats.calibration,
            context_window: stats.context_window,
        }
    }
}

/// `resumed: true` with the number of history entries for a session reloaded from its
/// transcript; `resumed: false` (no `turns`) for one that was already open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionResumed {
    #[serde(flatten)]
    pub session: SessionCreated,
    pub resumed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    pub session_id: String,
    pub entries: Vec<HistoryEntry>,
    /// The turns undone now (`turnId`s of user entries), as the `undo_state` event says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undone: Vec<u64>,
    /// The turns `agentls.redoTurn` would re-apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redoable: Vec<u64>,
}

/// One entry of `agentls.history`: what a client shows of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum HistoryEntry {
    User {
        text: String,
        timestamp: String,
        /// The checkpointed turn this input started (what `agentls.undoTurn` takes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<u64>,
    },
    Steering {
        text: String,
        timestamp: String,
    },
    Assistant {
        text: String,
        reasoning: Option<String>,
        tool_calls: Vec<HistoryCall>,
        timestamp: String,
    },
    ToolResult {
        call_id: String,
        tool_name: String,
        /// What the model received (possibly truncated).
        output: String,
        is_error: bool,
        timestamp: String,
    },
    /// Earlier turns replaced by a summary (compaction).
    Summary {
        text: String,
        turns_summarized: usize,
        timestamp: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryCall {
    pub call_id: String,
    pub tool_name: String,
    pub summary: String,
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigureParams {
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
    #[serde(default, deserialize_with = "non_empty_option", skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<EffortSetting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// `agentls.configure`'s `reasoningEffort`: an effort, or `"default"` (`None`: the model's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffortSetting(pub Option<ReasoningEffort>);

impl EffortSetting {
    const DEFAULT: &'static str = "default";
}

impl Serialize for EffortSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.map_or(Self::DEFAULT, ReasoningEffort::as_str))
    }
}

impl<'de> Deserialize<'de> for EffortSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == Self::DEFAULT {
            return Ok(Self(None));
        }
        text.parse().map(|effort| Self(Some(effort))).map_err(|_| {
            let choices: Vec<String> =
                ReasoningEffort::NAMES.iter().chain([&Self::DEFAULT]).map(|n| format!("`{n}`")).collect();
            D::Error::invalid_value(
                Unexpected::Str(&text),
                &format!("one of {}", choices.join(", ")).as_str(),
            )
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionQueued {
    pub session_id: String,
    pub queued: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoTurnParams {
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
    /// The turn to undo (with every later one); absent: the latest turn that changed files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<u64>,
    /// Also cut the conversation back to before the turn (the transcript records it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewind: bool,
}

/// What an undo or a redo did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnsReverted {
    pub session_id: String,
    /// The turns undone or redone, oldest first.
    pub turn_ids: Vec<u64>,
    /// The files changed (none when they already held what they should).
    pub files: Vec<RevertedFile>,
    /// Files of those turns whose text was not kept, so left as they are.
    pub not_covered: Vec<NotCoveredFile>,
    /// With `rewind`: how many history turns were cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound: Option<usize>,
    /// A plain client's answer: the work goes on, its outcome comes as `window/showMessage`
    /// (the other fields are empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub queued: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertedFile {
    pub uri: String,
    pub op: ReviewOp,
    /// The target of a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotCoveredFile {
    pub uri: String,
    /// `too_large`, `binary`, `prior_unknown` (a command changed it before anything read it) or
    /// `unreadable`.
    pub reason: crate::checkpoint::Uncovered,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveReviewParams {
    #[serde(deserialize_with = "non_empty")]
    pub review_id: String,
    pub decision: ReviewAnswer,
    /// With `accept`: the files not accepted as proposed (the others are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<ResolvedFile>>,
    /// Passed to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewAnswer {
    Accept,
    Reject,
}

/// One file of an accepted review: only `acceptedHunks` (`[]` rejects the file), or the text the
/// user edited (`finalText`); neither accepts it as proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedFile {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_hunks: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewResolved {
    pub review_id: String,
    pub decision: ReviewAnswer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvePermissionParams {
    #[serde(deserialize_with = "non_empty")]
    pub request_id: String,
    pub decision: PermissionAnswer,
    /// With `deny`: passed to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// The answers to an `agentls/permission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAnswer {
    AllowOnce,
    /// Also stores a rule for the project.
    AllowAlways,
    Deny,
}

impl PermissionAnswer {
    pub const ALL: [Self; 3] = [Self::AllowOnce, Self::AllowAlways, Self::Deny];
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResolved {
    pub request_id: String,
    pub decision: PermissionAnswer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustFolderParams {
    pub root_uri: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustFolderResult {
    pub root_uri: String,
    pub trusted: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServersParams {
    /// Default: the first workspace folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerList {
    pub root_uri: String,
    pub servers: Vec<McpServerInfo>,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    pub name: String,
    pub state: McpServerState,
    /// The command line or URL.
    pub target: String,
    /// The file that configures it; `None` when no file does (the editor's settings).
    pub origin: Option<String>,
    /// The tools a session offers (after `allow_tools`/`deny_tools`); empty unless running.
    pub tools: Vec<McpToolInfo>,
    pub last_error: Option<String>,
}

pub use crate::mcp::EntryState as McpServerState;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The server's own name of the tool.
    pub name: String,
    /// What the model calls it (`mcp__SERVER__TOOL`), the `toolName` of its events.
    pub tool_name: String,
    pub description: Option<String>,
    pub read_only_hint: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpRestartParams {
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    /// Default: the first workspace folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_uri: Option<String>,
}

/// The server's state right after the restart was asked (usually `starting`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpRestarted {
    pub name: String,
    pub state: McpServerState,
}

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
    /// The tool call that proposed the change (filled in by the event pump); `null` when no
    /// running call could be named.
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

impl ReviewOp {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Modify => "modify",
            Self::Delete => "delete",
            Self::Rename => "rename",
        }
    }
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
    pub options: Vec<PermissionAnswer>,
    /// The subagent whose call asks (filled in by the event pump); absent for the session's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentParams>,
    /// A call of an MCP server's tool (then `command` is its one-line form); absent for a command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpCallParams>,
}

/// The MCP call an `agentls/permission` asks about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpCallParams {
    pub server: String,
    /// The server's own name of the tool.
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The server says the tool only reads (a hint).
    pub read_only_hint: bool,
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

/// `agentls/userTyping` (client → server): the user started writing a prompt.
pub enum UserTypingNotification {}
impl Notification for UserTypingNotification {
    type Params = UserTypingParams;
    const METHOD: &'static str = "agentls/userTyping";
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserTypingParams {
    /// The session the prompt is for, when the client knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// docs/protocol.md's examples, as the tests read them (the editors' mirror checks read them the
/// same way).
///
/// An example is a ```json block: a command as `workspace/executeCommand` params
/// (`{"command": "agentls.x", "arguments": [{…}]}`) followed by a line starting with `→` and its
/// result, or the params (or result) of a message, told apart by its fields.
#[cfg(test)]
pub(crate) mod documented {
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    /// One ```json block: its value and the result documented after it.
    #[derive(Debug, Clone)]
    pub struct Example {
        pub value: Value,
        pub result: Option<Value>,
    }

    impl Example {
        pub fn command(&self) -> Option<&str> {
            self.value.get("command")?.as_str().filter(|c| c.starts_with("agentls."))
        }

        /// A command's one argument.
        pub fn argument(&self) -> &Value {
            &self.value["arguments"][0]
        }
    }

    /// The JSON blocks of docs/protocol.md, as text.
    pub fn blocks() -> Vec<&'static str> {
        let doc = include_str!("../../docs/protocol.md");
        doc.split("```json\n").skip(1).filter_map(|block| block.split("```").next()).collect()
    }

    /// Every block; one that is not JSON fails.
    pub fn examples() -> Vec<Example> {
        blocks()
            .into_iter()
            .map(|block| {
                // The result starts at the first line that starts with `→`.
                let arrow = block
                    .match_indices('→')
                    .map(|(at, _)| at)
                    .find(|&at| block[..at].rsplit('\n').next().is_some_and(|line| line.trim().is_empty()));
                let (value, result) = match arrow {
                    Some(at) => (&block[..at], Some(&block[at + '→'.len_utf8()..])),
                    None => (block, None),
                };
                let json = |text: &str| {
                    serde_json::from_str::<Value>(text)
                        .unwrap_or_else(|e| panic!("a docs/protocol.md example is not JSON ({e}):\n{text}"))
                };
                Example { value: json(value), result: result.map(json) }
            })
            .collect()
    }

    /// Reads `example` as `T` and writes it back: every documented field is known, none is lost.
    pub fn round_trip<T: Serialize + DeserializeOwned>(example: &Value) {
        let typed: T = serde_json::from_value(example.clone()).unwrap_or_else(|e| {
            panic!("docs/protocol.md example does not fit {} ({e}):\n{example}", std::any::type_name::<T>())
        });
        assert_eq!(
            &serde_json::to_value(&typed).expect("serialize"),
            example,
            "{}",
            std::any::type_name::<T>()
        );
    }
}

#[cfg(test)]
mod tests {
    //! docs/protocol.md's examples of every server message read back through the types, field
    //! for field (the commands' are checked against the command table, `lsp::commands`).

    use std::collections::HashSet;

    use strum::IntoEnumIterator;

    use super::documented::{examples, round_trip};
    use super::*;
    use crate::config::ConfigLayer;
    use crate::session::EventKind;

    /// The server's messages, as their documented payloads show them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    enum Payload {
        Event,
        Review,
        Permission,
        TrustRequired,
        SaveDocuments,
        Diagnostics,
        DiagnosticsResult,
    }

    const PAYLOADS: [Payload; 7] = [
        Payload::Event,
        Payload::Review,
        Payload::Permission,
        Payload::TrustRequired,
        Payload::SaveDocuments,
        Payload::Diagnostics,
        Payload::DiagnosticsResult,
    ];

    /// What a documented payload is, told apart by its fields as the editors' checks do.
    fn payloads_of(v: &Value) -> Vec<Payload> {
        let has = |keys: &[&str]| keys.iter().all(|k| v.get(k).is_some());
        let only = |key: &str| v.as_object().is_some_and(|o| o.len() == 1 && o.contains_key(key));
        PAYLOADS
            .into_iter()
            .filter(|payload| match payload {
                Payload::Event => has(&["kind", "timestamp", "data"]),
                Payload::Review => has(&["reviewId", "sessionId", "files"]),
                Payload::Permission => has(&["requestId", "options"]),
                Payload::TrustRequired => has(&["ignored"]),
                Payload::SaveDocuments => has(&["uris"]),
                Payload::Diagnostics => only("uri"),
                Payload::DiagnosticsResult => has(&["files"]) && !has(&["reviewId"]),
            })
            .collect()
    }

    /// Standard LSP (a JSON-RPC message, a registration, an edit, the InitializeResult) or the
    /// configuration layer (`initializationOptions`).
    fn standard(v: &Value) -> bool {
        let has = |key: &str| v.get(key).is_some();
        has("jsonrpc")
            || has("registrations")
            || (has("label") && has("edit"))
            || has("capabilities")
            || ConfigLayer::from_json(v.clone(), "docs/protocol.md").is_ok()
    }

    fn documented(payload: Payload) -> Vec<Value> {
        let found: Vec<Value> = examples()
            .into_iter()
            .filter(|e| e.command().is_none() && payloads_of(&e.value) == [payload])
            .map(|e| e.value)
            .collect();
        assert!(!found.is_empty(), "docs/protocol.md has no example of {payload:?}");
        found
    }

    #[test]
    fn every_documented_payload_is_a_known_one() {
        for example in examples() {
            if example.command().is_some() {
                continue;
            }
            assert!(
                example.result.is_none(),
                "a result (→) follows a payload that is not a command:\n{}",
                example.value
            );
            let payloads = payloads_of(&example.value);
            assert!(
                payloads.len() == 1 || (payloads.is_empty() && standard(&example.value)),
                "a docs/protocol.md example that is {payloads:?} (one known payload expected):\n{}",
                example.value
            );
        }
    }

    #[test]
    fn the_documented_messages_are_the_types() {
        for payload in PAYLOADS {
            for example in documented(payload) {
                match payload {
                    Payload::Event => round_trip::<EventParams>(&example),
                    Payload::Review => round_trip::<ReviewParams>(&example),
                    Payload::Permission => round_trip::<PermissionParams>(&example),
                    Payload::TrustRequired => round_trip::<TrustRequiredParams>(&example),
                    Payload::SaveDocuments => round_trip::<SaveDocumentsParams>(&example),
                    Payload::Diagnostics => round_trip::<DiagnosticsParams>(&example),
                    Payload::DiagnosticsResult => round_trip::<DiagnosticsResult>(&example),
                }
            }
        }
    }

    /// Every kind of event has an example (each read back as the type above).
    #[test]
    fn every_event_kind_is_documented() {
        let documented: HashSet<EventKind> = documented(Payload::Event)
            .into_iter()
            .map(|example| serde_json::from_value::<EventParams>(example).expect("an event").event.kind())
            .collect();
        let missing: Vec<EventKind> = EventKind::iter().filter(|k| !documented.contains(k)).collect();
        assert!(missing.is_empty(), "docs/protocol.md has no example of these events: {missing:?}");
    }

    /// `agentls/userTyping` is documented as a whole JSON-RPC notification: its params are the type.
    #[test]
    fn the_documented_user_typing_is_the_type() {
        let typing = examples()
            .into_iter()
            .find(|e| e.value["method"] == UserTypingNotification::METHOD)
            .expect("docs/protocol.md has an agentls/userTyping notification");
        round_trip::<UserTypingParams>(&typing.value["params"]);
    }

    #[test]
    fn the_documented_subagent_event_is_the_type() {
        let event = documented(Payload::Event)
            .into_iter()
            .find(|e| e.get("agent").is_some())
            .expect("docs/protocol.md has a subagent's event");
        assert_eq!(event["agent"]["parentCallId"], "toolu_04");
        round_trip::<EventParams>(&event);
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

    #[test]
    fn names_are_the_wire_names() {
        for op in [ReviewOp::Create, ReviewOp::Modify, ReviewOp::Delete, ReviewOp::Rename] {
            assert_eq!(serde_json::to_value(op).expect("serialize"), op.as_str());
        }
        let answers: Vec<Value> =
            PermissionAnswer::ALL.iter().map(|a| serde_json::to_value(a).expect("serialize")).collect();
        assert_eq!(answers, ["allow_once", "allow_always", "deny"]);
        for setting in [None, Some(ReasoningEffort::Low)] {
            let text = serde_json::to_value(EffortSetting(setting)).expect("serialize");
            assert_eq!(
                serde_json::from_value::<EffortSetting>(text).expect("deserialize"),
                EffortSetting(setting)
            );
        }
        assert_eq!(serde_json::to_value(EffortSetting(None)).expect("serialize"), "default");
    }
}
