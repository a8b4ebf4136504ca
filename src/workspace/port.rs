//! The editor port: how the agent core reaches whoever shows its work (the LSP client, or the
//! disk in `agentls exec`). Implementations must answer every call: a port that cannot reach its
//! editor returns an error or a refusal, it never hangs forever.

use std::path::PathBuf;

use async_trait::async_trait;

use super::{ChangeOutcome, ChangeSet};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PortError(pub String);

/// A shell command (or an MCP tool call) waiting for the user's permission.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub call_id: String,
    pub tool_name: String,
    /// The command, or an MCP call's one-line form (`mcp SERVER TOOL {args}`).
    pub command: String,
    pub cwd: PathBuf,
    /// Set for a call of an MCP server's tool.
    pub mcp: Option<McpCall>,
}

/// An MCP tool call waiting for permission: what the question shows and the policy decides on.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCall {
    pub server: String,
    /// The server's own name of the tool.
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The server says the tool only reads (`readOnlyHint`); a hint, not a promise.
    pub read_only_hint: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PermissionDecision {
    AllowOnce,
    AllowAlways,
    /// Denied; the feedback (if any) is passed on to the model.
    Deny {
        feedback: Option<String>,
    },
    /// Denied, and the same kind of request is refused without asking for the rest of the
    /// session (ACP's `reject_always`); the policy remembers it and passes on a plain `Deny`.
    DenyAlways {
        feedback: Option<String>,
    },
}

impl PermissionDecision {
    /// The feedback of a refusal (`Some(None)` when it has none); `None` when allowed. Tools
    /// ask this rather than matching one refusal variant.
    pub fn denied(self) -> Option<Option<String>> {
        match self {
            Self::AllowOnce | Self::AllowAlways => None,
            Self::Deny { feedback } | Self::DenyAlways { feedback } => Some(feedback),
        }
    }
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
