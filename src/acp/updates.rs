//! A session's events as `session/update` notifications, in order, and the permission
//! questions of its editor port after the updates before them.
//!
//! | event | update |
//! |---|---|
//! | `assistant_text_delta` | `agent_message_chunk` |
//! | `assistant_reasoning_delta` | `agent_thought_chunk` |
//! | `assistant_text_end` | nothing; its `finish_reason` decides the stop reason (below) |
//! | `tool_call_start` | `tool_call` (kind, title, `rawInput`, locations, `in_progress`) |
//! | `tool_call_output_delta` | `tool_call_update` (the output so far, as text content) |
//! | `tool_call_end` | `tool_call_update` (`completed` / `failed`, output or error, `rawOutput`) |
//! | `user_input` (the first) | `session_info_update` (title) |
//! | `processing_end` | `usage_update`, then the prompt's stop reason: `end_turn`; `max_tokens` when the last answer stopped at the model's output limit; `refusal` when the model refused (a content filter; the prompt is cut from the history first); `max_turn_requests` at a turn, tool-round, step or time limit; `cancelled`; an error is the prompt's JSON-RPC error |
//! | `config_changed` | `current_mode_update` (when the mode changed), `config_option_update` (mode, model, reasoning effort) |
//! | `compaction` | `compaction_update` (`completed`, the summary, the counts in `_meta["dev.agentls/compaction"]`) when the client advertised `session.compaction`; else for `/compact` an `agent_message_chunk`, for an automatic one an `agent_thought_chunk`, saying what was summarised (~tokens before → after) |
//! | `warning` (the trust report, context use, MCP servers) | `notice` when the client shows them, else a quoted line of `agent_message_chunk` |
//! | `error` | `notice` when the client shows them (the prompt's error says it anyway) |
//! | a subagent's events | with `subagents` advertised: `subagent_update` on the parent session, the child's own updates under its session id (`subagents.rs`); else nothing (the parent's `spawn_agent` / `wait` calls show them) |
//!
//! No `plan`: no profile has a planning tool.
//!
//! Invariants:
//! - The pump is the only reader of its session's events and sends them in order; a question
//!   (`session/request_permission`) is sent only after every event emitted before it, so the
//!   client knows its `tool_call` first. Questions are answered on tasks of their own: the pump
//!   never waits for the user.
//! - The transcript gets the end of every input (`turn_end`) and the subagents' histories, as
//!   the language server's pump writes them.
//! - A subagent's events reach only a client that advertised `subagents`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol_schema::v1::{
    CompactionStatus, CompactionUpdate, ConfigOptionUpdate, ContentChunk, CurrentModeUpdate, Notice,
    NoticeSeverity, RequestPermissionRequest, RequestPermissionResponse, SessionInfoUpdate,
    SessionNotification, SessionUpdate, StopReason, Terminal, TerminalId, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, UsageUpdate,
};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::convert::{Shows, ended, output_so_far, started, text, title_of};
use super::modes;
use super::port::{Ask, ToPump};
use super::session::{AcpSession, Waiter};
use super::subagents::Children;
use super::wire::Wire;
use crate::checkpoint::HistoryMark;
use crate::llm::FinishReason;
use crate::session::{Compaction, EndReason, Event, EventData, TranscriptSink, Turn};

/// The `_meta` key of a `compaction_update`'s counts.
pub const COMPACTION_META: &str = "dev.agentls/compaction";

/// What the pump keeps of a running call.
#[derive(Default)]
struct Call {
    output: String,
    /// The diffs its review showed: they stay in the call's content.
    diffs: Vec<ToolCallContent>,
    /// The client's terminal its command runs in: it stays in the call's content.
    terminal: Option<ToolCallContent>,
}

pub struct Pump {
    session: Arc<AcpSession>,
    wire: Arc<Wire>,
    transcript: Option<Arc<dyn TranscriptSink>>,
    calls: HashMap<String, Call>,
    /// The call that started last, the session's own or (shown to the client) a child's: a
    /// review is about it (edits run alone).
    last_started: Option<String>,
    cwd: PathBuf,
    /// The last `error` event's message: a failed prompt's error.
    last_error: Option<String>,
    /// Why the model stopped its last answer of the running input (`assistant_text_end`).
    finish: FinishReason,
    /// The optional updates the client advertised it understands.
    shows: Shows,
    /// Compactions told as `compaction_update` so far (their ids).
    compactions: usize,
    /// The subagents shown to a client that understands them.
    children: Children,
    /// Questions and terminals of a child's call whose `tool_call` its forwarder has not handed
    /// on yet: handled once it has (they follow their call, on the child's session).
    waiting: Vec<(String, ToPump)>,
    /// The mode, model and effort the client was last told of (a `config_changed` that changes
    /// none, such as a cancel's marker, is not announced).
    config: modes::Current,
}

impl Pump {
    pub fn new(
        session: Arc<AcpSession>,
        wire: Arc<Wire>,
        transcript: Option<Arc<dyn TranscriptSink>>,
        shows: Shows,
    ) -> Self {
        let cwd = session.cwd.clone();
        let config = session.current();
        Self {
            session,
            wire,
            transcript,
            calls: HashMap::new(),
            last_started: None,
            cwd,
            last_error: None,
            finish: FinishReason::Stop,
            shows,
            compactions: 0,
            children: Children::default(),
            waiting: Vec::new(),
            config,
        }
    }

    /// Something the user should know: a `notice` when the client shows them, else a line of
    /// the agent's message.
    fn tell(&self, severity: NoticeSeverity, message: String) {
        let update = if self.shows.notices {
            SessionUpdate::Notice(Notice::new(severity, message))
        } else {
            SessionUpdate::AgentMessageChunk(ContentChunk::new(text(format!("\n> agentls: {message}\n\n"))))
        };
        self.update(update);
    }

    fn update(&self, update: SessionUpdate) {
        self.wire.notify("session/update", SessionNotification::new(self.session.id.clone(), update));
    }

    pub async fn run(mut self, mut events: UnboundedReceiver<Event>, mut asks: UnboundedReceiver<ToPump>) {
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
                    Some(item) => self.handed(item),
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

    /// A command of `call_id` runs in the client's terminal: the call shows the terminal.
    fn terminal(&mut self, call_id: String, terminal_id: String) {
        let content = ToolCallContent::Terminal(Terminal::new(TerminalId::new(terminal_id)));
        if self.children.session_of(&call_id).is_some() {
            self.children.terminal(&self.wire, call_id, content);
            return;
        }
        self.calls.entry(call_id.clone()).or_default().terminal = Some(content.clone());
        let fields = ToolCallUpdateFields::new().content(vec![content]);
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id, fields)));
    }

    /// What the port handed the pump: handled now, or once its call's `tool_call` was sent when
    /// that is a child's still on its way (own calls are always seen first).
    fn handed(&mut self, item: ToPump) {
        let call_id = match &item {
            ToPump::Ask(ask) => ask.call_id.clone().or_else(|| self.last_started.clone()),
            ToPump::Terminal { call_id, .. } => Some(call_id.clone()),
        };
        if let Some(call_id) = call_id
            && self.shows.subagents
            && !self.calls.contains_key(&call_id)
            && self.children.session_of(&call_id).is_none()
        {
            self.waiting.push((call_id, item));
            return;
        }
        match item {
            ToPump::Ask(ask) => self.ask(*ask),
            ToPump::Terminal { call_id, terminal_id } => self.terminal(call_id, terminal_id),
        }
    }

    /// Handles what waited for `call_id`'s `tool_call`.
    fn release(&mut self, call_id: &str) {
        let (ready, waiting) =
            std::mem::take(&mut self.waiting).into_iter().partition(|(id, _)| id == call_id);
        self.waiting = waiting;
        for (_, item) in ready {
            self.handed(item);
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
        // A child's call is asked about on the child's session (`subagents.rs`).
        let session = self.children.session_of(&call_id).unwrap_or(&self.session.id).to_string();
        let request =
            RequestPermissionRequest::new(session, ToolCallUpdate::new(call_id, ask.fields), ask.options)
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

    /// A compaction: a `compaction_update` (completed, with the summary and the counts in
    /// `_meta`) when the client shows them, else a line of the answer for `/compact` and of the
    /// agent's thoughts for an automatic one. A waiting `/compact` ends with it.
    fn compacted(&mut self, c: &Compaction) {
        let line = format!(
            "Compacted the conversation: {} messages summarised by {} (~{} → ~{} tokens).",
            c.messages_summarized, c.model, c.tokens_before, c.tokens_after
        );
        let waiter = {
            let mut turns = self.session.turns();
            match turns.waiter.take() {
                Some(Waiter::Compact { reply }) => Some(reply),
                other => {
                    turns.waiter = other;
                    None
                }
            }
        };
        if self.shows.compaction {
            self.compactions += 1;
            let summary = self.session.handle.history().into_iter().find_map(|turn| match turn {
                Turn::Summary(s) => Some(s.summary),
                _ => None,
            });
            let meta = json!({COMPACTION_META: {
                "trigger": c.trigger.as_str(),
                "tokensBefore": c.tokens_before,
                "tokensAfter": c.tokens_after,
                "messagesSummarized": c.messages_summarized,
                "messagesKept": c.messages_kept,
                "model": c.model,
                "message": line,
            }});
            let update = CompactionUpdate::new(
                format!("compaction-{}", self.compactions),
                CompactionStatus::Completed,
            )
            .summary(vec![text(summary.unwrap_or_else(|| line.clone()))])
            .meta(meta.as_object().cloned().unwrap_or_default());
            self.update(SessionUpdate::CompactionUpdate(update));
        } else if waiter.is_some() {
            self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(line))));
        } else {
            self.update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(format!("{line}\n\n")))));
        }
        if let Some(reply) = waiter {
            let _ = reply.send(Ok(StopReason::EndTurn));
        }
    }

    /// Sends what `event` means for the client; `true` once the session ended.
    fn event(&mut self, event: Event) -> bool {
        if let Some(agent) = &event.agent {
            if self.shows.subagents {
                let started = match &event.data {
                    EventData::ToolCallStart(call) => Some(call.call_id.clone()),
                    _ => None,
                };
                self.children.event(&self.wire, agent, event.data, &self.cwd);
                if let Some(call_id) = started {
                    self.last_started = Some(call_id.clone());
                    self.release(&call_id);
                }
            }
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
                self.finish = FinishReason::Stop;
                if !self.session.titled.swap(true, Ordering::SeqCst) {
                    let title = title_of(&input.content);
                    self.update(SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(title)));
                }
            }
            EventData::AssistantTextEnd(end) => self.finish = end.finish_reason,
            EventData::ToolCallStart(call) => {
                self.calls.insert(call.call_id.clone(), Call::default());
                self.children.forget(&call.call_id);
                self.last_started = Some(call.call_id.clone());
                self.update(SessionUpdate::ToolCall(started(call, &self.cwd)));
            }
            EventData::ToolCallOutputDelta(d) => {
                let call = self.calls.entry(d.call_id.clone()).or_default();
                call.output.push_str(&d.delta);
                let update = output_so_far(d.call_id, &call.output);
                self.update(SessionUpdate::ToolCallUpdate(update));
            }
            EventData::ToolCallEnd(end) => {
                let call = self.calls.remove(&end.call_id).unwrap_or_default();
                let mut content = call.diffs;
                content.extend(call.terminal);
                self.update(SessionUpdate::ToolCallUpdate(ended(end, content)));
            }
            EventData::ConfigChanged(change) => {
                {
                    let mut turns = self.session.turns();
                    if std::mem::take(&mut turns.cancel_marker) {
                        turns.cancelled();
                    }
                }
                let config = modes::Current {
                    approval: change.approval,
                    model: change.model,
                    effort: change.reasoning_effort,
                    provider: self.session.provider,
                };
                if self.config != config {
                    if self.config.approval != config.approval {
                        let mode = modes::mode_of(config.approval);
                        self.update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode)));
                    }
                    let options = modes::config_options(&config);
                    self.update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)));
                }
                self.config = config;
            }
            EventData::Compaction(c) => self.compacted(&c),
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
                if self.shows.notices {
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
                    let stop = stop_reason(end.reason, &self.finish, &error);
                    drop(turns);
                    match (stop, last_input(&self.session.handle.history())) {
                        // ACP: a refused prompt and what came after it are not part of the next
                        // one. The history is cut back before the prompt answers.
                        (Ok(StopReason::Refusal), Some(mark)) => {
                            let handle = self.session.handle.clone();
                            tokio::spawn(async move {
                                if let Err(e) = handle.rewind(mark).await {
                                    tracing::warn!("the refused input stays in the history: {e}");
                                }
                                let _ = reply.send(Ok(StopReason::Refusal));
                            });
                        }
                        (stop, _) => {
                            let _ = reply.send(stop);
                        }
                    }
                }
            }
            EventData::SessionEnd(_) => return true,
            _ => {}
        }
        false
    }
}

/// Where the last user input of `history` is.
fn last_input(history: &[Turn]) -> Option<HistoryMark> {
    history.iter().enumerate().rev().find_map(|(index, turn)| match turn {
        Turn::User(t) => Some(HistoryMark { index, timestamp: t.timestamp }),
        _ => None,
    })
}

/// The ACP stop reason of a processing cycle's end (`finish`: why the model stopped its last
/// answer); an error is the prompt's error.
fn stop_reason(reason: EndReason, finish: &FinishReason, text: &str) -> Result<StopReason, String> {
    match reason {
        EndReason::Completed if *finish == FinishReason::Length => Ok(StopReason::MaxTokens),
        EndReason::Completed if *finish == FinishReason::ContentFilter => Ok(StopReason::Refusal),
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
