//! The per-session event pump: turns a session's events into `agentls/event`, `$/progress`,
//! plain-client messages and transcript records, and sends review and permission questions
//! after the events before them.
//!
//! Invariants:
//! - One pump per session; it forwards every event in order to a plugin client and never
//!   drops one. Plain clients get no `agentls/event`: progress and messages instead.
//! - Deltas queued behind a delta are merged into it (a delta is a piece of text: the
//!   concatenation is the same); a client that asked for a pace gets at most one per interval.
//! - A session task that dies without `session_end` (a panic) is reported as an `error` event
//!   and removed; the server keeps serving.
//! - The session writes its own turns to the transcript as they happen; the pump adds the end of
//!   every processing cycle (`turn_end`) and the subagents' histories before its `processing_end`
//!   is forwarded.
//! - A subagent's events (marked with `agent`) are forwarded as they are and get their own tool
//!   progress, but never end the session's turn, answer or pump; a review or permission question
//!   of a subagent's call carries its `agent`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tower_lsp_server::ls_types::notification::Progress;
use tower_lsp_server::ls_types::request::{ShowDocument, WorkDoneProgressCreate};
use tower_lsp_server::ls_types::{
    MessageType, ProgressParams, ProgressParamsValue, ProgressToken, ShowDocumentParams, WorkDoneProgress,
    WorkDoneProgressBegin, WorkDoneProgressCreateParams, WorkDoneProgressEnd,
};

use super::convert;
use super::port::Announcement;
use super::protocol::{
    AgentParams, EventNotification, EventParams, PermissionNotification, ReviewNotification, ReviewParams,
};
use super::registry::LspSession;
use super::state::ServerState;
use crate::session::{ErrorData, Event, EventData, EventKind, TranscriptSink};

/// A plain client's answer longer than this (lines or characters) is also opened as a document.
const LONG_ANSWER_LINES: usize = 12;
const LONG_ANSWER_CHARS: usize = 1200;

/// The per-session event pump.
pub(super) struct Pump {
    state: Arc<ServerState>,
    session: Arc<LspSession>,
    transcript: Option<Arc<dyn TranscriptSink>>,
    turn_token: Option<String>,
    tool_tokens: HashMap<String, String>,
    turns: u64,
    /// Tool calls started and not yet ended, with the strings of their arguments: a review is
    /// attributed to the call whose arguments name its files (calls run in parallel).
    running: Vec<RunningCall>,
    /// The answer text of the current cycle (for plain clients).
    answer: String,
    /// The client's `deltaIntervalMs`, and when the last delta went out.
    delta_interval: std::time::Duration,
    last_delta: Option<tokio::time::Instant>,
    ended: bool,
}

impl Pump {
    pub(super) fn new(
        state: Arc<ServerState>,
        session: Arc<LspSession>,
        transcript: Option<Arc<dyn TranscriptSink>>,
    ) -> Self {
        let delta_interval = state.profile().delta_interval;
        Self {
            state,
            session,
            transcript,
            turn_token: None,
            tool_tokens: HashMap::new(),
            turns: 0,
            running: Vec::new(),
            answer: String::new(),
            delta_interval,
            last_delta: None,
            ended: false,
        }
    }

    pub(super) async fn run(
        mut self,
        mut events: UnboundedReceiver<Event>,
        mut questions: UnboundedReceiver<Announcement>,
    ) {
        // An event taken from the queue while merging deltas, handled next.
        let mut held: Option<Event> = None;
        loop {
            let event = match held.take() {
                Some(event) => event,
                None => tokio::select! {
                    biased;
                    event = events.recv() => match event {
                        Some(event) => event,
                        None => break,
                    },
                    Some(question) = questions.recv() => {
                        self.announce(question, &mut events).await;
                        continue;
                    }
                },
            };
            if is_delta(&event) {
                // A plugin that asked for a pace gets at most one delta per interval: wait for
                // the rest of it, then merge what came meanwhile.
                if let Some(last) = self.last_delta.filter(|_| !self.delta_interval.is_zero()) {
                    tokio::time::sleep_until(last + self.delta_interval).await;
                }
                self.last_delta = Some(tokio::time::Instant::now());
            }
            let (event, next) = merge_queued_deltas(event, &mut events);
            held = next;
            self.handle(event).await;
        }
        self.finish().await;
    }

    /// Sends a question to the plugin client after every event emitted before it (its call's
    /// `tool_call_start`).
    async fn announce(&mut self, question: Announcement, events: &mut UnboundedReceiver<Event>) {
        while let Ok(event) = events.try_recv() {
            self.handle(event).await;
        }
        match question {
            Announcement::Review(mut review) => {
                if let Some(call) = self.call_of(&review) {
                    review.call_id = Some(call.id.clone());
                    review.agent = call.agent.clone();
                }
                self.state.outbound.notify::<ReviewNotification>(review).await;
            }
            Announcement::Permission(mut permission) => {
                let asking = self.running.iter().rev().find(|c| c.id == permission.call_id);
                permission.agent = asking.and_then(|c| c.agent.clone());
                self.state.outbound.notify::<PermissionNotification>(permission).await;
            }
        }
    }

    /// The running call a review belongs to: the first not yet reviewed whose arguments name
    /// one of its files, else the most recent one.
    fn call_of(&mut self, review: &ReviewParams) -> Option<&RunningCall> {
        let names: Vec<String> = review
            .files
            .iter()
            .flat_map(|f| [f.path.as_str(), f.uri.as_str()])
            .map(|name| match url::Url::parse(name).ok().and_then(|u| u.to_file_path().ok()) {
                Some(path) => path.display().to_string(),
                None => name.to_string(),
            })
            .filter(|name| !name.is_empty())
            .collect();
        let names_file = |call: &RunningCall| {
            call.strings.iter().any(|s| names.iter().any(|n| mentions(s, n) || mentions(n, s)))
        };
        let index = self
            .running
            .iter()
            .position(|c| !c.reviewed && names_file(c))
            .or_else(|| self.running.iter().rposition(|c| !c.reviewed))
            .or_else(|| self.running.len().checked_sub(1))?;
        let call = &mut self.running[index];
        call.reviewed = true;
        Some(call)
    }

    async fn handle(&mut self, event: Event) {
        if !event.is_own() {
            return self.handle_subagent(event).await;
        }
        let kind = event.kind();
        // Stored before the client hears of the end, so a client that sees `processing_end`
        // finds the turn's end and its subagents in the transcript (the session wrote the turns
        // themselves as they happened).
        if matches!(kind, EventKind::ProcessingEnd | EventKind::SessionEnd | EventKind::Compaction) {
            self.persist(&event.data);
        }
        // Progress ends and a plain client's answer go out before the event that ends them, so
        // a client that has seen `processing_end` has seen everything of the cycle; a begin
        // follows its event (creating the token is a round trip).
        if matches!(kind, EventKind::ToolCallEnd | EventKind::ProcessingEnd | EventKind::SessionEnd) {
            self.progress(&event).await;
            self.plain_client(&event).await;
            self.forward(&event).await;
        } else {
            self.forward(&event).await;
            self.progress(&event).await;
            self.plain_client(&event).await;
        }
        if kind == EventKind::SessionEnd {
            self.ended = true;
        }
    }

    /// A subagent's event: forwarded, with progress for its tool calls (their tokens name the
    /// subagent's session, so they never meet the parent's).
    async fn handle_subagent(&mut self, event: Event) {
        let agent = event.agent.as_ref().map(AgentParams::from);
        let session = agent.as_ref().map_or(self.session.id.as_str(), |a| a.session_id.as_str()).to_string();
        match &event.data {
            EventData::ToolCallStart(call) => {
                self.forward(&event).await;
                self.start_call(&session, call, agent).await;
            }
            EventData::ToolCallEnd(end) => {
                self.end_call(&session, &end.call_id, end.status.as_str()).await;
                self.forward(&event).await;
            }
            EventData::Error(error) if !self.state.profile().plugin => {
                let name = agent.map_or_else(String::new, |a| format!(" ({})", a.agent_id));
                self.state
                    .outbound
                    .tell(MessageType::ERROR, format!("agentls{name}: {}", error.message))
                    .await;
            }
            _ => self.forward(&event).await,
        }
    }

    async fn start_call(
        &mut self,
        session: &str,
        call: &crate::session::ToolCallStart,
        agent: Option<AgentParams>,
    ) {
        let mut strings = Vec::new();
        string_leaves(&call.arguments, &mut strings);
        let key = format!("{session}/{}", call.call_id);
        self.running.push(RunningCall {
            id: call.call_id.clone(),
            key: key.clone(),
            strings,
            reviewed: false,
            agent,
        });
        let token = format!("agentls/tool/{key}");
        let title = if call.summary.is_empty() { call.tool_name.clone() } else { call.summary.clone() };
        if let Some(token) = self.begin(token, title, None).await {
            self.tool_tokens.insert(key, token);
        }
    }

    async fn end_call(&mut self, session: &str, call_id: &str, status: &str) {
        let key = format!("{session}/{call_id}");
        self.running.retain(|c| c.key != key);
        if let Some(token) = self.tool_tokens.remove(&key) {
            self.end(&token, Some(status.to_string())).await;
        }
    }

    async fn finish(mut self) {
        if !self.ended {
            // The session task died without ending (a panic): say so and keep serving.
            let id = self.session.id.clone();
            let cause = self.session.handle.failure().unwrap_or_else(|| "no cause recorded".into());
            tracing::error!(session = %id, "the session task stopped unexpectedly: {cause}");
            let event = Event::new(
                id.as_str().into(),
                EventData::Error(ErrorData {
                    message: format!(
                        "the session stopped unexpectedly (internal error: {cause}); start a new session or resume this one"
                    ),
                    fatal: true,
                    error: None,
                }),
            );
            self.forward(&event).await;
            self.end_all_progress("stopped").await;
            self.persist(&event.data);
            self.state.reviews.cancel_session(&id);
            self.state.permissions.cancel_session(&id);
        }
        self.state.sessions.remove(&self.session.id);
    }

    /// Session events go to plugin clients only: a plain client has no use for them, and some
    /// (eglot 1.9) break on a stream of unknown notifications.
    async fn forward(&self, event: &Event) {
        if !self.state.profile().plugin {
            return;
        }
        self.state.outbound.notify::<EventNotification>(EventParams::of(event)).await;
    }

    /// Creates a progress token with the client and begins it; `None` when the client has no
    /// progress support or refused.
    async fn begin(&self, token: String, title: String, message: Option<String>) -> Option<String> {
        if !self.state.profile().work_done_progress {
            return None;
        }
        let create = WorkDoneProgressCreateParams { token: ProgressToken::String(token.clone()) };
        self.state.outbound.when_quiet().await;
        if let Err(e) = self.state.outbound.request::<WorkDoneProgressCreate>(create).await {
            tracing::debug!("no progress for {token}: {e}");
            return None;
        }
        self.state.sessions.track_progress(&token, &self.session.id);
        self.send_progress(
            &token,
            WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title,
                cancellable: Some(true),
                message,
                percentage: None,
            }),
        )
        .await;
        Some(token)
    }

    async fn end(&self, token: &str, message: Option<String>) {
        self.state.sessions.untrack_progress(token);
        self.send_progress(token, WorkDoneProgress::End(WorkDoneProgressEnd { message })).await;
    }

    async fn send_progress(&self, token: &str, value: WorkDoneProgress) {
        let params = ProgressParams {
            token: ProgressToken::String(token.to_string()),
            value: ProgressParamsValue::WorkDone(value),
        };
        self.state.outbound.when_quiet().await;
        self.state.outbound.notify::<Progress>(params).await;
    }

    async fn end_all_progress(&mut self, message: &str) {
        let tools: Vec<String> = self.tool_tokens.drain().map(|(_, t)| t).collect();
        for token in tools {
            self.end(&token, Some(message.to_string())).await;
        }
        if let Some(token) = self.turn_token.take() {
            self.end(&token, Some(message.to_string())).await;
        }
    }

    async fn progress(&mut self, event: &Event) {
        match &event.data {
            EventData::UserInput(input) => {
                self.turns += 1;
                if self.turn_token.is_none() {
                    let token = format!("agentls/turn/{}/{}", self.session.id, self.turns);
                    let message = one_line(&input.content, 80);
                    self.turn_token = self.begin(token, "agentls".into(), Some(message)).await;
                }
            }
            EventData::ToolCallStart(call) => {
                let session = self.session.id.clone();
                self.start_call(&session, call, None).await;
            }
            EventData::ToolCallEnd(end) => {
                let session = self.session.id.clone();
                self.end_call(&session, &end.call_id, end.status.as_str()).await;
            }
            EventData::ProcessingEnd(end) => {
                self.end_all_progress(end.reason.as_str()).await;
            }
            EventData::SessionEnd(_) => self.end_all_progress("done").await,
            _ => {}
        }
    }

    /// Plain clients see the final answer as a message (full text in the log), and errors,
    /// compactions and prunings as messages too.
    async fn plain_client(&mut self, event: &Event) {
        if self.state.profile().plugin {
            return;
        }
        match &event.data {
            EventData::AssistantTextDelta(d) => self.answer.push_str(&d.delta),
            EventData::ProcessingEnd(end) => {
                let answer =
                    if end.text.is_empty() { std::mem::take(&mut self.answer) } else { end.text.clone() };
                self.answer.clear();
                if !answer.trim().is_empty() {
                    self.show_answer(answer.trim()).await;
                }
            }
            EventData::Error(error) => {
                let message = format!("agentls: {}", error.message);
                self.state.outbound.tell(MessageType::ERROR, message).await;
            }
            // What happened to the conversation is never silent.
            EventData::Compaction(c) => {
                let message = format!(
                    "agentls: compacted the conversation ({}): {} earlier messages replaced by a summary, \
                     ~{} → ~{} tokens",
                    c.trigger.as_str(),
                    c.messages_summarized,
                    c.tokens_before,
                    c.tokens_after
                );
                self.state.outbound.tell(MessageType::INFO, message).await;
            }
            EventData::Warning(w) if w.turns_removed.is_some() => {
                self.state.outbound.tell(MessageType::WARNING, format!("agentls: {}", w.message)).await;
            }
            _ => {}
        }
    }

    /// Shows a plain client's user the whole answer: in a message, and a long one also as a
    /// document when the editor can open one (a message area is no place to read pages).
    async fn show_answer(&mut self, answer: &str) {
        let outbound = &self.state.outbound;
        outbound.log(MessageType::INFO, format!("agentls: {answer}")).await;
        let long = answer.lines().count() > LONG_ANSWER_LINES || answer.chars().count() > LONG_ANSWER_CHARS;
        if long
            && self.state.profile().show_document
            && let Some(path) = self.write_answer(answer)
            && let Some(uri) = convert::uri_of(&path)
        {
            let show =
                ShowDocumentParams { uri, external: Some(false), take_focus: Some(true), selection: None };
            outbound.when_quiet().await;
            match outbound.request::<ShowDocument>(show).await {
                Ok(result) if result.success => {
                    let first = one_line(answer.lines().next().unwrap_or_default(), 120);
                    let message =
                        format!("agentls: {first}\n(the whole answer is open in {})", path.display());
                    outbound.tell(MessageType::INFO, message).await;
                    return;
                }
                Ok(_) => tracing::debug!("the editor did not open the answer {}", path.display()),
                Err(e) => tracing::debug!("the editor did not open the answer {}: {e}", path.display()),
            }
        }
        outbound.tell(MessageType::INFO, format!("agentls: {answer}")).await;
    }

    /// Writes an answer to `<data dir>/answers/` (the temp dir without one) for showing.
    fn write_answer(&self, answer: &str) -> Option<PathBuf> {
        let dir = self.state.options.data_dir.clone().unwrap_or_else(std::env::temp_dir).join("answers");
        let path = dir.join(format!("agentls-answer-{}-{}.md", self.session.id, self.turns));
        match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, format!("{answer}\n"))) {
            Ok(()) => Some(path),
            Err(e) => {
                tracing::warn!("cannot write the answer to {}: {e}", path.display());
                None
            }
        }
    }

    /// Stores the subagents' histories and, at `processing_end`, the end of the input.
    fn persist(&mut self, data: &EventData) {
        let Some(transcript) = &self.transcript else { return };
        if let EventData::ProcessingEnd(end) = data {
            let reason = serde_json::to_value(end.reason).ok();
            transcript.input_ended(reason.as_ref().and_then(|v| v.as_str()).unwrap_or("ended"));
        }
        transcript.agents_changed(&self.session.handle.agents());
    }
}

/// Merges the deltas already queued behind `event` into it, when it is a delta: text or
/// reasoning deltas of the answer, or output deltas of one command. Only what is queued is
/// merged, so nothing waits; a client that keeps up gets every delta as it came, one that falls
/// behind gets fewer, longer ones (a delta is a piece of text: the concatenation is the same).
/// Returns the (merged) event and the first queued event that did not merge.
fn merge_queued_deltas(mut event: Event, queue: &mut UnboundedReceiver<Event>) -> (Event, Option<Event>) {
    if event.data.delta_mut().is_none() {
        return (event, None);
    }
    let mut next = None;
    while let Ok(mut queued) = queue.try_recv() {
        if !event.data.continued_by(&queued.data) {
            next = Some(queued);
            break;
        }
        if let (Some(text), Some(more)) = (event.data.delta_mut(), queued.data.delta_mut()) {
            text.push_str(more);
        }
    }
    (event, next)
}

fn is_delta(event: &Event) -> bool {
    matches!(
        event.kind(),
        EventKind::AssistantTextDelta | EventKind::AssistantReasoningDelta | EventKind::ToolCallOutputDelta
    )
}

/// A tool call in flight (the session's or a subagent's), for attributing reviews.
struct RunningCall {
    id: String,
    /// `<session id>/<call id>`: unique across the session's tree.
    key: String,
    /// The subagent that made it.
    agent: Option<AgentParams>,
    /// Every string in its arguments (paths, patch text).
    strings: Vec<String>,
    /// A review was already attributed to it.
    reviewed: bool,
}

/// `text` contains the path `name` as a whole path: after a start, a space, `/` or `:`, and
/// before an end or whitespace (`src/a.rs` is in `*** Update File: src/a.rs`, not in
/// `src/data.rs`).
fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == '/' || c == ':')
            && after.is_none_or(char::is_whitespace)
    })
}

fn string_leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| string_leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| string_leaves(v, out)),
        _ => {}
    }
}

/// The first line of `text`, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.trim().replace(['\n', '\r'], " ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::session::{Delta, OutputDelta, Warning};

    fn text(delta: &str) -> Event {
        Event::new("s".into(), EventData::AssistantTextDelta(Delta { delta: delta.into() }))
    }

    fn output(call_id: &str, delta: &str) -> Event {
        let data = OutputDelta { call_id: call_id.into(), delta: delta.into() };
        Event::new("s".into(), EventData::ToolCallOutputDelta(data))
    }

    #[test]
    fn queued_deltas_merge_until_another_kind_of_event() {
        let (tx, mut queue) = tokio::sync::mpsc::unbounded_channel();
        for piece in ["b", "c"] {
            tx.send(text(piece)).unwrap();
        }
        tx.send(output("t1", "x")).unwrap();
        tx.send(text("d")).unwrap();
        let (merged, next) = merge_queued_deltas(text("a"), &mut queue);
        assert_eq!(merged.data, text("abc").data);
        assert_eq!(next.map(|e| e.data), Some(output("t1", "x").data), "the next event is kept, in order");
        let (alone, none) = merge_queued_deltas(queue.try_recv().unwrap(), &mut queue);
        assert_eq!((alone.data, none.is_none()), (text("d").data, true), "nothing queued: as it came");
    }

    #[test]
    fn output_deltas_merge_only_within_one_call() {
        let (tx, mut queue) = tokio::sync::mpsc::unbounded_channel();
        tx.send(output("a", "2")).unwrap();
        tx.send(output("b", "x")).unwrap();
        let (merged, next) = merge_queued_deltas(output("a", "1"), &mut queue);
        assert_eq!(merged.data, output("a", "12").data);
        assert_eq!(next.map(|e| e.data), Some(output("b", "x").data));
        let warning = EventData::Warning(Warning { message: "m".into(), ..Warning::default() });
        let (same, none) = merge_queued_deltas(Event::new("s".into(), warning.clone()), &mut queue);
        assert_eq!((same.data, none.is_none()), (warning, true), "other events are untouched");
    }

    #[test]
    fn a_path_is_mentioned_only_as_a_whole_path() {
        assert!(mentions("*** Begin Patch\n*** Update File: src/a.rs\n@@", "src/a.rs"));
        assert!(mentions("/w/src/a.rs", "src/a.rs"));
        assert!(mentions("src/a.rs", "src/a.rs"));
        assert!(!mentions("*** Update File: src/data.rs", "a.rs"));
        assert!(!mentions("src/a.rs.bak", "src/a.rs"));
    }
}
