//! The ACP wire: newline-delimited JSON-RPC 2.0 on stdio. One writer task owns stdout and
//! writes whole lines in the order they were queued; requests the agent sends to the client
//! wait for their answers here.
//!
//! Invariants:
//! - Nothing but protocol reaches stdout: every line is one JSON-RPC message.
//! - Messages are written in the order they were queued, so a `session/update` queued before a
//!   prompt's response reaches the client before it.
//! - A request to the client is answered exactly once: by its response, or with an error when
//!   the client left (at once for a request made after it left).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use agent_client_protocol_schema::v1::{Error, RequestId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

type Answer = Result<Value, Error>;

/// The connection to the client.
pub struct Wire {
    out: mpsc::UnboundedSender<String>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    /// The client left: requests fail at once (a session ending after it may still ask, e.g.
    /// to kill a command's terminal).
    closed: std::sync::atomic::AtomicBool,
}

impl Wire {
    /// A wire whose lines go to `out` (the writer task's queue).
    pub fn new(out: mpsc::UnboundedSender<String>) -> Self {
        Self {
            out,
            next_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn send(&self, message: Value) {
        match serde_json::to_string(&message) {
            Ok(line) => {
                let _ = self.out.send(line);
            }
            Err(e) => tracing::error!("an ACP message could not be serialized: {e}"),
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: impl Serialize) {
        match serde_json::to_value(params) {
            Ok(params) => self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})),
            Err(e) => tracing::error!("the params of {method} could not be serialized: {e}"),
        }
    }

    /// Answers the client's request `id`.
    pub fn respond(&self, id: RequestId, result: Result<Value, Error>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(message);
    }

    /// Sends a request to the client and waits for its answer.
    pub async fn request<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<R, Error> {
        let params = serde_json::to_value(params).map_err(Error::into_internal_error)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.lock();
            if self.closed.load(Ordering::SeqCst) {
                return Err(Error::internal_error().data(Value::String("the client is gone".into())));
            }
            pending.insert(id, tx);
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let value = rx
            .await
            .map_err(|_| Error::internal_error().data(Value::String("the client is gone".into())))??;
        serde_json::from_value(value).map_err(|e| {
            Error::invalid_params().data(Value::String(format!("the client's answer to {method}: {e}")))
        })
    }

    /// A response from the client: the request it answers gets it.
    pub fn answered(&self, message: &Value) {
        let Some(id) = message.get("id").and_then(Value::as_i64) else {
            tracing::warn!("a response with an id the agent never used: {message}");
            return;
        };
        let Some(waiter) = self.lock().remove(&id) else {
            tracing::warn!("a second or unexpected response to request {id}");
            return;
        };
        let answer = match message.get("error") {
            Some(error) => {
                Err(serde_json::from_value(error.clone()).unwrap_or_else(|_| Error::internal_error()))
            }
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(answer);
    }

    /// The client left: every waiting request fails.
    pub fn close(&self) {
        let mut pending = self.lock();
        self.closed.store(true, Ordering::SeqCst);
        pending.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Answer>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Writes queued lines to stdout, one line per message, until every sender is gone.
pub async fn write_lines(mut lines: mpsc::UnboundedReceiver<String>) {
    let mut stdout = tokio::io::stdout();
    while let Some(line) = lines.recv().await {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        // More queued lines go out in the same write.
        while let Ok(next) = lines.try_recv() {
            bytes.extend_from_slice(next.as_bytes());
            bytes.push(b'\n');
        }
        if stdout.write_all(&bytes).await.is_err() || stdout.flush().await.is_err() {
            tracing::info!("stdout closed; the client is gone");
            return;
        }
    }
}
