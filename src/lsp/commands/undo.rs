//! `agentls.undoTurn` and `agentls.redoTurn`: a session's recorded turns reverted or re-applied
//! through the editor like any other change (open buffers through `workspace/applyEdit`, other
//! files on disk through the session's committer), then, with `rewind`, its history cut back.
//! A plain client is answered at once and told the outcome with `window/showMessage`; a plugin
//! client gets the command's result and an `undo_state` event (so every view of the session,
//! not only the one that asked, shows which turns are undone).

use std::sync::Arc;

use async_trait::async_trait;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::MessageType;

use super::Handler;
use super::args::request_failed;
use super::session::session;
use crate::checkpoint::revert::Apply;
use crate::checkpoint::{Direction, Reversal};
use crate::exec::ExecutionEnvironment;
use crate::lsp::apply;
use crate::lsp::convert::{parse_uri, path_of};
use crate::lsp::protocol::{
    EventNotification, EventParams, NotCoveredFile, RedoTurn, RevertedFile, SessionParams, TurnsReverted,
    UndoTurn, UndoTurnParams,
};
use crate::lsp::registry::LspSession;
use crate::lsp::review::{file_uri, review_op};
use crate::lsp::state::ServerState;
use crate::session::{Event, EventData, SessionState, UndoStatus};
use crate::workspace::{FileOp, ResolvedChangeSet, Workspace};

/// The editor, as undo and redo reach it.
struct InEditor {
    state: Arc<ServerState>,
    env: Arc<dyn ExecutionEnvironment>,
}

#[async_trait]
impl Apply for InEditor {
    async fn apply(&self, change: ResolvedChangeSet) -> std::result::Result<(), String> {
        let workspace = Workspace::new(Arc::clone(&self.state.documents));
        let profile = self.state.profile();
        apply::apply(&self.state.outbound, &workspace, &self.env, &profile, &change, "agentls: undo", false)
            .await
            .map(drop)
    }
}

impl Handler for UndoTurn {
    async fn handle(state: &Arc<ServerState>, params: UndoTurnParams) -> Result<TurnsReverted> {
        let session = session(state, &params.session_id)?;
        reverse(state, session, Direction::Undo, params.turn_id, params.rewind).await
    }
}

impl Handler for RedoTurn {
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<TurnsReverted> {
        let session = session(state, &params.session_id)?;
        reverse(state, session, Direction::Redo, None, false).await
    }
}

/// Runs the undo or redo. A plugin client gets its outcome as the command's result. A plain
/// client gets an answer at once (`queued`) and the outcome as a message: some (eglot) answer no
/// request of the server's, the revert's `workspace/applyEdit` included, while their command
/// waits for its answer.
async fn reverse(
    state: &Arc<ServerState>,
    session: Arc<LspSession>,
    direction: Direction,
    turn: Option<u64>,
    rewind: bool,
) -> Result<TurnsReverted> {
    if state.profile().plugin {
        return run(state, &session, direction, turn, rewind).await.map_err(request_failed);
    }
    let id = session.id.clone();
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let told = match run(&state, &session, direction, turn, rewind).await {
            Ok(result) => (MessageType::INFO, summary(&state, direction, &result)),
            Err(message) => (MessageType::WARNING, format!("agentls: {message}")),
        };
        state.outbound.tell(told.0, told.1).await;
    });
    Ok(TurnsReverted {
        session_id: id,
        turn_ids: Vec::new(),
        files: Vec::new(),
        not_covered: Vec::new(),
        rewound: None,
        queued: true,
    })
}

async fn run(
    state: &Arc<ServerState>,
    session: &LspSession,
    direction: Direction,
    turn: Option<u64>,
    rewind: bool,
) -> std::result::Result<TurnsReverted, String> {
    if session.handle.state() == SessionState::Processing {
        return Err("the session is working on an input; wait for it or cancel it first".into());
    }
    let checkpoints = session
        .handle
        .checkpoints()
        .ok_or("this session records no checkpoints (the server has no data directory)")?;
    let workspace = Workspace::new(Arc::clone(&state.documents));
    let apply = InEditor { state: Arc::clone(state), env: Arc::clone(&session.env) };
    let reversal = checkpoints
        .reverse(direction, turn, &workspace, session.env.as_ref(), &apply)
        .await
        .map_err(|e| e.to_string())?;
    let rewound = match rewind {
        true => Some(session.handle.rewind(reversal.mark).await.map_err(|e| e.to_string())?),
        false => None,
    };
    if state.profile().plugin {
        // Every view of the session (the chat, whoever asked) learns which turns are undone now.
        let status = UndoStatus {
            direction: Some(direction),
            turn_ids: reversal.turns.clone(),
            rewound,
            ..UndoStatus::new(checkpoints.undo_state())
        };
        let event = Event::new(session.id.as_str().into(), EventData::UndoState(status));
        state.outbound.notify::<EventNotification>(EventParams::of(&event)).await;
    }
    Ok(reverted(&session.id, &reversal, rewound))
}

fn reverted(session_id: &str, reversal: &Reversal, rewound: Option<usize>) -> TurnsReverted {
    TurnsReverted {
        session_id: session_id.to_string(),
        turn_ids: reversal.turns.clone(),
        files: reversal
            .files()
            .into_iter()
            .map(|(file, _)| RevertedFile {
                uri: file_uri(&file.path),
                op: review_op(&file.op),
                new_uri: match &file.op {
                    FileOp::Rename { to } => Some(file_uri(to)),
                    _ => None,
                },
            })
            .collect(),
        not_covered: reversal
            .not_covered
            .iter()
            .map(|(path, reason)| NotCoveredFile { uri: file_uri(path), reason: *reason })
            .collect(),
        rewound,
        queued: false,
    }
}

/// What a plain client is told (files named as the user sees them).
fn summary(state: &ServerState, direction: Direction, result: &TurnsReverted) -> String {
    let verb = match direction {
        Direction::Undo => "undid",
        Direction::Redo => "redid",
    };
    let turns: Vec<String> = result.turn_ids.iter().map(u64::to_string).collect();
    let files = match result.files.len() {
        1 => "1 file".to_string(),
        n => format!("{n} files"),
    };
    let mut text = format!("agentls: {verb} turn {} ({files})", turns.join(", "));
    if !result.not_covered.is_empty() {
        let files: Vec<String> = result
            .not_covered
            .iter()
            .map(|f| match parse_uri(&f.uri).as_ref().and_then(path_of) {
                Some(path) => state.shown_path(&path),
                None => f.uri.clone(),
            })
            .collect();
        text.push_str(&format!("; not covered, left as they are: {}", files.join(", ")));
    }
    text
}
