//! A session's events as `session/update` notifications, in order, and the permission
//! questions of its editor port after the updates before them.
//!
//! | event | update |
//! |---|---|
//! | `assistant_text_delta` | `agent_message_chunk` |
//! | `assistant_reasoning_delta` | `agent_thought_chunk` |
//! | `tool_call_start` | `tool_call` (kind, title, `rawInput`, locations, `in_progress`) |
//! | `tool_call_output_delta` | `tool_call_update` (the output so far, as text content) |
//! | `tool_call_end` | `tool_call_update` (`completed` / `failed`, output or error, `rawOutput`) |
//! | `user_input` (the first) | `session_info_update` (title) |
//! | `processing_end` | `usage_update`, then the prompt's stop reason |
//! | `config_changed` | `current_mode_update`, `config_option_update` |
//! | `compaction` after `/compact` | `agent_message_chunk` saying what was summarised |
//! | `warning` (the trust report, context use, MCP servers) | `notice` when the client shows them, else a quoted line of `agent_message_chunk` |
//! | `error` | `notice` when the client shows them (the prompt's error says it anyway) |
//!
//! Invariants:
//! - The pump is the only reader of its session's events and sends them in order; a question
//!   (`session/request_permission`) is sent only after every event emitted before it, so the
//!   client knows its `tool_call` first. Questions are answered on tasks of their own: the pump
//!   never waits for the user.
//! - The transcript gets the end of every input (`turn_end`) and the subagents' histories, as
//!   the language server's pump writes them.
//! - A subagent's events are not forwarded (ACP clients see the parent's `spawn_agent` call).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol_schema::v1::{
    ConfigOptionUpdate, ContentBlock, ContentChunk, CurrentModeUpdate, Notice, NoticeSeverity,
    RequestPermissionRequest, RequestPermissionResponse, SessionInfoUpdate, SessionNotification,
    SessionUpdate, StopReason, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::modes;
use super::port::Ask;
use super::sessions::{AcpSession, Waiter};
use super::wire::Wire;
use crate::session::{CallOutcome, CallStatus, EndReason, Event, EventData, TranscriptSink};

/// At most this much of a call's output travels in one update (the end of it).
const SHOWN_OUTPUT: usize = 64 * 1024;

/// A title for a session from its first prompt: its first line, at most 80 characters.
pub fn title_of(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.push('…');
    }
    title
}

/// The ACP kind of one of our tools.
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "read_many_files" => ToolKind::Read,
        "grep" | "glob" | "list_dir" | "codebase_search" => ToolKind::Search,
        "edit_file" | "replace" | "write_file" | "apply_patch" => ToolKind::Edit,
        "shell" | "python" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// The files a call names (`path`, `file_path`, `absolute_path`, `paths`), made absolute.
pub fn locations_of(arguments: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let mut paths: Vec<&str> = ["path", "file_path", "absolute_path"]
        .iter()
        .filter_map(|key| arguments.get(key).and_then(Value::as_str))
        .collect();
    if let Some(list) = arguments.get("paths").and_then(Value::as_array) {
        paths.extend(list.iter().filter_map(Value::as_str));
    }
    paths.into_iter().map(|p| ToolCallLocation::new(cwd.join(p))).collect()
}

/// The end of `text` that fits in one update.
fn shown(text: &str) -> String {
    if text.len() <= SHOWN_OUTPUT {
        return text.to_string();
    }
    let mut start = text.len() - SHOWN_OUTPUT;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::from(text.into())
}

/// What the pump keeps of a running call.
#[derive(Default)]
struct Call {
    output: String,
    /// The diffs its review showed: they stay in the call's content.
    diffs: Vec<ToolCallContent>,
}

pub struct Pump {
    session: Arc<AcpSession>,
    wire: Arc<Wire>,
    transcript: Option<Arc<dyn TranscriptSink>>,
    calls: HashMap<String, Call>,
    /// The own call that started last (a review is about it: edits run alone).
    last_started: Option<String>,
    cwd: PathBuf,
    /// The last `error` event's message: a failed prompt's error.
    last_error: Option<String>,
    /// The client shows `notice` updates (`clientCapabilities.session.notices`).
    notices: bool,
    /// The mode and model the client was last told of (a `config_changed` that changes neither,
    /// such as a cancel's marker, is not announced).
    config: Option<(crate::config::Approval, String)>,
}

impl Pump {
    pub fn new(
        session: Arc<AcpSession>,
        wire: Arc<Wire>,
        transcript: Option<Arc<dyn TranscriptSink>>,
        notices: bool,
    ) -> Self {
        let cwd = session.cwd.clone();
        let current = session.handle.config();
        Self {
            session,
            wire,
            transcript,
            calls: HashMap::new(),
            last_started: None,
            cwd,
            last_error: None,
            notices,
            config: Some((current.approval, current.model)),
        }
    }

    /// Something the user should know: a `notice` when the client shows them, else a line of
    /// the agent's message.
    fn tell(&self, severity: NoticeSeverity, message: String) {
        let update = if self.notices {
            SessionUpdate::Notice(Notice::new(severity, message))
        } else {
            SessionUpdate::AgentMessageChunk(ContentChunk::new(text(format!("\n> agentls: {message}\n\n"))))
        };
        self.update(update);
    }

    fn update(&self, update: SessionUpdate) {
        self.wire.notify("session/update", SessionNotification::new(self.session.id.clone(), update));
    }

    pub async fn run(mut self, mut events: UnboundedReceiver<Event>, mut asks: UnboundedReceiver<Ask>) {
        let mut asks_open = true;
        loop {
            tokio::select! {
                biased;
                event = events.recv() => match event {
                    Some(event) => {
                        if self.event(event) {
                            break;
                        }
                    }
                    None => break,
                },
                ask = asks.recv(), if asks_open => match ask {
                    Some(ask) => self.ask(ask),
                    None => asks_open = false,
                },
            }
        }
        // A prompt still waiting gets its answer: the session is gone.
        if let Some(Waiter::Input { reply, .. } | Waiter::Compact { reply }) =
            self.session.turns().waiter.take()
        {
            let _ = reply.send(Ok(StopReason::Cancelled));
        }
    }

    fn ask(&mut self, ask: Ask) {
        let Some(call_id) = ask.call_id.or_else(|| self.last_started.clone()) else {
            tracing::warn!("a question about no tool call; answered as cancelled");
            return;
        };
        if let Some(content) = &ask.fields.content {
            let diffs = content.iter().filter(|c| matches!(c, ToolCallContent::Diff(_))).cloned();
            self.calls.entry(call_id.clone()).or_default().diffs.extend(diffs);
        }
        let request = RequestPermissionRequest::new(
            self.session.id.clone(),
            ToolCallUpdate::new(call_id, ask.fields),
            ask.options,
        )
        .meta(ask.meta);
        let wire = Arc::clone(&self.wire);
        let reply = ask.reply;
        tokio::spawn(async move {
            let answer =
                wire.request::<RequestPermissionResponse>("session/request_permission", request).await;
            let _ = reply.send(match answer {
                Ok(response) => Some(response),
                Err(e) => {
                    tracing::warn!("session/request_permission failed: {}", e.message);
                    None
                }
            });
        });
    }

    /// Sends what `event` means for the client; `true` once the session ended.
    fn event(&mut self, event: Event) -> bool {
        if !event.is_own() {
            return false;
        }
        match event.data {
            EventData::AssistantTextDelta(d) => {
                self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(d.delta))))
            }
            EventData::AssistantReasoningDelta(d) => {
                self.update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(d.delta))))
            }
            EventData::UserInput(input) => {
                self.session.turns().started += 1;
                self.last_error = None;
                if !self.session.titled.swap(true, Ordering::SeqCst) {
                    let title = title_of(&input.content);
                    self.update(SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(title)));
                }
            }
            EventData::ToolCallStart(call) => {
                let call_kind = kind_of(&call.tool_name);
                let locations = locations_of(&call.arguments, &self.cwd);
                let tool_call = ToolCall::new(call.call_id.clone(), call.summary)
                    .kind(call_kind)
                    .status(ToolCallStatus::InProgress)
                    .locations(locations)
                    .raw_input(call.arguments);
                self.calls.insert(call.call_id.clone(), Call::default());
                self.last_started = Some(call.call_id);
                self.update(SessionUpdate::ToolCall(tool_call));
            }
            EventData::ToolCallOutputDelta(d) => {
                let call = self.calls.entry(d.call_id.clone()).or_default();
                call.output.push_str(&d.delta);
                let content = vec![ToolCallContent::from(text(format!("```\n{}\n```", shown(&call.output))))];
                let fields = ToolCallUpdateFields::new().content(content);
                self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(d.call_id, fields)));
            }
            EventData::ToolCallEnd(end) => {
                let call = self.calls.remove(&end.call_id).unwrap_or_default();
                let (body, raw) = match &end.outcome {
                    CallOutcome::Output { output, .. } => (output.clone(), json!({"output": output})),
                    CallOutcome::Error { error } => (error.clone(), json!({"error": error})),
                };
                let mut content = call.diffs;
                if !body.is_empty() {
                    let fenced = kind_of(&end.tool_name) == ToolKind::Execute;
                    let body = shown(&body);
                    content.push(ToolCallContent::from(text(if fenced {
                        format!("```\n{body}\n```")
                    } else {
                        body
                    })));
                }
                let status = match end.status {
                    CallStatus::Ok => ToolCallStatus::Completed,
                    CallStatus::Error | CallStatus::Cancelled => ToolCallStatus::Failed,
                };
                let fields = ToolCallUpdateFields::new().status(status).content(content).raw_output(raw);
                self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(end.call_id, fields)));
            }
            EventData::ConfigChanged(change) => {
                {
                    let mut turns = self.session.turns();
                    if std::mem::take(&mut turns.cancel_marker) {
                        turns.cancelled();
                    }
                }
                let config = (change.approval, change.model.clone());
                if self.config.as_ref() != Some(&config) {
                    self.update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(modes::mode_of(
                        change.approval,
                    ))));
                    let options = modes::config_options(change.approval, &change.model);
                    self.update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)));
                }
                self.config = Some(config);
            }
            EventData::Compaction(c) => {
                let mut turns = self.session.turns();
                if matches!(turns.waiter, Some(Waiter::Compact { .. })) {
                    let message = format!(
                        "Compacted the conversation: {} messages summarised by {} (~{} → ~{} tokens).",
                        c.messages_summarized, c.model, c.tokens_before, c.tokens_after
                    );
                    if let Some(Waiter::Compact { reply }) = turns.waiter.take() {
                        drop(turns);
                        self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(message))));
                        let _ = reply.send(Ok(StopReason::EndTurn));
                    }
                }
            }
            EventData::Warning(warning) => {
                tracing::info!(session = %self.session.id, "warning: {}", warning.message);
                let mut turns = self.session.turns();
                if matches!(turns.waiter, Some(Waiter::Compact { .. }))
                    && let Some(Waiter::Compact { reply }) = turns.waiter.take()
                {
                    // `/compact` found nothing to summarise: that is its answer.
                    drop(turns);
                    self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(warning.message))));
                    let _ = reply.send(Ok(StopReason::EndTurn));
                } else {
                    drop(turns);
                    self.tell(NoticeSeverity::Warning, warning.message);
                }
            }
            EventData::Error(error) => {
                tracing::warn!(session = %self.session.id, "error: {}", error.message);
                if self.notices {
                    self.update(SessionUpdate::Notice(Notice::new(
                        NoticeSeverity::Error,
                        error.message.clone(),
                    )));
                }
                self.last_error = Some(error.message);
            }
            EventData::ProcessingEnd(end) => {
                if let Some(transcript) = &self.transcript {
                    transcript.agents_changed(&self.session.handle.agents());
                    transcript.input_ended(end.reason.as_str());
                }
                let stats = self.session.handle.context();
                self.update(SessionUpdate::UsageUpdate(UsageUpdate::new(
                    stats.estimate_tokens,
                    stats.context_window,
                )));
                let mut turns = self.session.turns();
                let started = turns.started;
                if matches!(turns.waiter, Some(Waiter::Input { input, .. }) if input == started)
                    && let Some(Waiter::Input { reply, .. }) = turns.waiter.take()
                {
                    let error = self.last_error.take().unwrap_or(end.text);
                    let _ = reply.send(stop_reason(end.reason, &error));
                }
            }
            EventData::SessionEnd(_) => return true,
            _ => {}
        }
        false
    }
}

/// The ACP stop reason of a processing cycle's end; an error is the prompt's error.
fn stop_reason(reason: EndReason, text: &str) -> Result<StopReason, String> {
    match reason {
        EndReason::Completed | EndReason::Submitted => Ok(StopReason::EndTurn),
        EndReason::TurnLimit | EndReason::RoundLimit | EndReason::StepLimit | EndReason::TimeLimit => {
            Ok(StopReason::MaxTurnRequests)
        }
        EndReason::Cancelled => Ok(StopReason::Cancelled),
        EndReason::Error | EndReason::Fatal => Err(if text.is_empty() {
            format!("the turn failed ({})", reason.as_str())
        } else {
            text.to_string()
        }),
    }
}
