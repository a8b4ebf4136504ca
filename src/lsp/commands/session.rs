//! Session commands: `newSession`, `prompt`, `steer`, `followUp`, `cancel`, `closeSession`,
//! `listSessions`, `resumeSession`, `history`, `configure`, `compact`. Each returns at once; turns run in the
//! session's task.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;

use super::args::{CommandArgs, invalid_field, request_failed};
use crate::config::Approval;
use crate::llm::ReasoningEffort;
use crate::lsp::assembly::{self, NewSession};
use crate::lsp::registry::LspSession;
use crate::lsp::state::ServerState;
use crate::lsp::{convert, prompt_context};
use crate::profiles::ProfileKind;
use crate::session::{ConfigChange, Turn, summarize};
use crate::store::history as stored_history;
use serde::Serialize;

fn session(state: &ServerState, args: &CommandArgs) -> Result<Arc<LspSession>> {
    let id = args.required_str("sessionId")?;
    state.sessions.get(&id).ok_or_else(|| {
        invalid_field(
            "sessionId",
            "the id of an open session (agentls.listSessions shows them; resume a stored one)",
        )
    })
}

fn profile_of(args: &CommandArgs) -> Result<Option<ProfileKind>> {
    let chosen = args.optional_choice("profile", ProfileKind::NAMES)?;
    Ok(chosen.and_then(|name| name.parse().ok()))
}

fn root_of(args: &CommandArgs) -> Result<Option<PathBuf>> {
    match args.optional_str("rootUri")? {
        None => Ok(None),
        Some(text) => convert::parse_uri(&text)
            .and_then(|u| convert::path_of(&u))
            .map(Some)
            .ok_or_else(|| invalid_field("rootUri", "a file: URI of a folder")),
    }
}

fn created(session: &LspSession) -> Value {
    json!({
        "sessionId": session.id,
        "profile": session.profile.as_str(),
        "model": session.handle.config().model,
    })
}

/// Starts a session; its failure (configuration, provider) is the command's error, whole.
async fn start(state: &Arc<ServerState>, request: NewSession) -> Result<Arc<LspSession>> {
    assembly::create(state, request).await.map_err(|e| request_failed(e.to_string()))
}

pub async fn new_session(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let request = NewSession {
        profile: profile_of(args)?,
        model: args.optional_str("model")?,
        root: root_of(args)?,
        ..Default::default()
    };
    let session = start(state, request).await?;
    Ok(created(&session))
}

/// The prompt text with the editor context (a file and optionally a range of it).
fn with_context(state: &ServerState, text: String, context: Option<CommandArgs>) -> Result<String> {
    let Some(context) = context else { return Ok(text) };
    let uri_text = context.required_str("uri").map_err(|_| invalid_field("context.uri", "a file: URI"))?;
    let path = convert::parse_uri(&uri_text)
        .and_then(|u| convert::path_of(&u))
        .ok_or_else(|| invalid_field("context.uri", "a file: URI"))?;
    let range: Option<tower_lsp_server::ls_types::Range> = context
        .optional_typed("range", "an LSP range")
        .map_err(|_| invalid_field("context.range", "an LSP range"))?;
    let display = state.shown_path(&path);
    let buffer = match state.documents.get(&path) {
        Some(b) => b.text.to_string(),
        None => std::fs::read_to_string(&path).unwrap_or_default(),
    };
    Ok(prompt_context::with_context(&text, &display, &buffer, range, state.profile().encoding))
}

pub async fn prompt(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let text = args.required_str("text")?;
    let context = args.optional_object("context")?;
    let context_path = context
        .as_ref()
        .and_then(|c| c.optional_str("uri").ok().flatten())
        .and_then(|uri| convert::parse_uri(&uri))
        .and_then(|uri| convert::path_of(&uri));
    let session = match args.optional_str("sessionId")? {
        Some(_) => session(state, args)?,
        None => {
            // Without a session: the latest one of the workspace folder holding the context file
            // (or of any folder), else a new one rooted there.
            let root = context_path.as_ref().and_then(|path| {
                state
                    .roots()
                    .into_iter()
                    .filter(|r| path.starts_with(r))
                    .max_by_key(|r| r.components().count())
            });
            let latest =
                state.sessions.all().into_iter().rev().find(|s| root.as_ref().is_none_or(|r| s.root == *r));
            match latest {
                Some(s) => s,
                None => start(state, NewSession { root, ..Default::default() }).await?,
            }
        }
    };
    let text = with_context(state, text, context)?;
    // Instruction files are re-read for every new input, so an edit on disk counts even before
    // the watcher reports it.
    session.handle.reload_project_docs();
    session.handle.submit_with_context(text, context_path.into_iter().collect());
    Ok(json!({"sessionId": session.id}))
}

pub fn steer(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let session = session(state, args)?;
    session.handle.steer(args.required_str("text")?);
    Ok(json!({"sessionId": session.id}))
}

pub fn follow_up(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let session = session(state, args)?;
    let text = args.required_str("text")?;
    session.handle.reload_project_docs();
    session.handle.follow_up(text);
    Ok(json!({"sessionId": session.id}))
}

pub fn cancel(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let session = session(state, args)?;
    state.cancel_turn(&session);
    Ok(json!({"sessionId": session.id, "cancelled": true}))
}

pub fn close(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let session = session(state, args)?;
    state.cancel_turn(&session);
    session.handle.close();
    Ok(json!({"sessionId": session.id, "closed": true}))
}

pub fn list(state: &Arc<ServerState>) -> Result<Value> {
    let open = state.sessions.all();
    let mut out: Vec<Value> = open.iter().map(|s| s.summary()).collect();
    if let Some(store) = &state.transcripts {
        match store.list() {
            Ok(stored) => {
                for t in stored.into_iter().filter(|t| !open.iter().any(|s| s.id == t.header.session_id)) {
                    out.push(json!({
                        "sessionId": t.header.session_id,
                        "rootUri": convert::uri_of(&t.header.root).map(|u| u.as_str().to_string()),
                        "profile": t.header.profile,
                        "model": t.header.model,
                        "created": t.header.created,
                        "title": t.title,
                        "open": false,
                    }))
                }
            }
            Err(e) => tracing::warn!("cannot list stored sessions: {e}"),
        }
    }
    Ok(json!({"sessions": out}))
}

/// One entry of `agentls.history`: what a client shows of a conversation.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
enum HistoryEntry {
    User {
        text: String,
        timestamp: String,
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

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryCall {
    call_id: String,
    tool_name: String,
    summary: String,
    arguments: Value,
}

fn history_entries(turns: &[Turn], cwd: &std::path::Path) -> Vec<HistoryEntry> {
    let mut out = Vec::new();
    for turn in turns {
        match turn {
            Turn::User(t) => {
                out.push(HistoryEntry::User { text: t.content.clone(), timestamp: t.timestamp.to_rfc3339() })
            }
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

/// `agentls.history {sessionId}`: the conversation of an open or stored session.
pub fn history(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let id = args.required_str("sessionId")?;
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
    Ok(json!({"sessionId": id, "entries": history_entries(&turns, &root)}))
}

pub async fn resume(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let id = args.required_str("sessionId")?;
    if let Some(open) = state.sessions.get(&id) {
        let mut value = created(&open);
        value["resumed"] = json!(false);
        return Ok(value);
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
    let request = NewSession {
        id: Some(id),
        profile,
        model: Some(transcript.header.model.clone()),
        root: Some(transcript.header.root.clone()),
        history,
    };
    let session = start(state, request).await?;
    let mut value = created(&session);
    value["resumed"] = json!(true);
    value["turns"] = json!(turns);
    Ok(value)
}

/// `agentls.compact {sessionId}`: queues a compaction after the current input; the outcome is a
/// `compaction` event (or a `warning` when there is nothing to summarise).
pub fn compact(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let session = session(state, args)?;
    session.handle.compact();
    Ok(json!({"sessionId": session.id, "queued": true}))
}

pub fn configure(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let session = session(state, args)?;
    let model = args.optional_str("model")?;
    if model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err(invalid_field("model", "a non-empty model name"));
    }
    let reasoning_effort = match args.optional_str("reasoningEffort")? {
        None => None,
        Some(e) if e == "default" => Some(None),
        Some(e) => Some(Some(e.parse::<ReasoningEffort>().map_err(|_| {
            invalid_field("reasoningEffort", "one of \"minimal\", \"low\", \"medium\", \"high\", \"default\"")
        })?)),
    };
    let approval = match args.optional_choice("approval", &["review", "auto", "deny"])? {
        None => None,
        Some(a) => {
            Some(a.parse::<Approval>().map_err(|_| invalid_field("approval", "review, auto or deny"))?)
        }
    };
    session.handle.configure(ConfigChange { model, reasoning_effort, approval });
    Ok(session.summary())
}
