//! Document sync (`textDocument/didOpen`, `didChange`, `didClose`), applied in arrival order.
//!
//! Invariant: these notifications are applied to the [`DocumentStore`] synchronously inside
//! `Service::call`, which the transport invokes once per message in the order messages arrive,
//! before any handler future runs. So a buffer is never seen out of order, and a request that
//! arrives after a change always sees it.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Request, Response};
use tower_lsp_server::ls_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
};
use tower_service::Service;

use super::convert;
use super::state::ServerState;
use crate::workspace::TextChange;

/// Wraps the LSP service and applies document sync before routing anything else.
pub struct OrderedSync<S> {
    inner: S,
    state: Arc<ServerState>,
}

impl<S> OrderedSync<S> {
    pub fn new(inner: S, state: Arc<ServerState>) -> Self {
        Self { inner, state }
    }
}

/// Applies one sync notification; returns what went wrong for the log.
fn apply(state: &ServerState, method: &str, params: Value) -> Result<(), String> {
    let encoding = state.profile().encoding;
    match method {
        "textDocument/didOpen" => {
            let p: DidOpenTextDocumentParams = serde_json::from_value(params).map_err(|e| e.to_string())?;
            let path = convert::path_of(&p.text_document.uri).ok_or("not a file: URI")?;
            state.documents.open(&path, &p.text_document.text, p.text_document.version);
        }
        "textDocument/didChange" => {
            let p: DidChangeTextDocumentParams = serde_json::from_value(params).map_err(|e| e.to_string())?;
            let path = convert::path_of(&p.text_document.uri).ok_or("not a file: URI")?;
            let changes: Vec<TextChange> = p
                .content_changes
                .into_iter()
                .map(|c| TextChange { range: c.range.map(convert::range_from_lsp), text: c.text })
                .collect();
            state
                .documents
                .change(&path, p.text_document.version, &changes, encoding)
                .map_err(|e| e.to_string())?;
        }
        "textDocument/didClose" => {
            let p: DidCloseTextDocumentParams = serde_json::from_value(params).map_err(|e| e.to_string())?;
            let path = convert::path_of(&p.text_document.uri).ok_or("not a file: URI")?;
            state.documents.close(&path);
        }
        _ => {}
    }
    Ok(())
}

const SYNC_METHODS: &[&str] = &["textDocument/didOpen", "textDocument/didChange", "textDocument/didClose"];

impl<S> Service<Request> for OrderedSync<S>
where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Option<Response>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Only notifications (no id) are sync; a request with a sync method name falls through
        // to the router, which answers it as an unknown method.
        if request.id().is_none() && SYNC_METHODS.contains(&request.method()) && self.state.is_initialized() {
            let method = request.method().to_string();
            let (_, _, params) = request.into_parts();
            if let Err(e) = apply(&self.state, &method, params.unwrap_or(Value::Null)) {
                tracing::warn!("ignoring {method}: {e}");
            }
            return futures::future::ready(Ok(None)).boxed();
        }
        self.inner.call(request).boxed()
    }
}
