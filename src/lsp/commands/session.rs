//! Session commands: `newSession`, `prompt`, `steer`, `followUp`, `cancel`, `closeSession`,
//! `listSessions`, `resumeSession`, `history`, `configure`, `compact`. Each returns at once; turns
//! run in the session's task.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;

use super::Handler;
use super::args::{invalid_field, request_failed, root_of};
use crate::checkpoint::{Checkpoints, TurnRecord, UndoState};
use crate::lsp::assembly::{self, NewSession as NewSessionRequest};
use crate::lsp::protocol::{
    Cancel, CloseSession, Compact, CompactionQueued, Configure, ConfigureParams, FollowUp, History,
    HistoryCall, HistoryEntry, HistoryResult, InputParams, InputQueued, ListSessions, ListSessionsParams,
    NewSession, NewSessionParams, Prompt, PromptContext, PromptParams, ResumeSession, SessionClosed,
    SessionCreated, SessionInfo, SessionList, SessionParams, SessionResumed, SessionStatus, Steer,
    StoredSession, TurnCancelled,
};
use crate::lsp::registry::LspSession;
use crate::lsp::state::ServerState;
use crate::lsp::{convert, prompt_context};
use crate::session::{ConfigChange, Turn, summarize};
use crate::store::history as stored_history;

pub(super) fn session(state: &ServerState, id: &str) -> Result<Arc<LspSession>> {
    state.sessions.get(id).ok_or_else(|| {
        invalid_field(
            "sessionId",
            "the id of an open session (agentls.listSessions shows them; resume a stored one)",
        )
    })
}

fn created(session: &LspSession) -> SessionCreated {
    SessionCreated {
        session_id: session.id.clone(),
        profile: session.profile,
        model: session.handle.config().model,
    }
}

/// Starts a session; its failure (configuration, provider) is the command's error, whole.
async fn start(state: &Arc<ServerState>, request: NewSessionRequest) -> Result<Arc<LspSession>> {
    assembly::create(state, request).await.map_err(|e| request_failed(e.to_string()))
}

impl Handler for NewSession {
    async fn handle(state: &Arc<ServerState>, params: NewSessionParams) -> Result<SessionCreated> {
        let request = NewSessionRequest {
            profile: params.profile,
            model: params.model,
            root: root_of(params.root_uri.as_deref())?,
            ..Default::default()
        };
        let session = start(state, request).await?;
        Ok(created(&session))
    }
}

/// The prompt text with the editor context (a file and optionally a range of it).
async fn with_context(state: &ServerState, text: String, context: Option<PromptContext>) -> Result<String> {
    let Some(context) = context else { return Ok(text) };
    let path = convert::parse_uri(&context.uri)
        .and_then(|u| convert::path_of(&u))
        .ok_or_else(|| invalid_field("context.uri", "a file: URI"))?;
    let display = state.shown_path(&path);
    let buffer = state.shown_text(&path).await;
    Ok(prompt_context::with_context(&text, &display, &buffer, context.range, state.profile().encoding))
}

impl Handler for Prompt {
    async fn handle(state: &Arc<ServerState>, params: PromptParams) -> Result<InputQueued> {
        let context_path = params
            .context
            .as_ref()
            .and_then(|c| convert::parse_uri(&c.uri))
            .and_then(|uri| convert::path_of(&uri));
        let session = match &params.session_id {
            Some(id) => session(state, id)?,
            None => {
                // Without a session: the latest one of the workspace folder holding the context
                // file (or of any folder), else a new one rooted there.
                let root = context_path.as_ref().and_then(|path| {
                    state
                        .roots()
                        .into_iter()
                        .filter(|r| path.starts_with(r))
                        .max_by_key(|r| r.components().count())
                });
                let latest = state
                    .sessions
                    .all()
                    .into_iter()
                    .rev()
                    .find(|s| root.as_ref().is_none_or(|r| s.root == *r));
                match latest {
                    Some(s) => s,
                    None => start(state, NewSessionRequest { root, ..Default::default() }).await?,
                }
            }
        };
        let text = with_context(state, params.text, params.context).await?;
        // Instruction files are re-read for every new input, so an edit on disk counts even
        // before the watcher reports it.
        session.handle.reload_project_docs();
        session.handle.submit_with_context(text, context_path.into_iter().collect());
        Ok(InputQueued { session_id: session.id.clone() })
    }
}

impl Handler for Steer {
    async fn handle(state: &Arc<ServerState>, params: InputParams) -> Result<InputQueued> {
        let session = session(state, &params.session_id)?;
        session.handle.steer(params.text);
        Ok(InputQueued { session_id: session.id.clone() })
    }
}

impl Handler for FollowUp {
    async fn handle(state: &Arc<ServerState>, params: InputParams) -> Result<InputQueued> {
        let session = session(state, &params.session_id)?;
        session.handle.reload_project_docs();
        session.handle.follow_up(params.text);
        Ok(InputQueued { session_id: session.id.clone() })
    }
}

impl Handler for Cancel {
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<TurnCancelled> {
        let session = session(state, &params.session_id)?;
        state.cancel_turn(&session);
        Ok(TurnCancelled { session_id: session.id.clone(), cancelled: true })
    }
}

impl Handler for CloseSession {
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<SessionClosed> {
        let session = session(state, &params.session_id)?;
        state.cancel_turn(&session);
        session.handle.close();
        Ok(SessionClosed { session_id: session.id.clone(), closed: true })
    }
}

impl Handler for ListSessions {
    async fn handle(state: &Arc<ServerState>, _: ListSessionsParams) -> Result<SessionList> {
        let open = state.sessions.all();
        let mut sessions: Vec<SessionInfo> = open.iter().map(|s| s.info()).collect();
        if let Some(store) = &state.transcripts {
            match store.list() {
                Ok(stored) => {
                    let closed =
                        stored.into_iter().filter(|t| !open.iter().any(|s| s.id == t.header.session_id));
                    sessions.extend(closed.map(|t| SessionInfo {
                        session_id: t.header.session_id,
                        root_uri: convert::uri_of(&t.header.root).map(|u| u.as_str().to_string()),
                        profile: t.header.profile,
                        model: t.header.model,
                        open: false,
                        status: SessionStatus::Stored(StoredSession {
                            created: t.header.created,
                            title: t.title,
                        }),
                    }))
                }
                Err(e) => tracing::warn!("cannot list stored sessions: {e}"),
            }
        }
        Ok(SessionList { sessions })
    }
}

/// What a client shows of `turns`; a user input is named by the id of the checkpointed turn it
/// started (`recorded`, found by its timestamp).
fn history_entries(turns: &[Turn], cwd: &std::path::Path, recorded: &[TurnRecord]) -> Vec<HistoryEntry> {
    let mut out = Vec::new();
    for turn in turns {
        match turn {
            Turn::User(t) => out.push(HistoryEntry::User {
                text: t.content.clone(),
                timestamp: t.timestamp.to_rfc3339(),
                turn_id: recorded.iter().find(|r| r.user_timestamp == t.timestamp).map(|r| r.id),
            }),
            Turn::Steering(t) => out.push(HistoryEntry::Steering {
                text: t.content.clone(),
                timestamp: t.timestamp.to_rfc3339(),
            }),
            Turn::System(_) | Turn::Instructions(_) => {}
            Turn::Summary(s) => out.push(HistoryEntry::Summary {
                text: s.summary.clone(),
                turns_summarized: s.turns_summarized,
                timestamp: s.timestamp.to_rfc3339(),
            }),
            Turn::Assistant(a) => out.push(HistoryEntry::Assistant {
                text: a.content.clone(),
                reasoning: a.reasoning.clone(),
                tool_calls: a
                    .tool_calls
                    .iter()
                    .map(|c| HistoryCall {
                        call_id: c.id.clone(),
                        tool_name: c.name.clone(),
                        summary: summarize(&c.name, &c.arguments, cwd),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
                timestamp: a.timestamp.to_rfc3339(),
            }),
            Turn::ToolResults(r) => out.extend(r.results.iter().map(|result| HistoryEntry::ToolResult {
                call_id: result.call_id.clone(),
                tool_name: result.name.clone(),
                output: result.content.clone(),
                is_error: result.is_error,
                timestamp: r.timestamp.to_rfc3339(),
            })),
        }
    }
    out
}

impl Handler for History {
    /// The conversation of an open or stored session.
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<HistoryResult> {
        let id = params.session_id;
        let (turns, root) = match state.sessions.get(&id) {
            Some(open) => (open.handle.history(), open.root.clone()),
            None => {
                let transcript =
                    state.transcripts.as_ref().and_then(|store| store.load(&id).ok()).ok_or_else(|| {
                        invalid_field(
                            "sessionId",
                            "the id of an open or stored session (agentls.listSessions shows them)",
                        )
                    })?;
                (stored_history(&transcript.records), transcript.header.root.clone())
            }
        };
        let recorded = match state.sessions.get(&id).and_then(|open| open.handle.checkpoints()) {
            Some(checkpoints) => checkpoints.turns(),
            None => state
                .options
                .data_dir
                .as_deref()
                .map(|dir| Checkpoints::stored_turns(dir, &id))
                .unwrap_or_default(),
        };
        let entries = history_entries(&turns, &root, &recorded);
        let UndoState { undone, redoable } = UndoState::of(&recorded);
        Ok(HistoryResult { session_id: id, entries, undone, redoable })
    }
}

impl Handler for ResumeSession {
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<SessionResumed> {
        let id = params.session_id;
        if let Some(open) = state.sessions.get(&id) {
            return Ok(SessionResumed { session: created(&open), resumed: false, turns: None });
        }
        let store = state
            .transcripts
            .as_ref()
            .ok_or_else(|| request_failed("no data directory: sessions are not stored"))?;
        let transcript = store.load(&id).map_err(|e| match e {
            crate::store::StoreError::NotFound(_) | crate::store::StoreError::BadId(_) => {
                invalid_field("sessionId", "the id of a stored session (agentls.listSessions shows them)")
            }
            other => request_failed(other.to_string()),
        })?;
        let history = stored_history(&transcript.records);
        let turns = history.len();
        let profile = transcript.header.profile.parse().ok();
        let request = NewSessionRequest {
            id: Some(id),
            profile,
            model: Some(transcript.header.model.clone()),
            root: Some(transcript.header.root.clone()),
            history,
        };
        let session = start(state, request).await?;
        Ok(SessionResumed { session: created(&session), resumed: true, turns: Some(turns) })
    }
}

impl Handler for Compact {
    /// Queues a compaction after the current input; the outcome is a `compaction` event (or a
    /// `warning` when there is nothing to summarise).
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<CompactionQueued> {
        let session = session(state, &params.session_id)?;
        session.handle.compact();
        Ok(CompactionQueued { session_id: session.id.clone(), queued: true })
    }
}

impl Handler for Configure {
    async fn handle(state: &Arc<ServerState>, params: ConfigureParams) -> Result<SessionInfo> {
        let session = session(state, &params.session_id)?;
        session.handle.configure(ConfigChange {
            model: params.model,
            reasoning_effort: params.reasoning_effort.map(|setting| setting.0),
            approval: params.approval,
        });
        Ok(session.info())
    }
}
