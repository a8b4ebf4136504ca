//! Agent sessions hosted by the server: creation and resume, the registry, and the event pump
//! that turns each session's events into `agentls/event`, `$/progress`, plain-client messages
//! and transcript records.
//!
//! Invariants:
//! - Each session has one pump task; it forwards every event in order to a plugin client and
//!   never drops one. Plain clients get no `agentls/event`: progress and messages instead.
//! - A session task that dies without `session_end` (a panic) is reported as an `error` event
//!   and removed; the server keeps serving.
//! - Transcripts are flushed at the end of every processing cycle, before its `processing_end`
//!   is forwarded.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tower_lsp_server::ls_types::notification::Progress;
use tower_lsp_server::ls_types::request::{ShowDocument, WorkDoneProgressCreate};
use tower_lsp_server::ls_types::{
    MessageType, ProgressParams, ProgressParamsValue, ProgressToken, ShowDocumentParams, WorkDoneProgress,
    WorkDoneProgressBegin, WorkDoneProgressCreateParams, WorkDoneProgressEnd,
};

use super::convert;
use super::outbound::{EventNotification, PermissionNotification, ReviewNotification};
use super::permission::PermissionPolicy;
use super::port::{Announcement, LspEditorPort};
use super::server::ServerState;
use crate::config::{Config, LoadOptions, ShellPermission, resolve_provider};
use crate::exec::{LocalExecutionEnvironment, LocalOptions};
use crate::llm;
use crate::profiles::ProfileKind;
use crate::session::{self, Event, EventKind, SessionConfig, SessionHandle, SessionOptions, Turn};
use crate::store::{TranscriptHeader, TranscriptStore, TranscriptWriter};
use crate::tools::Tool;
use crate::tools::profiles::{ToolProfile, ToolSetOptions, profile_tools};
use crate::workspace::Workspace;

/// A plain client's answer longer than this (lines or characters) is also opened as a document.
const LONG_ANSWER_LINES: usize = 12;
const LONG_ANSWER_CHARS: usize = 1200;

/// One hosted session.
pub struct LspSession {
    pub id: String,
    pub root: PathBuf,
    pub profile: ProfileKind,
    pub handle: SessionHandle,
    pub port: Arc<LspEditorPort>,
}

impl LspSession {
    pub fn summary(&self) -> Value {
        let config = self.handle.config();
        json!({
            "sessionId": self.id,
            "rootUri": super::convert::uri_of(&self.root).map(|u| u.as_str().to_string()),
            "profile": self.profile.as_str(),
            "model": config.model,
            "reasoningEffort": config.reasoning_effort.map(|e| e.as_str()),
            "approval": config.approval,
            "state": self.handle.state().as_str(),
            "open": true,
        })
    }
}

/// Open sessions and the progress tokens that belong to them.
#[derive(Default)]
pub struct SessionRegistry {
    sessions: RwLock<Vec<Arc<LspSession>>>,
    /// Progress token → session id, for `window/workDoneProgress/cancel`.
    progress: Mutex<HashMap<String, String>>,
}

impl SessionRegistry {
    pub fn get(&self, id: &str) -> Option<Arc<LspSession>> {
        self.sessions.read().unwrap_or_else(|p| p.into_inner()).iter().find(|s| s.id == id).cloned()
    }

    /// Open sessions, oldest first.
    pub fn all(&self) -> Vec<Arc<LspSession>> {
        self.sessions.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn insert(&self, session: Arc<LspSession>) {
        self.sessions.write().unwrap_or_else(|p| p.into_inner()).push(session);
    }

    pub fn remove(&self, id: &str) {
        self.sessions.write().unwrap_or_else(|p| p.into_inner()).retain(|s| s.id != id);
    }

    pub fn session_of_progress(&self, token: &str) -> Option<String> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }

    fn track_progress(&self, token: &str, session: &str) {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_string(), session.to_string());
    }

    fn untrack_progress(&self, token: &str) {
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).remove(token);
    }
}

/// What `agentls.newSession` / `resumeSession` ask for.
#[derive(Debug, Default)]
pub struct NewSession {
    pub id: Option<String>,
    pub profile: Option<ProfileKind>,
    pub model: Option<String>,
    pub root: Option<PathBuf>,
    pub history: Vec<Turn>,
}

fn local_server_up() -> bool {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 11434));
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(300)).is_ok()
}

fn tools_for(profile: ProfileKind, state: &Arc<ServerState>) -> Vec<Arc<dyn Tool>> {
    let tool_profile = match profile {
        ProfileKind::OpenAi => ToolProfile::OpenAi,
        ProfileKind::Anthropic => ToolProfile::Anthropic,
        ProfileKind::Gemini => ToolProfile::Gemini,
    };
    let registry = profile_tools(tool_profile, &ToolSetOptions::default());
    let mut tools: Vec<Arc<dyn Tool>> = registry.names().iter().filter_map(|n| registry.get(n)).collect();
    tools.extend(state.options.extra_tools.iter().cloned());
    if state.profile().plugin {
        tools.push(Arc::new(super::diagnostics::DiagnosticsTool::new(Arc::downgrade(state))));
    }
    tools
}

/// Creates (or resumes) a session and starts its pump.
pub fn create(state: &Arc<ServerState>, request: NewSession) -> Result<Arc<LspSession>, String> {
    let root =
        match request.root {
            Some(root) => root,
            None => state.roots().into_iter().next().ok_or(
                "no workspace folder is open; open a folder or pass `rootUri` to agentls.newSession",
            )?,
        };
    let mut overrides = state.client_layer();
    if let Some(model) = &request.model {
        overrides.model = Some(model.clone());
    }
    let env = &state.options.env;
    let config =
        Config::load(env, LoadOptions { project_root: Some(root.clone()), user_file: None, overrides })
            .map_err(|e| e.to_string())?;
    let settings = resolve_provider(&config, env, local_server_up).map_err(|e| e.to_string())?;
    let model = settings.model.clone();
    let profile = request.profile.unwrap_or_else(|| ProfileKind::for_provider(settings.kind));
    let client = llm::Client::from_config(&config, settings).map_err(|e| e.to_string())?;
    let allow_outside = config.layer.allow_outside_workspace.unwrap_or(false);
    let workspace = Arc::new(Workspace::new(vec![root.clone()], state.documents.clone(), allow_outside));
    let mut local = LocalOptions::from_config(&config, &root);
    local.roots = vec![root.clone()];
    let exec_env = Arc::new(LocalExecutionEnvironment::with_options(local));
    let id = request.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let shell = config.shell();
    let policy = PermissionPolicy {
        mode: shell.permission.unwrap_or(ShellPermission::Ask),
        allow: shell.allow.unwrap_or_default(),
        root: root.clone(),
    };
    let (announce_tx, announcements) = tokio::sync::mpsc::unbounded_channel();
    let port = Arc::new(LspEditorPort::new(id.clone(), Arc::downgrade(state), policy, announce_tx));
    let resumed = !request.history.is_empty();
    let history_len = request.history.len();
    let (handle, events) = session::spawn(SessionOptions {
        id: Some(id.clone()),
        profile,
        client,
        env: exec_env,
        workspace,
        editor: port.clone(),
        config: SessionConfig::from_config(&config, model.clone()),
        cwd: root.clone(),
        history: request.history,
        tools: tools_for(profile, state),
    });
    let _ = port.handle.set(handle.clone());
    let transcript = state.transcripts.as_ref().and_then(|store| {
        let opened = if resumed {
            store.reopen(&id)
        } else {
            store.create(TranscriptHeader {
                session_id: id.clone(),
                root: root.clone(),
                profile: profile.as_str().into(),
                model: model.clone(),
                created: chrono::Utc::now().to_rfc3339(),
            })
        };
        opened.map_err(|e| tracing::warn!("session {id} will not be stored: {e}")).ok()
    });
    let session = Arc::new(LspSession { id: id.clone(), root, profile, handle, port });
    state.sessions.insert(session.clone());
    tracing::info!(session = %id, profile = profile.as_str(), model = %model, resumed, "session started");
    let pump = Pump {
        state: state.clone(),
        session: session.clone(),
        transcript,
        persisted: history_len,
        turn_token: None,
        tool_tokens: HashMap::new(),
        turns: 0,
        running: Vec::new(),
        answer: String::new(),
        delta_interval: state.profile().delta_interval,
        last_delta: None,
        ended: false,
    };
    tokio::spawn(pump.run(events, announcements));
    Ok(session)
}

/// Turns the history of a stored transcript back into turns.
pub fn history_from_records(records: &[Value]) -> Vec<Turn> {
    let mut turns = Vec::new();
    for record in records {
        match record.get("type").and_then(Value::as_str) {
            Some("turn") => {
                if let Some(turn) = record.get("turn").and_then(|t| serde_json::from_value(t.clone()).ok()) {
                    turns.push(turn);
                }
            }
            Some("snapshot") => {
                if let Some(all) = record.get("turns").and_then(|t| serde_json::from_value(t.clone()).ok()) {
                    turns = all;
                }
            }
            _ => {}
        }
    }
    turns
}

/// Cancels the session's turn and answers its pending reviews and permissions.
pub fn cancel_turn(state: &ServerState, session: &LspSession) {
    session.handle.cancel();
    state.reviews.cancel_session(&session.id);
    state.permissions.cancel_session(&session.id);
}

/// The per-session event pump.
struct Pump {
    state: Arc<ServerState>,
    session: Arc<LspSession>,
    transcript: Option<TranscriptWriter>,
    persisted: usize,
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
    async fn run(
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
                review["callId"] = json!(self.call_of(&review));
                self.state.outbound.notify::<ReviewNotification>(review).await;
            }
            Announcement::Permission(permission) => {
                self.state.outbound.notify::<PermissionNotification>(permission).await;
            }
        }
    }

    /// The running call a review belongs to: the first not yet reviewed whose arguments name
    /// one of its files, else the most recent one.
    fn call_of(&mut self, review: &Value) -> Option<String> {
        let files = review["files"].as_array().map(Vec::as_slice).unwrap_or_default();
        let names: Vec<String> = files
            .iter()
            .flat_map(|f| [&f["path"], &f["uri"]])
            .filter_map(Value::as_str)
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
        Some(call.id.clone())
    }

    async fn handle(&mut self, event: Event) {
        let kind = event.kind;
        // Stored before the client hears of the end, so a client that sees `processing_end`
        // finds the turn in the transcript.
        if matches!(kind, EventKind::ProcessingEnd | EventKind::SessionEnd) {
            self.persist();
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

    async fn finish(mut self) {
        if !self.ended {
            // The session task died without ending (a panic): say so and keep serving.
            let id = self.session.id.clone();
            let cause = self.session.handle.failure().unwrap_or_else(|| "no cause recorded".into());
            tracing::error!(session = %id, "the session task stopped unexpectedly: {cause}");
            let event = Event {
                session_id: id.clone(),
                kind: EventKind::Error,
                timestamp: chrono::Utc::now(),
                data: json!({
                    "message": format!(
                        "the session stopped unexpectedly (internal error: {cause}); start a new session or resume this one"
                    ),
                    "fatal": true,
                }),
            };
            self.forward(&event).await;
            self.end_all_progress("stopped").await;
            self.persist();
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
        self.state
            .outbound
            .notify::<EventNotification>(json!({
                "sessionId": event.session_id,
                "kind": event.kind,
                "timestamp": event.timestamp.to_rfc3339(),
                "data": event.data,
            }))
            .await;
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
        let text = |key: &str| event.data.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        match event.kind {
            EventKind::UserInput => {
                self.turns += 1;
                if self.turn_token.is_none() {
                    let token = format!("agentls/turn/{}/{}", self.session.id, self.turns);
                    let message = one_line(&text("content"), 80);
                    self.turn_token = self.begin(token, "agentls".into(), Some(message)).await;
                }
            }
            EventKind::ToolCallStart => {
                let call_id = text("call_id");
                let mut strings = Vec::new();
                string_leaves(&event.data["arguments"], &mut strings);
                self.running.push(RunningCall { id: call_id.clone(), strings, reviewed: false });
                let token = format!("agentls/tool/{}/{call_id}", self.session.id);
                let summary = text("summary");
                let title = if summary.is_empty() { text("tool_name") } else { summary };
                if let Some(token) = self.begin(token, title, None).await {
                    self.tool_tokens.insert(call_id, token);
                }
            }
            EventKind::ToolCallEnd => {
                let call_id = text("call_id");
                self.running.retain(|c| c.id != call_id);
                if let Some(token) = self.tool_tokens.remove(&call_id) {
                    self.end(&token, Some(text("status"))).await;
                }
            }
            EventKind::ProcessingEnd | EventKind::SessionEnd => {
                let reason = text("reason");
                self.end_all_progress(if reason.is_empty() { "done" } else { &reason }).await;
            }
            _ => {}
        }
    }

    /// Plain clients see the final answer as a message (full text in the log).
    async fn plain_client(&mut self, event: &Event) {
        if self.state.profile().plugin {
            return;
        }
        match event.kind {
            EventKind::AssistantTextDelta => {
                self.answer.push_str(event.data.get("delta").and_then(Value::as_str).unwrap_or_default());
            }
            EventKind::ProcessingEnd => {
                let answer = match event.data.get("text").and_then(Value::as_str) {
                    Some(text) if !text.is_empty() => text.to_string(),
                    _ => std::mem::take(&mut self.answer),
                };
                self.answer.clear();
                if !answer.trim().is_empty() {
                    self.show_answer(answer.trim()).await;
                }
            }
            EventKind::Error => {
                let message = event.data.get("message").and_then(Value::as_str).unwrap_or("error");
                self.state.outbound.tell(MessageType::ERROR, format!("agentls: {message}")).await;
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

    /// Appends the turns added since the last flush, then flushes.
    fn persist(&mut self) {
        let Some(writer) = self.transcript.as_mut() else { return };
        let history = self.session.handle.history();
        let result = if history.len() < self.persisted {
            // The history was pruned: store it whole.
            writer.append(&json!({"type": "snapshot", "turns": history}))
        } else {
            history[self.persisted..]
                .iter()
                .try_for_each(|turn| writer.append(&json!({"type": "turn", "turn": turn})))
        };
        match result.and_then(|()| writer.flush()) {
            Ok(()) => self.persisted = history.len(),
            Err(e) => tracing::warn!(session = %self.session.id, "cannot write the transcript: {e}"),
        }
    }
}

/// Merges the deltas already queued behind `event` into it, when it is a delta: text or
/// reasoning deltas of the answer, or output deltas of one command. Only what is queued is
/// merged, so nothing waits; a client that keeps up gets every delta as it came, one that falls
/// behind gets fewer, longer ones (a delta is a piece of text: the concatenation is the same).
/// Returns the (merged) event and the first queued event that did not merge.
fn merge_queued_deltas(mut event: Event, queue: &mut UnboundedReceiver<Event>) -> (Event, Option<Event>) {
    if !is_delta(&event) {
        return (event, None);
    }
    let Some(Value::String(mut text)) = event.data.get_mut("delta").map(Value::take) else {
        return (event, None);
    };
    let mut next = None;
    while let Ok(queued) = queue.try_recv() {
        let merges = queued.kind == event.kind && queued.data.get("call_id") == event.data.get("call_id");
        match queued.data.get("delta").and_then(Value::as_str) {
            Some(delta) if merges => text.push_str(delta),
            _ => {
                next = Some(queued);
                break;
            }
        }
    }
    event.data["delta"] = Value::String(text);
    (event, next)
}

fn is_delta(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::AssistantTextDelta | EventKind::AssistantReasoningDelta | EventKind::ToolCallOutputDelta
    )
}

/// A tool call in flight, for attributing reviews.
struct RunningCall {
    id: String,
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

/// The transcript store of a server (none when there is no data directory).
pub fn transcript_store(data_dir: Option<&std::path::Path>) -> Option<TranscriptStore> {
    data_dir.map(TranscriptStore::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, data: Value) -> Event {
        Event { session_id: "s".into(), kind, timestamp: chrono::Utc::now(), data }
    }

    #[test]
    fn queued_deltas_merge_until_another_kind_of_event() {
        let (tx, mut queue) = tokio::sync::mpsc::unbounded_channel();
        for piece in ["b", "c"] {
            tx.send(event(EventKind::AssistantTextDelta, json!({"delta": piece}))).unwrap();
        }
        tx.send(event(EventKind::ToolCallStart, json!({"call_id": "t1"}))).unwrap();
        tx.send(event(EventKind::AssistantTextDelta, json!({"delta": "d"}))).unwrap();
        let first = event(EventKind::AssistantTextDelta, json!({"delta": "a"}));
        let (merged, next) = merge_queued_deltas(first, &mut queue);
        assert_eq!((merged.kind, merged.data), (EventKind::AssistantTextDelta, json!({"delta": "abc"})));
        assert_eq!(next.map(|e| e.kind), Some(EventKind::ToolCallStart), "the next event is kept, in order");
        let (alone, none) = merge_queued_deltas(queue.try_recv().unwrap(), &mut queue);
        assert_eq!((alone.data, none.is_none()), (json!({"delta": "d"}), true), "nothing queued: as it came");
    }

    #[test]
    fn output_deltas_merge_only_within_one_call() {
        let (tx, mut queue) = tokio::sync::mpsc::unbounded_channel();
        tx.send(event(EventKind::ToolCallOutputDelta, json!({"call_id": "a", "delta": "2"}))).unwrap();
        tx.send(event(EventKind::ToolCallOutputDelta, json!({"call_id": "b", "delta": "x"}))).unwrap();
        let first = event(EventKind::ToolCallOutputDelta, json!({"call_id": "a", "delta": "1"}));
        let (merged, next) = merge_queued_deltas(first, &mut queue);
        assert_eq!(merged.data, json!({"call_id": "a", "delta": "12"}));
        assert_eq!(next.map(|e| e.data), Some(json!({"call_id": "b", "delta": "x"})));
        let other = event(EventKind::Warning, json!({"message": "m"}));
        let (same, none) = merge_queued_deltas(other, &mut queue);
        assert_eq!(
            (same.data, none.is_none()),
            (json!({"message": "m"}), true),
            "other events are untouched"
        );
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
