//! Starting a session the server hosts: the one session builder with the editor's own parts
//! (open documents, the LSP editor port, the diagnostics tool), then its registry entry and its
//! event pump.
//!
//! Invariant: a session is registered before its pump runs, and its pump is the only reader of
//! its events.

use std::path::PathBuf;
use std::sync::Arc;

use super::port::LspEditorPort;
use super::pump::Pump;
use super::registry::LspSession;
use super::state::ServerState;
use crate::profiles::ProfileKind;
use crate::session::{self, BuildError, SessionBuilder, SessionParts, Turn};
use crate::tools::Tool;

/// What `agentls.newSession` / `resumeSession` ask for.
#[derive(Debug, Default)]
pub struct NewSession {
    pub id: Option<String>,
    pub profile: Option<ProfileKind>,
    pub model: Option<String>,
    pub root: Option<PathBuf>,
    pub history: Vec<Turn>,
}

/// Why a session was not started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("no workspace folder is open; open a folder or pass `rootUri` to agentls.newSession")]
    NoFolder,
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// Opens, in the background, the connection to the provider a new session of the first folder
/// would use (the user is writing the first prompt before any session exists).
pub fn warm_provider(state: &Arc<ServerState>) {
    let Some(root) = state.roots().into_iter().next() else { return };
    match SessionBuilder::load(&state.options.env, root, state.client_layer()) {
        Ok(builder) => builder.warm_provider(),
        Err(e) => tracing::debug!("no provider to warm: {e}"),
    }
}

/// Creates (or resumes) a session and starts its pump.
pub async fn create(state: &Arc<ServerState>, request: NewSession) -> Result<Arc<LspSession>, StartError> {
    let root = match request.root {
        Some(root) => root,
        None => state.roots().into_iter().next().ok_or(StartError::NoFolder)?,
    };
    let mut overrides = state.client_layer();
    if let Some(model) = &request.model {
        overrides.model = Some(model.clone());
    }
    let builder = SessionBuilder::load(&state.options.env, root.clone(), overrides)?;
    if let Some(trust) = builder.trust().cloned() {
        let state = state.clone();
        tokio::spawn(async move { super::trust::raise(&state, trust).await });
    }
    // The port needs the session id before the session exists: a resumed one keeps its own.
    let id = request.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let (announce_tx, announcements) = tokio::sync::mpsc::unbounded_channel();
    let env = builder.environment();
    let port = Arc::new(LspEditorPort::new(id.clone(), Arc::downgrade(state), announce_tx, env.clone()));
    let mut extra_tools: Vec<Arc<dyn Tool>> = state.options.extra_tools.clone();
    if state.profile().plugin {
        extra_tools.push(Arc::new(super::diagnostics::DiagnosticsTool::new(Arc::downgrade(state))));
    }
    let resumed = !request.history.is_empty();
    let built = builder
        .build(SessionParts {
            id: Some(id.clone()),
            profile: request.profile,
            history: request.history,
            documents: Some(state.documents.clone()),
            editor: port.clone(),
            permission_rules: state.rules.clone(),
            extra_tools,
            transcripts: state
                .transcripts
                .clone()
                .map(|store| Arc::new(store) as Arc<dyn session::Transcripts>),
            mcp: Some(state.mcp.clone()),
            checkpoints: state.options.data_dir.clone(),
        })
        .await?;
    let (profile, model) = (built.profile, built.model.clone());
    let (handle, events) = session::spawn(built.options);
    let _ = port.handle.set(handle.clone());
    let session = Arc::new(LspSession { id: id.clone(), root, profile, handle, env });
    state.sessions.insert(session.clone());
    tracing::info!(session = %id, profile = profile.as_str(), model = %model, resumed, "session started");
    let pump = Pump::new(state.clone(), session.clone(), built.transcript);
    tokio::spawn(pump.run(events, announcements));
    Ok(session)
}
