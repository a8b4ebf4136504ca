//! Everything the server sends to the client: `agentls/*` notifications and requests with a
//! deadline.
//!
//! Invariant: no request to the client can wait forever. Each has a timeout; a client that never
//! answers costs the caller an [`OutboundError::Timeout`], never a hung session.

use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

/// `agentls/event`: one session event.
pub enum EventNotification {}
impl Notification for EventNotification {
    type Params = Value;
    const METHOD: &'static str = "agentls/event";
}

/// `agentls/review`: a change set waiting for `agentls.resolveReview`.
pub enum ReviewNotification {}
impl Notification for ReviewNotification {
    type Params = Value;
    const METHOD: &'static str = "agentls/review";
}

/// `agentls/permission`: a shell command waiting for `agentls.resolvePermission`.
pub enum PermissionNotification {}
impl Notification for PermissionNotification {
    type Params = Value;
    const METHOD: &'static str = "agentls/permission";
}

/// `agentls/diagnostics` (server → plugin client): the editor's diagnostics of a file or of the
/// workspace.
pub enum DiagnosticsRequest {}
impl Request for DiagnosticsRequest {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "agentls/diagnostics";
}

/// `agentls/saveDocuments` (server → plugin client): save these open documents.
pub enum SaveDocumentsRequest {}
impl Request for SaveDocumentsRequest {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "agentls/saveDocuments";
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OutboundError {
    #[error("the editor did not answer `{method}` within {seconds}s")]
    Timeout { method: &'static str, seconds: u64 },
    #[error("the editor answered `{method}` with an error: {message}")]
    Rejected { method: &'static str, message: String },
}

/// Deadlines for requests to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Requests the client answers by itself (create progress, diagnostics, save, applyEdit).
    pub request: Duration,
    /// Requests a human answers (showMessageRequest, applyEdit with needsConfirmation).
    pub human: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self { request: Duration::from_secs(30), human: Duration::from_secs(30 * 60) }
    }
}

/// The server's handle for talking to the client.
#[derive(Debug, Clone)]
pub struct Outbound {
    pub client: Client,
    pub deadlines: Deadlines,
}

impl Outbound {
    pub fn new(client: Client, deadlines: Deadlines) -> Self {
        Self { client, deadlines }
    }

    /// Sends `R` and waits at most `deadline` for the answer.
    pub async fn request_within<R: Request>(
        &self,
        params: R::Params,
        deadline: Duration,
    ) -> Result<R::Result, OutboundError> {
        match tokio::time::timeout(deadline, self.client.send_request::<R>(params)).await {
            Err(_) => Err(OutboundError::Timeout { method: R::METHOD, seconds: deadline.as_secs() }),
            Ok(Err(e)) => Err(OutboundError::Rejected { method: R::METHOD, message: e.message.to_string() }),
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// Sends `R` with the ordinary deadline.
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result, OutboundError> {
        self.request_within::<R>(params, self.deadlines.request).await
    }

    pub async fn notify<N: Notification>(&self, params: N::Params) {
        self.client.send_notification::<N>(params).await;
    }
}
