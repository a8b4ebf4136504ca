//! `agentls.undoTurn` and `agentls.redoTurn`: a session's recorded turns reverted or re-applied
//! through the editor like any other change (open buffers through `workspace/applyEdit`, other
//! files on disk through the session's committer), then, with `rewind`, its history cut back.
//! A plain client is told the outcome with `window/showMessage` (it has no chat to show it in).

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
use crate::lsp::protocol::{
    NotCoveredFile, RedoTurn, RevertedFile, SessionParams, TurnsReverted, UndoTurn, UndoTurnParams,
};
use crate::lsp::registry::LspSession;
use crate::lsp::review::{file_uri, review_op};
use crate::lsp::state::ServerState;
use crate::session::SessionState;
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
        reverse(state, &session, Direction::Undo, params.turn_id, params.rewind).await
    }
}

impl Handler for RedoTurn {
    async fn handle(state: &Arc<ServerState>, params: SessionParams) -> Result<TurnsReverted> {
        let session = session(state, &params.session_id)?;
        reverse(state, &session, Direction::Redo, None, false).await
    }
}

async fn reverse(
    state: &Arc<ServerState>,
    session: &LspSession,
    direction: Direction,
    turn: Option<u64>,
    rewind: bool,
) -> Result<TurnsReverted> {
    let plain = !state.profile().plugin;
    let failed = async |message: String| {
        if plain {
            state.outbound.tell(MessageType::WARNING, format!("agentls: {message}")).await;
        }
        request_failed(message)
    };
    if session.handle.state() == SessionState::Processing {
        return Err(failed("the session is working on an input; wait for it or cancel it first".into()).await);
    }
    let Some(checkpoints) = session.handle.checkpoints() else {
        return Err(
            failed("this session records no checkpoints (the server has no data directory)".into()).await
        );
    };
    let workspace = Workspace::new(Arc::clone(&state.documents));
    let apply = InEditor { state: Arc::clone(state), env: Arc::clone(&session.env) };
    let reversal = match checkpoints.reverse(direction, turn, &workspace, session.env.as_ref(), &apply).await
    {
        Ok(reversal) => reversal,
        Err(e) => return Err(failed(e.to_string()).await),
    };
    let rewound = match rewind {
        true => match session.handle.rewind(reversal.mark).await {
            Ok(cut) => Some(cut),
            Err(e) => return Err(failed(e.to_string()).await),
        },
        false => None,
    };
    let result = reverted(&session.id, &reversal, rewound);
    if plain {
        state.outbound.tell(MessageType::INFO, summary(direction, &result)).await;
    }
    Ok(result)
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
    }
}

/// What a plain client is told.
fn summary(direction: Direction, result: &TurnsReverted) -> String {
    let verb = match direction {
        Direction::Undo => "undid",
        Direction::Redo => "redid",
    };
    let turns: Vec<String> = result.turn_ids.iter().map(u64::to_string).collect();
    let mut text = format!("agentls: {verb} turn {} ({} files)", turns.join(", "), result.files.len());
    if !result.not_covered.is_empty() {
        let files: Vec<&str> = result.not_covered.iter().map(|f| f.uri.as_str()).collect();
        text.push_str(&format!("; not covered, left as they are: {}", files.join(", ")));
    }
    text
}
