//! Session events (spec §2.9): what a host (LSP, `agentls exec`) sees of a session.
//!
//! Invariants:
//! - Every event goes through one unbounded channel in emission order and is never dropped; a
//!   host that stopped listening only makes sends no-ops.
//! - Each kind has one typed payload ([`EventData`]); its serde form is the protocol of
//!   docs/protocol.md ("Events"): `{"kind": "<snake_case>", "data": {…}}` with the field names
//!   written there. A renamed field is a compile error in every host, not a blank in a client.
//! - [`EventData`] is the one event type: the kind hosts compare ([`EventKind`]) is derived from
//!   it, never written by hand.
//! - The session id is shared (`Arc<str>`), so emitting an event allocates only its payload.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{EnumDiscriminants, EnumIter};
use tokio::sync::mpsc::UnboundedSender;

use super::SessionState;
use crate::checkpoint::{Direction, UndoState};
use crate::config::Approval;
use crate::llm::{FinishReason, LlmError, ReasoningEffort, Usage};

/// The payload of each kind of event. Adjacently tagged: `{"kind": …, "data": {…}}`; the kind's
/// name on the wire is the variant's, in snake_case (`tool_call_end`), and is written nowhere
/// else.
///
/// [`EventKind`] is derived from it (a variant without its payload), so hosts compare kinds as
/// values: a renamed or removed kind is a compile error wherever a host names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, EnumDiscriminants)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case", deny_unknown_fields)]
#[strum_discriminants(
    name(EventKind),
    derive(Hash, EnumIter),
    doc = "What happened: an [`EventData`] without its payload (`EventData::kind`)."
)]
pub enum EventData {
    /// Session created.
    SessionStart(SessionStart),
    /// Session closed.
    SessionEnd(SessionEnd),
    /// A user input starts processing (with the id of its checkpointed turn).
    UserInput(UserInput),
    /// The processing cycle finished.
    ProcessingEnd(ProcessingEnd),
    /// The model began a response.
    AssistantTextStart(TextStart),
    /// Incremental answer text.
    AssistantTextDelta(Delta),
    /// Incremental reasoning text.
    AssistantReasoningDelta(Delta),
    /// The model finished a response.
    AssistantTextEnd(TextEnd),
    /// A tool call began.
    ToolCallStart(ToolCallStart),
    /// Output of a running command, as it arrives (stdout and stderr interleaved; up to 1 MiB
    /// per stream, TOOL_CALL_END has all of it).
    ToolCallOutputDelta(OutputDelta),
    /// A tool call finished.
    ToolCallEnd(ToolCallEnd),
    /// A steering message was added to the history.
    SteeringInjected(Content),
    /// A turn or round limit stopped the loop.
    TurnLimit(TurnLimit),
    /// A repeating tool-call pattern was detected.
    LoopDetection(Notice),
    /// A non-fatal issue (context usage, pruning).
    Warning(Warning),
    /// An error.
    Error(ErrorData),
    /// The session configuration changed.
    ConfigChanged(ConfigChanged),
    /// An instruction file changed; it applies from the next model call (sent by the language
    /// server, which watches the files).
    ProjectDocsReloaded(ProjectDocsReloaded),
    /// Earlier history was replaced by a summary.
    Compaction(Compaction),
    /// Which turns are undone changed: an undo or a redo (sent by the language server, after
    /// the command of any client), or a new turn that changed files took the redo away.
    UndoState(UndoStatus),
}

impl EventData {
    pub fn kind(&self) -> EventKind {
        EventKind::from(self)
    }

    /// The text of a streaming delta (answer, reasoning or command output).
    pub fn delta_mut(&mut self) -> Option<&mut String> {
        match self {
            Self::AssistantTextDelta(d) | Self::AssistantReasoningDelta(d) => Some(&mut d.delta),
            Self::ToolCallOutputDelta(d) => Some(&mut d.delta),
            _ => None,
        }
    }

    /// Whether `next` continues this delta: the same kind, and for command output the same call.
    pub fn continued_by(&self, next: &EventData) -> bool {
        match (self, next) {
            (Self::AssistantTextDelta(_), Self::AssistantTextDelta(_))
            | (Self::AssistantReasoningDelta(_), Self::AssistantReasoningDelta(_)) => true,
            (Self::ToolCallOutputDelta(a), Self::ToolCallOutputDelta(b)) => a.call_id == b.call_id,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStart {
    pub profile: String,
    pub model: String,
    pub cwd: PathBuf,
    pub resumed: bool,
    /// Names of the tools offered.
    pub tools: Vec<String>,
    /// Paths of the instruction files in use.
    pub project_docs: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionEnd {
    pub state: SessionState,
    pub totals: Usage,
}

/// A message of the user (`user_input`, `steering_injected`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Content {
    pub content: String,
}

/// A user input (`user_input`). `turn_id`: the turn `agentls.undoTurn` names it by (absent
/// when the session records no checkpoints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserInput {
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<u64>,
}

/// The turns undone now (`undo_state`), and which of them the next redo re-applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoStatus {
    /// Every turn undone, oldest first.
    pub undone: Vec<u64>,
    /// The turns `agentls.redoTurn` would re-apply.
    pub redoable: Vec<u64>,
    /// What changed it: the undo or redo of `turn_ids`; absent when a new turn that changed
    /// files took the redo away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_ids: Vec<u64>,
    /// With a rewind: how many history entries were cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound: Option<usize>,
}

impl UndoStatus {
    pub fn new(state: UndoState) -> Self {
        Self {
            undone: state.undone,
            redoable: state.redoable,
            direction: None,
            turn_ids: Vec::new(),
            rewound: None,
        }
    }
}

/// Why a processing cycle ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    Completed,
    TurnLimit,
    RoundLimit,
    Cancelled,
    Error,
    /// The model called `submit` (submit mode): `text` is its answer.
    Submitted,
    /// `max_steps` model requests were made for the input.
    StepLimit,
    /// The input ran for `time_limit_secs`.
    TimeLimit,
    /// Unrecoverable (authentication, quota): the session closes.
    #[serde(rename = "fatal_error")]
    Fatal,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::TurnLimit => "turn_limit",
            Self::RoundLimit => "round_limit",
            Self::Cancelled => "cancelled",
            Self::Error => "error",
            Self::Submitted => "submitted",
            Self::StepLimit => "step_limit",
            Self::TimeLimit => "time_limit",
            Self::Fatal => "fatal_error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessingEnd {
    pub state: SessionState,
    pub reason: EndReason,
    /// The final answer.
    pub text: String,
    pub totals: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextStart {
    pub model: String,
}

/// A piece of the answer or of the reasoning. A host that falls behind may merge queued
/// pieces: the concatenation is the same text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delta {
    pub delta: String,
}

/// A tool call as `assistant_text_end` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSummary {
    pub call_id: String,
    pub tool_name: String,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextEnd {
    pub text: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<CallSummary>,
    pub usage: Usage,
    pub totals: Usage,
    pub response_id: String,
    pub model: String,
    /// Why the model stopped: `stop`, `length` (its output limit), `tool_calls`,
    /// `content_filter` (a refusal), or the provider's own word.
    #[serde(default)]
    pub finish_reason: FinishReason,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallStart {
    pub tool_name: String,
    pub call_id: String,
    /// Human-readable, e.g. `shell: cargo test`.
    pub summary: String,
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputDelta {
    pub call_id: String,
    pub delta: String,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Ok,
    Error,
    Cancelled,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What a finished call produced: its full output, or its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallOutcome {
    /// `truncated` says whether the model got a shortened copy.
    Output {
        output: String,
        truncated: bool,
    },
    Error {
        error: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEnd {
    pub tool_name: String,
    pub call_id: String,
    pub summary: String,
    pub status: CallStatus,
    #[serde(flatten)]
    pub outcome: CallOutcome,
    pub duration_ms: u64,
}

/// `{"round": n}` (tool rounds of one input), `{"total_turns": n}`, `{"steps": n}` (model
/// requests of one input) or `{"time_limit_secs": n}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnLimit {
    Round(u32),
    TotalTurns(usize),
    Steps(u32),
    TimeLimitSecs(u64),
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// `agentls.compact` or an editor's Compact command.
    Manual,
    /// The estimate crossed the configured share of the context window.
    Auto,
    /// The provider refused a request as too long.
    Overflow,
}

impl CompactionTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Auto => "auto",
            Self::Overflow => "overflow",
        }
    }
}

/// A compaction: `messages_summarized` turns became one summary message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    pub trigger: CompactionTrigger,
    /// Calibrated estimates of the next request before and after.
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_summarized: usize,
    pub messages_kept: usize,
    /// The model that wrote the summary.
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notice {
    pub message: String,
}

/// A non-fatal issue; context usage adds `approx_tokens` and `context_window`, pruning adds
/// `turns_removed` and `dropped` (what the removed turns were).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approx_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_removed: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorData {
    pub message: String,
    pub fatal: bool,
    /// The provider error, when the error came from the model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<LlmError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigChanged {
    pub model: String,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub approval: Approval,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectDocsReloaded {
    pub path: PathBuf,
    pub message: String,
}

/// Which subagent an event comes from (spec §7): set on every event of a child, which reaches
/// the host through its parent's stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentPath {
    /// The id the parent's model uses (`agent-1`).
    pub agent_id: String,
    /// The child's own session id.
    pub session_id: String,
    /// The session that spawned it (the top session, or a child for a grandchild).
    pub parent_session_id: String,
    /// The parent's `spawn_agent` call.
    pub parent_call_id: String,
}

/// One event of a session. Serialized (`agentls exec --json`) as
/// `{"session_id", "kind", "timestamp", "data"}`, plus `agent` on a subagent's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The session the host drives (for a subagent's event: the top session).
    pub session_id: Arc<str>,
    #[serde(flatten)]
    pub data: EventData,
    pub timestamp: DateTime<Utc>,
    /// The subagent that emitted it; `None` for the session's own events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentPath>,
}

impl Event {
    pub fn new(session_id: Arc<str>, data: EventData) -> Self {
        Self { session_id, data, timestamp: Utc::now(), agent: None }
    }

    /// Whether the session emitted it itself (not one of its subagents).
    pub fn is_own(&self) -> bool {
        self.agent.is_none()
    }

    pub fn kind(&self) -> EventKind {
        self.data.kind()
    }
}

/// Sends a session's events; cheap to clone.
#[derive(Debug, Clone)]
pub struct Emitter {
    session_id: Arc<str>,
    tx: UnboundedSender<Event>,
}

impl Emitter {
    pub fn new(session_id: Arc<str>, tx: UnboundedSender<Event>) -> Self {
        Self { session_id, tx }
    }

    pub fn emit(&self, data: EventData) {
        // A closed receiver means the host went away; the session still finishes cleanly.
        let _ = self.tx.send(Event::new(self.session_id.clone(), data));
    }

    /// A sender that does not keep the stream open.
    pub fn downgrade(&self) -> WeakEmitter {
        WeakEmitter { session_id: self.session_id.clone(), tx: self.tx.downgrade() }
    }

    /// Passes on an event of a subagent as this session's: its session id becomes this session's,
    /// and an event the child emitted itself is marked with `agent` (a grandchild's already is).
    pub fn forward(&self, mut event: Event, agent: &AgentPath) {
        event.agent.get_or_insert_with(|| agent.clone());
        event.session_id = self.session_id.clone();
        let _ = self.tx.send(event);
    }
}

/// An [`Emitter`] that lets the stream end when every strong one is gone.
#[derive(Debug, Clone)]
pub struct WeakEmitter {
    session_id: Arc<str>,
    tx: tokio::sync::mpsc::WeakUnboundedSender<Event>,
}

impl WeakEmitter {
    pub fn upgrade(&self) -> Option<Emitter> {
        Some(Emitter { session_id: self.session_id.clone(), tx: self.tx.upgrade()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(data: EventData) -> Value {
        serde_json::to_value(Event::new("s".into(), data)).unwrap()
    }

    #[test]
    fn events_serialize_to_the_documented_shape() {
        let end = wire(EventData::ToolCallEnd(ToolCallEnd {
            tool_name: "read_file".into(),
            call_id: "c1".into(),
            summary: "read_file a.rs".into(),
            status: CallStatus::Ok,
            outcome: CallOutcome::Output { output: "x".into(), truncated: false },
            duration_ms: 3,
        }));
        assert_eq!(end["session_id"], "s");
        assert_eq!(end["kind"], "tool_call_end");
        assert!(end["timestamp"].is_string());
        assert_eq!(
            end["data"],
            json!({"tool_name": "read_file", "call_id": "c1", "summary": "read_file a.rs", "status": "ok",
                   "output": "x", "truncated": false, "duration_ms": 3})
        );
        let limit = wire(EventData::TurnLimit(TurnLimit::TotalTurns(4)));
        assert_eq!(limit["data"], json!({"total_turns": 4}));
        let warning = wire(EventData::Warning(Warning { message: "m".into(), ..Default::default() }));
        assert_eq!(warning["data"], json!({"message": "m"}));
        let end = wire(EventData::ProcessingEnd(ProcessingEnd {
            state: SessionState::Idle,
            reason: EndReason::Fatal,
            text: String::new(),
            totals: Usage::default(),
        }));
        assert_eq!(end["data"]["reason"], "fatal_error");
    }

    #[test]
    fn events_read_back_as_they_were_written() {
        let event = Event::new(
            "s".into(),
            EventData::ToolCallEnd(ToolCallEnd {
                tool_name: "shell".into(),
                call_id: "c".into(),
                summary: "shell: false".into(),
                status: CallStatus::Error,
                outcome: CallOutcome::Error { error: "exit 1".into() },
                duration_ms: 1,
            }),
        );
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), event);
    }

    #[test]
    fn a_delta_continues_only_its_own_stream() {
        let text = |d: &str| EventData::AssistantTextDelta(Delta { delta: d.into() });
        let output =
            |c: &str| EventData::ToolCallOutputDelta(OutputDelta { call_id: c.into(), delta: "x".into() });
        assert!(text("a").continued_by(&text("b")));
        assert!(!text("a").continued_by(&output("1")));
        assert!(output("1").continued_by(&output("1")));
        assert!(!output("1").continued_by(&output("2")));
    }
}
