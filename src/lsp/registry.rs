//! The sessions a server hosts, and which progress token belongs to which.
//!
//! Invariant: a session is in the registry from its assembly until its event pump ends (after
//! `session_end`, or when its task died); lookups never block on a session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use super::convert;
use super::protocol::{OpenSession, SessionInfo, SessionStatus};
use crate::profiles::ProfileKind;
use crate::session::SessionHandle;

/// One hosted session.
pub struct LspSession {
    pub id: String,
    pub root: PathBuf,
    pub profile: ProfileKind,
    pub handle: SessionHandle,
    /// Where the session's files are (its undo and redo write through it).
    pub env: std::sync::Arc<dyn crate::exec::ExecutionEnvironment>,
}

impl LspSession {
    /// What `agentls.listSessions` and `agentls.configure` say of it.
    pub fn info(&self) -> SessionInfo {
        let config = self.handle.config();
        SessionInfo {
            session_id: self.id.clone(),
            root_uri: convert::uri_of(&self.root).map(|u| u.as_str().to_string()),
            profile: self.profile.as_str().to_string(),
            model: config.model,
            open: true,
            status: SessionStatus::Open(OpenSession {
                reasoning_effort: config.reasoning_effort,
                approval: config.approval,
                state: self.handle.state(),
                context: self.handle.context().into(),
            }),
        }
    }
}

/// Open sessions and the progress tokens that belong to them.
#[derive(Default)]
pub struct SessionRegistry {
    sessions: RwLock<Vec<Arc<LspSession>>>,
    /// Progress token → session id, for `window/workDoneProgress/cancel`.
    progress: Mutex<HashMap<String, String>>,
    /// Set once a session was inserted.
    opened: tokio::sync::watch::Sender<bool>,
}

impl SessionRegistry {
    pub fn get(&self, id: &str) -> Option<Arc<LspSession>> {
        self.sessions.read().unwrap_or_else(|p| p.into_inner()).iter().find(|s| s.id == id).cloned()
    }

    /// Open sessions, oldest first.
    pub fn all(&self) -> Vec<Arc<LspSession>> {
        self.sessions.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn insert(&self, session: Arc<LspSession>) {
        self.sessions.write().unwrap_or_else(|p| p.into_inner()).push(session);
        self.opened.send_replace(true);
    }

    /// Returns once the first session was inserted (at once if one was).
    pub(super) async fn first_opened(&self) {
        let _ = self.opened.subscribe().wait_for(|opened| *opened).await;
    }

    pub fn remove(&self, id: &str) {
        self.sessions.write().unwrap_or_else(|p| p.into_inner()).retain(|s| s.id != id);
    }

    pub fn session_of_progress(&self, token: &str) -> Option<String> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }

    pub(super) fn track_progress(&self, token: &str, session: &str) {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_string(), session.to_string());
    }

    pub(super) fn untrack_progress(&self, token: &str) {
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).remove(token);
    }
}
