//! A session's subagents for clients that advertised `subagents`: each child is announced with
//! `subagent_update` on its immediate parent session (title: its agent id; description: its
//! task; cwd; state `running`, then `idle` with the stop reason of each input it finished), and
//! its own events travel as the updates of its own session id: its task as
//! `user_message_chunk`, its answer and reasoning as chunks, its tool calls as `tool_call` /
//! `tool_call_update`.
//!
//! Invariants:
//! - A child is announced before any update of its own session (the protocol's rule), once.
//! - A child's permission question (about a call of its own) is asked on the child's session id,
//!   after that call's `tool_call`, so the client shows it in the child's thread.
//! - A client that did not advertise `subagents` gets none of this: it sees the parent's
//!   `spawn_agent` / `wait` calls as tool calls, and the children's permission questions on the
//!   parent session.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentChunk, ErrorStopReason, IdleStateUpdate, IdleStopReason, RunningStateUpdate, SessionNotification,
    SessionUpdate, StateUpdate, SubagentUpdate, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};

use super::convert::{ended, output_so_far, started, text};
use super::wire::Wire;
use crate::session::{AgentPath, EndReason, EventData};

/// The children seen so far, and their running calls' output.
#[derive(Default)]
pub struct Children {
    announced: HashSet<String>,
    /// Each child's working directory (its `session_start`): its calls' paths are relative to it.
    cwds: HashMap<String, PathBuf>,
    /// Output so far of the children's running commands, by (child session, call id).
    outputs: HashMap<(String, String), String>,
    /// The child session of each running call of a child, by call id.
    sessions: HashMap<String, String>,
    /// The client's terminal a child's running command runs in: it stays in the call's content.
    terminals: HashMap<String, ToolCallContent>,
}

fn idle(reason: EndReason, text: &str) -> IdleStopReason {
    match reason {
        EndReason::Completed | EndReason::Submitted => IdleStopReason::EndTurn,
        EndReason::TurnLimit | EndReason::RoundLimit | EndReason::StepLimit | EndReason::TimeLimit => {
            IdleStopReason::MaxTurnRequests
        }
        EndReason::Cancelled => IdleStopReason::Cancelled,
        EndReason::Error | EndReason::Fatal => IdleStopReason::Error(
            ErrorStopReason::new().error(
                agent_client_protocol_schema::v1::Error::internal_error()
                    .data(serde_json::Value::String(text.to_string())),
            ),
        ),
    }
}

/// The first line of a task, at most 200 characters.
fn described(task: &str) -> String {
    let line = task.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    line.chars().take(200).collect()
}

impl Children {
    /// The child session whose running call `call_id` is, if a child's.
    pub fn session_of(&self, call_id: &str) -> Option<&str> {
        self.sessions.get(call_id).map(String::as_str)
    }

    /// A child's command `call_id` runs in the client's terminal `content` (`terminal.rs`).
    pub fn terminal(&mut self, wire: &Arc<Wire>, call_id: String, content: ToolCallContent) {
        let Some(child) = self.sessions.get(&call_id).cloned() else { return };
        self.terminals.insert(call_id.clone(), content.clone());
        let fields = ToolCallUpdateFields::new().content(vec![content]);
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id, fields));
        wire.notify("session/update", SessionNotification::new(child, update));
    }

    /// `call_id` is the top session's own call (ids are the model's: a child's may be reused).
    pub fn forget(&mut self, call_id: &str) {
        self.sessions.remove(call_id);
    }

    /// Sends what a child's event means for the client; `cwd` is the top session's.
    pub fn event(&mut self, wire: &Arc<Wire>, agent: &AgentPath, data: EventData, cwd: &Path) {
        let child = agent.session_id.clone();
        let parent = |update: SubagentUpdate| {
            let update = SessionUpdate::SubagentUpdate(update);
            wire.notify("session/update", SessionNotification::new(agent.parent_session_id.clone(), update));
        };
        let own = |update: SessionUpdate| {
            wire.notify("session/update", SessionNotification::new(child.clone(), update));
        };
        if self.announced.insert(child.clone()) {
            let mut update = SubagentUpdate::new(child.clone()).title(agent.agent_id.clone());
            if let EventData::SessionStart(start) = &data {
                update = update.cwd(start.cwd.clone());
                self.cwds.insert(child.clone(), start.cwd.clone());
            }
            parent(update.state(StateUpdate::Running(RunningStateUpdate::new())));
        }
        match data {
            EventData::UserInput(input) => {
                parent(
                    SubagentUpdate::new(child.clone())
                        .description(described(&input.content))
                        .state(StateUpdate::Running(RunningStateUpdate::new())),
                );
                own(SessionUpdate::UserMessageChunk(ContentChunk::new(text(input.content))));
            }
            EventData::AssistantTextDelta(d) => {
                own(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(d.delta))))
            }
            EventData::AssistantReasoningDelta(d) => {
                own(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(d.delta))))
            }
            EventData::ToolCallStart(call) => {
                self.sessions.insert(call.call_id.clone(), child.clone());
                let cwd = self.cwds.get(&child).map_or(cwd, PathBuf::as_path);
                own(SessionUpdate::ToolCall(started(call, cwd)))
            }
            EventData::ToolCallOutputDelta(d) => {
                let output = self.outputs.entry((child.clone(), d.call_id.clone())).or_default();
                output.push_str(&d.delta);
                own(SessionUpdate::ToolCallUpdate(output_so_far(d.call_id, output)));
            }
            EventData::ToolCallEnd(end) => {
                self.outputs.remove(&(child.clone(), end.call_id.clone()));
                self.sessions.remove(&end.call_id);
                let terminal = self.terminals.remove(&end.call_id);
                own(SessionUpdate::ToolCallUpdate(ended(end, terminal.into_iter().collect())));
            }
            EventData::ProcessingEnd(end) => {
                let state = IdleStateUpdate::new().stop_reason(idle(end.reason, &end.text));
                parent(SubagentUpdate::new(child.clone()).state(StateUpdate::Idle(state)));
            }
            _ => {}
        }
    }
}
