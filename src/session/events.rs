//! Session events (spec §2.9): what a host (LSP, `agentls exec`) sees of a session.
//!
//! Invariant: every event goes through one unbounded channel in emission order and is never
//! dropped; a host that stopped listening only makes sends no-ops.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

/// What happened. Serializes in snake_case (`tool_call_end`, …): the names are part of the
/// product's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Session created. Data: profile, model, cwd, resumed.
    SessionStart,
    /// Session closed. Data: state, usage totals.
    SessionEnd,
    /// A user input starts processing. Data: content.
    UserInput,
    /// The processing cycle finished. Data: state, reason, usage totals.
    ProcessingEnd,
    /// The model began a response. Data: model.
    AssistantTextStart,
    /// Incremental answer text. Data: delta.
    AssistantTextDelta,
    /// Incremental reasoning text. Data: delta.
    AssistantReasoningDelta,
    /// The model finished a response. Data: text, reasoning, tool_calls, usage, totals.
    AssistantTextEnd,
    /// A tool call began. Data: tool_name, call_id, summary, arguments.
    ToolCallStart,
    /// Output of a running command, as it arrives (stdout and stderr interleaved; up to 1 MiB
    /// per stream, TOOL_CALL_END has all of it). Data: call_id, delta.
    ToolCallOutputDelta,
    /// A tool call finished. Data: tool_name, call_id, status, output (full) or error,
    /// duration_ms.
    ToolCallEnd,
    /// A steering message was added to the history. Data: content.
    SteeringInjected,
    /// A turn or round limit stopped the loop. Data: round or total_turns.
    TurnLimit,
    /// A repeating tool-call pattern was detected. Data: message.
    LoopDetection,
    /// A non-fatal issue (context usage, pruning). Data: message.
    Warning,
    /// An error. Data: message, fatal.
    Error,
    /// The session configuration changed. Data: the new values.
    ConfigChanged,
}

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub session_id: String,
    pub kind: EventKind,
    pub timestamp: DateTime<Utc>,
    pub data: Value,
}

/// Sends a session's events; cheap to clone.
#[derive(Debug, Clone)]
pub struct Emitter {
    session_id: String,
    tx: UnboundedSender<Event>,
}

impl Emitter {
    pub fn new(session_id: String, tx: UnboundedSender<Event>) -> Self {
        Self { session_id, tx }
    }

    pub fn emit(&self, kind: EventKind, data: Value) {
        let event = Event { session_id: self.session_id.clone(), kind, timestamp: Utc::now(), data };
        // A closed receiver means the host went away; the session still finishes cleanly.
        let _ = self.tx.send(event);
    }
}
