//! Everything the server sends to the client (the payloads of agentls's own methods are in
//! [`super::protocol`]), and requests with a deadline.
//!
//! Invariants:
//! - No request to the client can wait forever. Each has a timeout; a client that never answers
//!   costs the caller an [`OutboundError::Timeout`], never a hung session. Once the editor is
//!   gone ([`Outbound::editor_gone`]) every request fails at once.
//! - While a question is open in the editor (`window/showMessageRequest`), nothing that can
//!   wait is sent: progress and messages go through [`Outbound::when_quiet`]. Some editors read
//!   the question's answer inside their message reader (eglot 1.9), and a message arriving
//!   meanwhile breaks it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::{Request, ShowMessageRequest};
use tower_lsp_server::ls_types::{MessageActionItem, MessageType, ShowMessageRequestParams};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OutboundError {
    #[error("the editor did not answer `{method}` within {seconds}s")]
    Timeout { method: &'static str, seconds: u64 },
    #[error("the editor answered `{method}` with an error: {message}")]
    Rejected { method: &'static str, message: String },
    #[error("the editor disconnected before answering `{method}`")]
    Gone { method: &'static str },
}

/// Deadlines for requests to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Requests the client answers by itself (create progress, diagnostics, save, applyEdit).
    pub request: Duration,
    /// Questions a person answers (reviews, permissions, showMessageRequest, applyEdit with
    /// needsConfirmation): unanswered by then, they count as rejected.
    pub human: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self { request: Duration::from_secs(30), human: Duration::from_secs(10 * 60) }
    }
}

/// `deadline` as a person reads it: `10 minutes`, `90 seconds`.
pub fn spoken(deadline: Duration) -> String {
    let seconds = deadline.as_secs();
    match seconds {
        60 => "1 minute".into(),
        s if s >= 60 && s % 60 == 0 => format!("{} minutes", s / 60),
        1 => "1 second".into(),
        s if s >= 1 => format!("{s} seconds"),
        _ => format!("{} ms", deadline.as_millis()),
    }
}

/// The server's handle for talking to the client.
#[derive(Debug, Clone)]
pub struct Outbound {
    pub client: Client,
    pub deadlines: Deadlines,
    /// How many questions are open in the editor.
    open_questions: Arc<watch::Sender<usize>>,
    /// Cancelled when the editor's connection ended.
    gone: tokio_util::sync::CancellationToken,
}

/// Closes a question when dropped (answered, timed out or abandoned).
struct OpenQuestion<'a>(&'a watch::Sender<usize>);

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Outbound {
    pub fn new(client: Client, deadlines: Deadlines) -> Self {
        Self {
            client,
            deadlines,
            open_questions: Arc::new(watch::Sender::new(0)),
            gone: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// The editor's connection ended: requests waiting for an answer, and every later one, fail
    /// at once instead of at their deadline.
    pub fn editor_gone(&self) {
        self.gone.cancel();
    }

    /// Asks the user with `window/showMessageRequest` and returns the chosen title; `Ok(None)`
    /// when the question was dismissed. Waits at most [`Deadlines::human`]; nothing that can wait
    /// is sent meanwhile.
    pub async fn ask(
        &self,
        typ: MessageType,
        message: String,
        actions: &[&str],
    ) -> Result<Option<String>, OutboundError> {
        let params = ShowMessageRequestParams {
            typ,
            message,
            actions: Some(
                actions
                    .iter()
                    .map(|t| MessageActionItem { title: t.to_string(), properties: Default::default() })
                    .collect(),
            ),
        };
        self.open_questions.send_modify(|n| *n += 1);
        let _open = OpenQuestion(&self.open_questions);
        let answer = self.request_within::<ShowMessageRequest>(params, self.deadlines.human).await?;
        Ok(answer.map(|item| item.title))
    }

    /// Waits until no question is open in the editor.
    pub async fn when_quiet(&self) {
        let mut questions = self.open_questions.subscribe();
        let _ = questions.wait_for(|open| *open == 0).await;
    }

    /// `window/showMessage`, once no question is open.
    pub async fn tell(&self, typ: MessageType, message: String) {
        self.when_quiet().await;
        self.client.show_message(typ, message).await;
    }

    /// `window/logMessage`, once no question is open.
    pub async fn log(&self, typ: MessageType, message: String) {
        self.when_quiet().await;
        self.client.log_message(typ, message).await;
    }

    /// Sends `R` and waits at most `deadline` for the answer.
    pub async fn request_within<R: Request>(
        &self,
        params: R::Params,
        deadline: Duration,
    ) -> Result<R::Result, OutboundError> {
        let answer = tokio::select! {
            biased;
            _ = self.gone.cancelled() => return Err(OutboundError::Gone { method: R::METHOD }),
            answer = tokio::time::timeout(deadline, self.client.send_request::<R>(params)) => answer,
        };
        match answer {
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
