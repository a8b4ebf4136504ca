//! The editor port: how the agent core reaches whoever shows its work (the LSP client, or the
//! disk in `agentls exec`). Implementations must answer every call: a port that cannot reach its
//! editor returns an error or a refusal, it never hangs forever.

use std::path::PathBuf;

use async_trait::async_trait;

use super::{ChangeOutcome, ChangeSet};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PortError(pub String);

/// A shell command waiting for the user's permission.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub call_id: String,
    pub tool_name: String,
    pub command: String,
    pub cwd: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PermissionDecision {
    AllowOnce,
    AllowAlways,
    /// Denied; the feedback (if any) is passed on to the model.
    Deny {
        feedback: Option<String>,
    },
}

#[async_trait]
pub trait EditorPort: Send + Sync {
    /// Proposes a change set and resolves once it was applied, partly applied, or rejected.
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError>;
    /// Asks whether a shell command may run.
    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision;
    /// Saves the given files (which the agent changed) so processes see the editor's text.
    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError>;
}
