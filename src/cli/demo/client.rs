//! A minimal LSP client of `agentls serve` running as a child process: Content-Length frames
//! over the child's stdio (the framing of `lsp::transport`), requests matched to their
//! responses, everything else handed to the caller in arrival order.
//!
//! Invariant: the child never outlives the client: it is killed when the client is dropped, and
//! `shutdown` ends it with `shutdown` + `exit`, killing it if it does not exit in time.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

use crate::lsp::protocol;
use crate::lsp::transport::{Frame, FrameReader, frame};

/// How long the server may take to exit after `exit`.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// A message from the server that is not the response to a pending request.
#[derive(Debug)]
pub enum Incoming {
    Notification { method: String, params: Value },
    Request { id: Value },
}

pub struct ServerProcess {
    child: Child,
    stdin: ChildStdin,
    reader: FrameReader<ChildStdout>,
    /// Messages that arrived while a request waited for its response.
    backlog: VecDeque<Incoming>,
    next_id: i64,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl ServerProcess {
    /// Starts `exe serve --stdio` in `cwd` with the environment changes in `env` (`None`
    /// removes a variable).
    pub fn spawn(exe: &Path, cwd: &Path, env: &[(String, Option<String>)]) -> Result<Self, String> {
        let mut command = Command::new(exe);
        command
            .args(["serve", "--stdio"])
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        let mut child =
            command.spawn().map_err(|e| format!("cannot start the server {}: {e}", exe.display()))?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the server's stdio was not captured".into());
        };
        let stderr = tokio::spawn(async move {
            let mut bytes = Vec::new();
            let _ = stderr.read_to_end(&mut bytes).await;
            bytes
        });
        Ok(Self {
            child,
            stdin,
            reader: FrameReader::new(stdout),
            backlog: VecDeque::new(),
            next_id: 0,
            stderr: Some(stderr),
        })
    }

    /// Sends a request and waits for its response; other messages are kept for [`Self::next`].
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        loop {
            let message = self.read().await?;
            if message.get("method").is_none() && message.get("id") == Some(&json!(id)) {
                return match message.get("error") {
                    Some(error) => Err(format!(
                        "the server answered `{method}` with an error: {}",
                        error.get("message").and_then(Value::as_str).unwrap_or("(no message)")
                    )),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            if let Some(incoming) = classify(message) {
                self.backlog.push_back(incoming);
            }
        }
    }

    /// Runs an agentls command (`workspace/executeCommand` with its one object argument).
    pub async fn execute<C: protocol::Command>(&mut self, params: &C::Params) -> Result<C::Result, String> {
        let argument =
            serde_json::to_value(params).map_err(|e| format!("cannot encode `{}`: {e}", C::NAME))?;
        let result = self
            .request("workspace/executeCommand", json!({"command": C::NAME, "arguments": [argument]}))
            .await?;
        serde_json::from_value(result.clone())
            .map_err(|e| format!("unexpected result of `{}` ({e}): {result}", C::NAME))
    }

    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Answers a request of the server.
    pub async fn respond(&mut self, id: Value, result: Value) -> Result<(), String> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})).await
    }

    /// The next notification or request from the server.
    pub async fn next(&mut self) -> Result<Incoming, String> {
        if let Some(incoming) = self.backlog.pop_front() {
            return Ok(incoming);
        }
        loop {
            if let Some(incoming) = classify(self.read().await?) {
                return Ok(incoming);
            }
        }
    }

    /// `shutdown`, `exit`, and the exit status; the process is killed if it does not exit in
    /// time.
    pub async fn shutdown(mut self) -> Result<ExitStatus, String> {
        let graceful = async {
            self.request("shutdown", Value::Null).await?;
            self.notify("exit", Value::Null).await?;
            self.child.wait().await.map_err(|e| format!("cannot wait for the server: {e}"))
        };
        match tokio::time::timeout(EXIT_GRACE, graceful).await {
            Ok(result) => result,
            Err(_) => {
                let _ = self.child.kill().await;
                Err(format!(
                    "the server did not exit within {}s of `exit`; it was killed",
                    EXIT_GRACE.as_secs()
                ))
            }
        }
    }

    /// Ends the server after a failure: `shutdown` first (it stops running tools and their
    /// processes), killed when that does not work; returns what it wrote to stderr.
    pub async fn abort(mut self) -> String {
        let graceful = async {
            self.request("shutdown", Value::Null).await?;
            self.notify("exit", Value::Null).await
        };
        let _ = tokio::time::timeout(EXIT_GRACE, graceful).await;
        if !matches!(tokio::time::timeout(EXIT_GRACE, self.child.wait()).await, Ok(Ok(_))) {
            let _ = self.child.kill().await;
        }
        match self.stderr.take() {
            Some(task) => match tokio::time::timeout(EXIT_GRACE, task).await {
                Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).trim().to_string(),
                _ => String::new(),
            },
            None => String::new(),
        }
    }

    async fn send(&mut self, message: Value) -> Result<(), String> {
        let bytes = frame(message.to_string().as_bytes());
        self.stdin.write_all(&bytes).await.map_err(|e| format!("cannot write to the server: {e}"))?;
        self.stdin.flush().await.map_err(|e| format!("cannot write to the server: {e}"))
    }

    async fn read(&mut self) -> Result<Value, String> {
        let frame = self.reader.next().await.map_err(|e| format!("cannot read from the server: {e}"))?;
        let body = match frame {
            Some(Frame::Body(body)) | Some(Frame::Short { body, .. }) => body,
            Some(Frame::Malformed(problem)) => {
                return Err(format!("the server wrote something that is not LSP: {problem}"));
            }
            None => return Err("the server closed its output (it exited)".into()),
        };
        serde_json::from_slice(&body).map_err(|e| format!("the server sent a message that is not JSON: {e}"))
    }
}

/// A message that is a notification or a request; responses to nothing pending are dropped.
fn classify(message: Value) -> Option<Incoming> {
    let method = message.get("method")?.as_str()?.to_string();
    match message.get("id") {
        Some(id) => Some(Incoming::Request { id: id.clone() }),
        None => Some(Incoming::Notification {
            method,
            params: message.get("params").cloned().unwrap_or(Value::Null),
        }),
    }
}
