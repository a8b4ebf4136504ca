//! A test LSP client speaking real Content-Length framing, to the server in-process over
//! `tokio::io::duplex` or to the real binary over stdio.
//!
//! Requests from the server are either answered automatically (`auto_answer`; by default
//! progress tokens, capability registrations and `workspace/configuration`, as the editor policy
//! of `lsp_wire.rs` answers them) or queued for the test (`next_request` / `respond`);
//! notifications are kept in arrival order and waited for by predicate. Waits have a generous
//! hang guard, not a timing assertion. The framing is `lsp_wire.rs`'s, shared with the
//! benchmarks' client.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc, oneshot};

use super::lsp_wire::{FrameDecoder, editor_answer, frame};

/// How long a test waits for something before it fails instead of hanging (generous: it only
/// bounds a hang, on a loaded 2-core machine).
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// A request the server sent to the client.
#[derive(Debug, Clone)]
pub struct ServerRequest {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

#[derive(Default)]
struct Inbox {
    notifications: Vec<(String, Value)>,
    requests: Vec<ServerRequest>,
    /// Every message the server sent, raw, for whole-stream assertions.
    all: Vec<Value>,
    /// Anything on the server's output that is not a well-formed LSP frame.
    wire_problems: Vec<String>,
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

/// Server requests answered without the test: the given result, or `None` for the editor
/// policy's answer.
type Auto = Arc<Mutex<HashMap<String, Option<Value>>>>;

pub struct LspClient {
    writer: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    inbox: Arc<Mutex<Inbox>>,
    arrived: Arc<Notify>,
    auto: Auto,
    next_id: Mutex<i64>,
    /// Indices of notifications already returned by `next_notification*`.
    taken: Mutex<std::collections::HashSet<usize>>,
    requests_taken: Mutex<std::collections::HashSet<usize>>,
    child: Mutex<Option<tokio::process::Child>>,
    /// What the child wrote to stderr.
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl LspClient {
    /// Connects over any byte pipe.
    pub fn connect<R, W>(read: R, write: W, child: Option<tokio::process::Child>) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut write = write;
            // An empty message closes the pipe (`close_input`).
            while let Some(bytes) = rx.recv().await.filter(|bytes| !bytes.is_empty()) {
                if write.write_all(&bytes).await.is_err() || write.flush().await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let inbox: Arc<Mutex<Inbox>> = Arc::default();
        let arrived = Arc::new(Notify::new());
        let auto: Auto = Arc::default();
        auto.lock().unwrap().extend(
            [
                "window/workDoneProgress/create",
                "client/registerCapability",
                "client/unregisterCapability",
                // No editor settings: one `null` per requested item.
                "workspace/configuration",
            ]
            .map(|method| (method.to_string(), None)),
        );
        let (pending2, inbox2, arrived2, auto2, tx2) =
            (pending.clone(), inbox.clone(), arrived.clone(), auto.clone(), tx.clone());
        tokio::spawn(async move {
            let mut read = read;
            let mut decoder = FrameDecoder::default();
            let mut chunk = vec![0u8; 1 << 16];
            loop {
                let Some(body) = decoder.next_frame() else {
                    match read.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => decoder.feed(&chunk[..n]),
                    }
                    continue;
                };
                inbox2.lock().unwrap().wire_problems.append(&mut decoder.problems);
                let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                    let text = String::from_utf8_lossy(&body).chars().take(200).collect::<String>();
                    inbox2.lock().unwrap().wire_problems.push(format!("a body that is not JSON: {text:?}"));
                    continue;
                };
                inbox2.lock().unwrap().all.push(message.clone());
                let method = message.get("method").and_then(Value::as_str).map(str::to_string);
                let id = message.get("id").cloned();
                match (method, id) {
                    (Some(method), Some(id)) => {
                        let params = message.get("params").cloned().unwrap_or(Value::Null);
                        let answer = auto2.lock().unwrap().get(&method).cloned();
                        match answer {
                            Some(result) => {
                                let result = result.unwrap_or_else(|| editor_answer(&method, &params));
                                let reply = super::lsp_wire::response(&id, result);
                                let _ = tx2.send(frame(reply.to_string().as_bytes()));
                                inbox2.lock().unwrap().requests.push(ServerRequest {
                                    id: Value::Null,
                                    method,
                                    params,
                                });
                            }
                            None => {
                                inbox2.lock().unwrap().requests.push(ServerRequest { id, method, params })
                            }
                        }
                    }
                    (Some(method), None) => inbox2
                        .lock()
                        .unwrap()
                        .notifications
                        .push((method, message.get("params").cloned().unwrap_or(Value::Null))),
                    (None, Some(id)) => {
                        if let Some(n) = id.as_i64()
                            && let Some(waiter) = pending2.lock().unwrap().remove(&n)
                        {
                            let _ = waiter.send(message);
                        }
                    }
                    (None, None) => {}
                }
                arrived2.notify_waiters();
            }
            arrived2.notify_waiters();
        });
        Self {
            writer: tx,
            pending,
            inbox,
            arrived,
            auto,
            next_id: Mutex::new(1),
            taken: Mutex::default(),
            requests_taken: Mutex::default(),
            child: Mutex::new(child),
            stderr: Arc::default(),
        }
    }

    /// The server in-process, connected over a duplex pipe.
    pub fn in_process(options: agentls::lsp::ServerOptions) -> Self {
        let (client_side, server_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        tokio::spawn(agentls::lsp::serve(server_read, server_write, options));
        let (read, write) = tokio::io::split(client_side);
        Self::connect(read, write, None)
    }

    /// The real binary over stdio, with exactly `env` as its environment (plus PATH).
    pub fn spawn_binary(env: &[(&str, &str)], cwd: &Path) -> Self {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"));
        command
            .arg("serve")
            .arg("--stdio")
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("the agentls binary starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let client = Self::connect(stdout, stdin, Some(child));
        let collected = client.stderr.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                collected.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        client
    }

    /// What the child process wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Anything on the server's output that was not a well-formed LSP frame.
    pub fn wire_problems(&self) -> Vec<String> {
        self.inbox.lock().unwrap().wire_problems.clone()
    }

    /// The spawned binary's process id.
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap().as_ref().and_then(|c| c.id()).expect("a running spawned binary")
    }

    /// Waits for the child process to exit (within the hang guard) and returns its status.
    pub async fn exit_status(&self) -> std::process::ExitStatus {
        let mut child = self.child.lock().unwrap().take().expect("a spawned binary");
        tokio::time::timeout(HANG_GUARD, child.wait())
            .await
            .expect("the server exits within the hang guard")
            .expect("wait for the server")
    }

    /// Answers every future server request of `method` with `result`.
    pub fn auto_answer(&self, method: &str, result: Value) {
        self.auto.lock().unwrap().insert(method.to_string(), Some(result));
    }

    /// Stops answering `method` automatically.
    pub fn manual(&self, method: &str) {
        self.auto.lock().unwrap().remove(method);
    }

    /// Closes the server's input, as an editor that quits or crashes does.
    pub fn close_input(&self) {
        let _ = self.writer.send(Vec::new());
    }

    pub fn send_raw(&self, bytes: &[u8]) {
        let _ = self.writer.send(bytes.to_vec());
    }

    pub fn send_message(&self, message: &Value) {
        self.send_raw(&frame(message.to_string().as_bytes()));
    }

    /// Sends a request and returns the whole response object (`result` or `error`).
    pub async fn request_raw(&self, method: &str, params: Value) -> Value {
        let id = {
            let mut next = self.next_id.lock().unwrap();
            *next += 1;
            *next
        };
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.send_message(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        tokio::time::timeout(HANG_GUARD, rx)
            .await
            .unwrap_or_else(|_| panic!("no response to {method} within the hang guard"))
            .expect("the reader is alive")
    }

    /// Sends a request; `Ok(result)` or `Err(error object)`.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let response = self.request_raw(method, params).await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send_message(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Runs `agentls.<name>` with one object argument.
    pub async fn command(&self, name: &str, args: Value) -> Result<Value, Value> {
        self.request("workspace/executeCommand", json!({"command": name, "arguments": [args]})).await
    }

    /// `initialize` + `initialized` with the given capabilities and one workspace folder.
    pub async fn initialize(&self, root: &Path, capabilities: Value, options: Value) -> Value {
        self.initialize_folders(&[root], capabilities, options).await
    }

    /// `initialize` + `initialized` with several workspace folders (the first is `rootUri`).
    pub async fn initialize_folders(&self, roots: &[&Path], capabilities: Value, options: Value) -> Value {
        let uri = file_uri(roots[0]);
        let folders: Vec<Value> = roots
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"uri": file_uri(r), "name": format!("folder{i}")}))
            .collect();
        let result = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": uri,
                    "capabilities": capabilities,
                    "initializationOptions": options,
                    "workspaceFolders": folders,
                    "clientInfo": {"name": "agentls-test-client"},
                }),
            )
            .await
            .expect("initialize succeeds");
        self.notify("initialized", json!({}));
        result
    }

    async fn wait_until<T>(&self, what: &str, mut found: impl FnMut(&mut Inbox) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + HANG_GUARD;
        loop {
            let notified = self.arrived.notified();
            if let Some(value) = found(&mut self.inbox.lock().unwrap()) {
                return value;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let inbox = self.inbox.lock().unwrap();
                panic!("waited in vain for {what}; the server sent: {:#?}", inbox.all);
            }
        }
    }

    /// The first notification of `method` that satisfies `pred` and was not returned before.
    pub async fn next_notification_where(&self, method: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
        let taken = self.taken.lock().unwrap().clone();
        let (index, value) = self
            .wait_until(method, |inbox| {
                inbox
                    .notifications
                    .iter()
                    .enumerate()
                    .find(|(i, (m, p))| m == method && !taken.contains(i) && pred(p))
                    .map(|(i, (_, p))| (i, p.clone()))
            })
            .await;
        self.taken.lock().unwrap().insert(index);
        value
    }

    pub async fn next_notification(&self, method: &str) -> Value {
        self.next_notification_where(method, |_| true).await
    }

    /// The next `agentls/event` of `kind` for `session`.
    pub async fn next_event(&self, session: &str, kind: &str) -> Value {
        self.next_notification_where("agentls/event", |p| p["sessionId"] == session && p["kind"] == kind)
            .await
    }

    /// The `$/progress` end of the next turn of `session`: how a test sees a plain client's turn
    /// end (plain clients get no `agentls/event`). Its value's `message` is the end reason.
    pub async fn next_turn_end(&self, session: &str) -> Value {
        let prefix = format!("agentls/turn/{session}/");
        self.next_notification_where("$/progress", |p| {
            p["token"].as_str().is_some_and(|t| t.starts_with(&prefix)) && p["value"]["kind"] == "end"
        })
        .await
    }

    /// The first message from the server (of any kind) that satisfies `pred`.
    pub async fn message_where(&self, what: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
        self.wait_until(what, |inbox| inbox.all.iter().find(|m| pred(m)).cloned()).await
    }

    /// The next queued (not auto-answered) server request of `method`.
    pub async fn next_request(&self, method: &str) -> ServerRequest {
        let taken = self.requests_taken.lock().unwrap().clone();
        let (index, request) = self
            .wait_until(method, |inbox| {
                inbox
                    .requests
                    .iter()
                    .enumerate()
                    .find(|(i, r)| r.method == method && !r.id.is_null() && !taken.contains(i))
                    .map(|(i, r)| (i, r.clone()))
            })
            .await;
        self.requests_taken.lock().unwrap().insert(index);
        request
    }

    pub fn respond(&self, request: &ServerRequest, result: Value) {
        self.send_message(&json!({"jsonrpc": "2.0", "id": request.id, "result": result}));
    }

    /// Every notification of `method` received so far.
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        self.inbox
            .lock()
            .unwrap()
            .notifications
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Every server request of `method` so far (auto-answered ones included).
    pub fn requests(&self, method: &str) -> Vec<ServerRequest> {
        self.inbox.lock().unwrap().requests.iter().filter(|r| r.method == method).cloned().collect()
    }

    /// Every message the server sent so far.
    pub fn all_messages(&self) -> Vec<Value> {
        self.inbox.lock().unwrap().all.clone()
    }

    /// `textDocument/didOpen`.
    pub fn open(&self, path: &Path, text: &str, version: i32) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": file_uri(path), "languageId": "rust", "version": version, "text": text}}),
        );
    }

    /// `textDocument/didChange` with one ranged edit.
    pub fn change(&self, path: &Path, version: i32, range: [u32; 4], text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": file_uri(path), "version": version},
                "contentChanges": [{
                    "range": {"start": {"line": range[0], "character": range[1]}, "end": {"line": range[2], "character": range[3]}},
                    "text": text,
                }],
            }),
        );
    }

    pub async fn shutdown(&self) {
        let _ = self.request("shutdown", Value::Null).await;
        self.notify("exit", Value::Null);
    }
}

/// The `file:` URI of a path, as editors send it.
pub fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path).expect("absolute path").to_string()
}

/// Capabilities of a client running the agentls plugin (documentChanges, resource operations,
/// progress, UTF-8 positions).
pub fn plugin_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-8", "utf-16"]},
        "window": {"workDoneProgress": true, "showDocument": {"support": true}},
        "workspace": {
            "applyEdit": true,
            "workspaceEdit": {"documentChanges": true, "resourceOperations": ["create", "rename", "delete"]},
            "didChangeWatchedFiles": {"dynamicRegistration": true},
            "configuration": true,
        },
        "experimental": {"agentls": {"version": 1}},
    })
}

/// Capabilities of a plain client without the plugin and without documentChanges (Neovim 0.7).
pub fn plain_capabilities() -> Value {
    json!({
        "window": {"workDoneProgress": true},
        "workspace": {"applyEdit": true, "workspaceEdit": {}},
    })
}
