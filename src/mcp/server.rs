//! One MCP server: its connection (rmcp over stdio or Streamable HTTP), its tools, its state,
//! and its restarts.
//!
//! Invariants:
//! - A server's program runs in its own process group, registered with the host's live groups
//!   and so with the process guard: it ends with the host however the host ends.
//! - A start attempt never takes longer than the server's startup timeout; a server that fails
//!   (or stops) is started again after a backoff (1 s, doubling, at most 30 s), at most
//!   [`MAX_FAILED_STARTS`] times in a row; then it stays failed until a session asks for it again
//!   or the user restarts it ([`Server::restart`]: the program is ended gracefully and started
//!   again at once; a restart is no failure).
//! - Its stderr is read as it comes and only its last [`STDERR_TAIL`] bytes are kept (a server
//!   that floods stderr cannot block or fill memory); they explain a failure, so a closed
//!   connection waits (briefly) for the reader to reach the end of the pipe before it is told.
//! - A call ends with a result, an error, its timeout or its cancellation; a timed-out or
//!   cancelled call is cancelled at the server (`notifications/cancelled`).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, Implementation, JsonObject,
    ProgressNotificationParam, ProtocolVersion, ServerResult, Tool as McpToolInfo,
};
use rmcp::service::{
    ClientLifecycleMode, NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use rmcp::{ClientHandler, ServiceError};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::spec::{ServerSpec, Transport};
use crate::exec::{ChildProcess, LiveGroups, OutputSink, spawn_child};

/// How long a closed connection waits for the rest of the program's stderr.
const STDERR_DRAIN: Duration = Duration::from_millis(500);
/// Bytes of a server's stderr kept to explain a failure.
pub const STDERR_TAIL: usize = 16 * 1024;
/// Consecutive failed starts after which a server is left failed.
pub const MAX_FAILED_STARTS: u32 = 5;
/// A connection that lasted this long resets the count of failed starts.
const STABLE: Duration = Duration::from_secs(60);
/// How long a tool-list refresh (`tools/list_changed`) may take before the old list is kept.
const RELIST_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Starting,
    Running,
    /// The last start failed or the server stopped; a restart may be pending.
    Failed,
    /// Stopped by the host.
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        super::EntryState::from(self).as_str()
    }
}

/// What a host shows of a server.
#[derive(Debug, Clone)]
pub struct Status {
    pub state: State,
    pub tools: Arc<Vec<McpToolInfo>>,
    pub last_error: Option<String>,
    /// Starts after the first.
    pub restarts: u32,
    /// Failed starts and stops so far (it only grows).
    pub failures: u64,
    /// Still starting past its startup timeout.
    pub overdue: bool,
}

/// Why a call failed; each message says what the model can do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("the MCP server `{server}` is not running ({state}){}", last_error_suffix(.last_error))]
    NotRunning { server: String, state: &'static str, last_error: Option<String> },
    #[error(
        "the MCP server `{server}` did not answer within {ms} ms; the call was cancelled. Try again later, \
         or do the task another way"
    )]
    Timeout { server: String, ms: u128 },
    #[error("the call was cancelled")]
    Cancelled,
    #[error(
        "the MCP server `{server}` stopped during the call ({reason}); it is being restarted. Try again in a \
         moment, or do the task another way"
    )]
    Died { server: String, reason: String },
    #[error("the MCP server `{server}` refused the call: {message}")]
    Refused { server: String, message: String },
}

fn last_error_suffix(error: &Option<String>) -> String {
    error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
}

/// Calls' progress sinks by progress token.
#[derive(Default)]
struct ProgressRoutes(Mutex<HashMap<String, OutputSink>>);

impl ProgressRoutes {
    fn key(token: &rmcp::model::ProgressToken) -> String {
        serde_json::to_string(&token.0).unwrap_or_default()
    }
}

/// The client side rmcp calls back: progress to the running call, a changed tool list noted.
struct Handler {
    name: String,
    routes: Arc<ProgressRoutes>,
    tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let key = ProgressRoutes::key(&params.progress_token);
        let sink = self.routes.0.lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
        if let Some(sink) = sink {
            sink.send(&progress_line(&params));
        }
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.name, "tools/list_changed");
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentls", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// One line of a call's output for a progress notification: `[3/10] message`.
fn progress_line(params: &ProgressNotificationParam) -> String {
    let amount = match params.total {
        Some(total) => format!("{}/{}", params.progress, total),
        None => format!("{}", params.progress),
    };
    match &params.message {
        Some(message) => format!("[{amount}] {message}\n"),
        None => format!("[{amount}]\n"),
    }
}

/// The last bytes of a stream.
#[derive(Default)]
struct Tail(VecDeque<u8>);

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.0.extend(bytes);
        let excess = self.0.len().saturating_sub(STDERR_TAIL);
        self.0.drain(..excess);
    }

    /// The last lines, at most `max` characters.
    fn text(&self, max: usize) -> String {
        let (a, b) = self.0.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let text = text.trim_end();
        let start = text.len().saturating_sub(max);
        let start = (start..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
        text[start..].trim_start().to_string()
    }
}

struct Inner {
    state: State,
    peer: Option<Peer<RoleClient>>,
    tools: Arc<Vec<McpToolInfo>>,
    last_error: Option<String>,
    restarts: u32,
    failures: u64,
    /// When the current start attempt gives up.
    starting_until: Option<Instant>,
    /// Whether a task runs the server (starting, running or waiting to restart).
    active: bool,
    /// Bumped whenever the tools change (connected, relisted, lost).
    generation: u64,
}

/// One configured server, shared by every session that uses it.
pub struct Server {
    spec: ServerSpec,
    groups: LiveGroups,
    inner: Mutex<Inner>,
    changed: tokio::sync::watch::Sender<u64>,
    routes: Arc<ProgressRoutes>,
    tools_changed: Arc<AtomicBool>,
    stderr: Arc<Mutex<Tail>>,
    stop: CancellationToken,
    /// Wakes the server's task to restart it (a permit: it is taken even when the task is
    /// between two waits).
    restart: tokio::sync::Notify,
    /// Failed starts in a row after which it stays failed ([`MAX_FAILED_STARTS`]; 1 for a
    /// command that only shows the servers).
    max_starts: u32,
}

/// Why a connection ended.
enum Ended {
    /// The connection closed or failed: a failure.
    Lost(String),
    /// The host stopped the server.
    Stopped,
    /// The user asked for a restart.
    Restart,
}

/// A live connection and what keeps it alive.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The program (stdio); dropping it kills its process group.
    child: Option<ChildProcess>,
    /// The task reading the program's stderr; it ends at the pipe's end of file.
    stderr: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    pub(crate) fn new(spec: ServerSpec, groups: LiveGroups, max_starts: u32) -> Arc<Self> {
        Arc::new(Self {
            spec,
            groups,
            inner: Mutex::new(Inner {
                state: State::Stopped,
                peer: None,
                tools: Arc::new(Vec::new()),
                last_error: None,
                restarts: 0,
                failures: 0,
                starting_until: None,
                active: false,
                generation: 0,
            }),
            changed: tokio::sync::watch::channel(0).0,
            routes: Arc::default(),
            tools_changed: Arc::default(),
            stderr: Arc::default(),
            stop: CancellationToken::new(),
            restart: tokio::sync::Notify::new(),
            max_starts: max_starts.max(1),
        })
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut Inner)) {
        change(&mut self.lock());
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn status(&self) -> Status {
        let inner = self.lock();
        Status {
            state: inner.state,
            tools: inner.tools.clone(),
            last_error: inner.last_error.clone(),
            restarts: inner.restarts,
            failures: inner.failures,
            overdue: inner.state == State::Starting
                && inner.starting_until.is_some_and(|t| t <= Instant::now()),
        }
    }

    /// The tools and their generation (it changes whenever they do).
    pub fn tools(&self) -> (u64, Arc<Vec<McpToolInfo>>) {
        let inner = self.lock();
        (inner.generation, inner.tools.clone())
    }

    /// Starts the server in the background unless it runs, is starting or waits to restart.
    pub fn ensure_started(self: &Arc<Self>) {
        {
            let mut inner = self.lock();
            if inner.active || self.stop.is_cancelled() {
                return;
            }
            inner.active = true;
            inner.state = State::Starting;
            inner.starting_until = Some(Instant::now() + self.spec.startup_timeout);
        }
        self.changed.send_modify(|n| *n += 1);
        let server = Arc::clone(self);
        tokio::spawn(async move { server.run().await });
    }

    /// Waits until the server is no longer starting, or the current start attempt's deadline
    /// has passed: a prompt never waits longer than the startup timeout.
    pub async fn wait_started(&self) {
        let mut changes = self.changed.subscribe();
        loop {
            let until = {
                let inner = self.lock();
                match (inner.state, inner.starting_until) {
                    (State::Starting, Some(until)) if until > Instant::now() => until,
                    _ => return,
                }
            };
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
        }
    }

    /// Lists the tools again when the server said they changed (`tools/list_changed`).
    pub async fn refresh_tools(&self) {
        if !self.tools_changed.swap(false, Ordering::SeqCst) {
            return;
        }
        let Some(peer) = self.lock().peer.clone() else { return };
        match tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools()).await {
            Ok(Ok(tools)) => self.update(|inner| {
                inner.tools = Arc::new(tools);
                inner.generation += 1;
            }),
            Ok(Err(e)) => tracing::warn!(server = %self.spec.name, "listing the changed tools failed: {e}"),
            Err(_) => tracing::warn!(server = %self.spec.name, "listing the changed tools timed out"),
        }
    }

    /// The running server's prompts (`prompts/list`); none when it does not offer prompts or is
    /// not running.
    pub async fn prompts(&self) -> Result<Vec<rmcp::model::Prompt>, String> {
        let Some(peer) = self.running_peer() else { return Ok(Vec::new()) };
        if peer.peer_info().is_none_or(|info| info.capabilities.prompts.is_none()) {
            return Ok(Vec::new());
        }
        match tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_prompts()).await {
            Ok(listed) => listed.map_err(|e| format!("listing its prompts failed: {e}")),
            Err(_) => Err("listing its prompts timed out".into()),
        }
    }

    /// One of its prompts with `arguments` (`prompts/get`), within the server's tool timeout.
    pub async fn prompt(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<rmcp::model::GetPromptResult, String> {
        let peer = self
            .running_peer()
            .ok_or_else(|| format!("the MCP server `{}` is not running", self.spec.name))?;
        let mut params = rmcp::model::GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        match tokio::time::timeout(self.spec.tool_timeout, peer.get_prompt(params)).await {
            Ok(got) => {
                got.map_err(|e| format!("the MCP server `{}` refused the prompt: {e}", self.spec.name))
            }
            Err(_) => Err(format!("the MCP server `{}` did not answer in time", self.spec.name)),
        }
    }

    fn running_peer(&self) -> Option<Peer<RoleClient>> {
        let inner = self.lock();
        (inner.state == State::Running).then(|| inner.peer.clone()).flatten()
    }

    /// The server's start, life and restarts.
    async fn run(self: Arc<Self>) {
        let mut failures = 0u32;
        loop {
            let attempt = tokio::select! {
                attempt = tokio::time::timeout(self.spec.startup_timeout, self.connect()) => attempt,
                _ = self.stop.cancelled() => return self.finish(),
            };
            let failure = match attempt {
                Ok(Ok((connection, tools))) => {
                    let peer = connection.service.peer().clone();
                    self.update(|inner| {
                        inner.state = State::Running;
                        inner.peer = Some(peer);
                        inner.tools = Arc::new(tools);
                        inner.generation += 1;
                        inner.starting_until = None;
                    });
                    tracing::info!(server = %self.spec.name, "MCP server running");
                    let since = Instant::now();
                    let reason = match self.serve(connection).await {
                        _ if self.stop.is_cancelled() => return self.finish(),
                        Ended::Stopped => return self.finish(),
                        Ended::Restart => {
                            tracing::info!(server = %self.spec.name, "MCP server restarted on request");
                            failures = 0;
                            self.update(|inner| {
                                inner.state = State::Starting;
                                inner.peer = None;
                                inner.tools = Arc::new(Vec::new());
                                inner.generation += 1;
                                inner.restarts += 1;
                                inner.starting_until = Some(Instant::now() + self.spec.startup_timeout);
                            });
                            continue;
                        }
                        Ended::Lost(reason) => reason,
                    };
                    if since.elapsed() >= STABLE {
                        failures = 0;
                    }
                    reason
                }
                Ok(Err(error)) => error,
                Err(_) => format!("it did not start within {} ms", self.spec.startup_timeout.as_millis()),
            };
            failures += 1;
            let failure = self.with_stderr(failure);
            tracing::warn!(server = %self.spec.name, "MCP server failed: {failure}");
            let give_up = failures >= self.max_starts;
            self.update(|inner| {
                inner.state = State::Failed;
                inner.peer = None;
                if !inner.tools.is_empty() {
                    inner.tools = Arc::new(Vec::new());
                    inner.generation += 1;
                }
                inner.last_error = Some(failure);
                inner.failures += 1;
                inner.starting_until = None;
                inner.active = !give_up;
            });
            if give_up {
                tracing::warn!(server = %self.spec.name, "MCP server failed {failures} times in a row; left stopped");
                return;
            }
            let delay = Duration::from_secs(1 << (failures - 1).min(5)).min(Duration::from_secs(30));
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.restart.notified() => failures = 0,
                _ = self.stop.cancelled() => return self.finish(),
            }
            self.update(|inner| {
                inner.state = State::Starting;
                inner.restarts += 1;
                inner.starting_until = Some(Instant::now() + self.spec.startup_timeout);
            });
        }
    }

    fn finish(&self) {
        self.update(|inner| {
            inner.state = State::Stopped;
            inner.peer = None;
            inner.active = false;
            inner.starting_until = None;
        });
    }

    /// `reason`, followed by the last lines the server wrote to stderr.
    fn with_stderr(&self, reason: String) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner()).text(600);
        if tail.is_empty() { reason } else { format!("{reason}; its stderr ends with: {tail}") }
    }

    /// Runs until the connection ends, the host stops the server or the user restarts it; why
    /// it ended. A program the host stops or restarts is ended gracefully (SIGTERM first); one
    /// whose connection ended is killed with its group when its handle drops.
    async fn serve(&self, connection: Connection) -> Ended {
        let Connection { service, child, stderr } = connection;
        let cancel = service.cancellation_token();
        let ended = tokio::select! {
            quit = service.waiting() => {
                // A program that crashes writes its last words just before its stdout closes:
                // let the reader reach them (bounded: a descendant may hold the pipe open).
                if let Some(reader) = stderr {
                    let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
                }
                return Ended::Lost(match quit {
                    Ok(reason) => format!("it stopped: the connection closed ({reason:?})"),
                    Err(e) => format!("it stopped: the connection task failed: {e}"),
                });
            }
            _ = self.stop.cancelled() => Ended::Stopped,
            _ = self.restart.notified() => Ended::Restart,
        };
        cancel.cancel();
        if let Some(child) = child {
            child.terminate().await;
        }
        ended
    }

    /// Starts or reaches the server, completes the MCP handshake and lists its tools.
    async fn connect(&self) -> Result<(Connection, Vec<McpToolInfo>), String> {
        let handler = Handler {
            name: self.spec.name.clone(),
            routes: Arc::clone(&self.routes),
            tools_changed: Arc::clone(&self.tools_changed),
        };
        // The current revision first (`server/discover`), the `initialize` handshake for older servers.
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        let (service, child, stderr) = match &self.spec.transport {
            Transport::Stdio { command, args, env, cwd } => {
                let mut child =
                    spawn_child(command, args, cwd, env.clone(), &self.groups).map_err(|e| e.to_string())?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err("its stdio could not be connected".into());
                };
                let reader = child.stderr.take().map(|mut stderr| {
                    let tail = Arc::clone(&self.stderr);
                    let name = self.spec.name.clone();
                    tokio::spawn(async move {
                        let mut chunk = vec![0u8; 8192];
                        while let Ok(n) = stderr.read(&mut chunk).await {
                            if n == 0 {
                                break;
                            }
                            tracing::trace!(server = %name, "stderr: {}", String::from_utf8_lossy(&chunk[..n]));
                            tail.lock().unwrap_or_else(|p| p.into_inner()).push(&chunk[..n]);
                        }
                    })
                });
                let service = serve_client_with_lifecycle_and_ct(
                    handler,
                    (stdout, stdin),
                    lifecycle,
                    CancellationToken::new(),
                )
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
                (service, Some(child), reader)
            }
            Transport::Http { url, headers, network } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                // The proxy and the trusted CAs of the model requests.
                let client = crate::llm::http::setup(network).mcp_client().await.map_err(|e| match e {
                    crate::llm::LlmError::Connection { message, .. } => {
                        format!("cannot reach {url}: {message}")
                    }
                    other => other.to_string(),
                })?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (name, value) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|e| format!("the header name `{name}` is invalid: {e}"))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|e| format!("the value of the header `{name}` is invalid: {e}"))?;
                    config.custom_headers.insert(name, value);
                }
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service = serve_client_with_lifecycle_and_ct(
                    handler,
                    transport,
                    lifecycle,
                    CancellationToken::new(),
                )
                .await
                .map_err(|e| {
                    match http_failure(&e).and_then(|c| crate::llm::http::recognize(url, network, c)) {
                        // A certificate, a proxy, a name: said as for the provider, with what to do.
                        Some(known) => format!("the MCP handshake failed: {known}"),
                        None => format!("the MCP handshake with {url} failed: {e}"),
                    }
                })?;
                (service, None, None)
            }
        };
        let tools =
            service.peer().list_all_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?;
        Ok((Connection { service, child, stderr }, tools))
    }

    /// Calls `tool` with `arguments`; `progress` receives the server's progress notifications
    /// as lines of text.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
        progress: Option<OutputSink>,
    ) -> Result<CallToolResult, CallError> {
        let peer = {
            let inner = self.lock();
            match (&inner.peer, inner.state) {
                (Some(peer), State::Running) => peer.clone(),
                (_, state) => {
                    return Err(CallError::NotRunning {
                        server: self.spec.name.clone(),
                        state: state.as_str(),
                        last_error: inner.last_error.clone(),
                    });
                }
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let died =
            |e: ServiceError| CallError::Died { server: self.spec.name.clone(), reason: e.to_string() };
        let mut handle =
            peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await.map_err(died)?;
        let route = ProgressRoutes::key(&handle.progress_token);
        if let Some(sink) = progress {
            self.routes.0.lock().unwrap_or_else(|p| p.into_inner()).insert(route.clone(), sink);
        }
        let _route = RouteGuard { routes: &self.routes, key: route };
        let stop = |reason: &str| {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(handle.id.clone()),
                Some(reason.to_string()),
            ));
            let peer = peer.clone();
            async move {
                let _ = peer.send_notification(notification.into()).await;
            }
        };
        let answer = tokio::select! {
            answer = &mut handle.rx => answer,
            _ = tokio::time::sleep(self.spec.tool_timeout) => {
                stop("timeout").await;
                return Err(CallError::Timeout { server: self.spec.name.clone(), ms: self.spec.tool_timeout.as_millis() });
            }
            _ = cancel.cancelled() => {
                stop("the user cancelled the turn").await;
                return Err(CallError::Cancelled);
            }
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
            Ok(Ok(_)) => Err(CallError::Refused {
                server: self.spec.name.clone(),
                message: "it answered with something other than a tool result".into(),
            }),
            Ok(Err(ServiceError::McpError(error))) => {
                Err(CallError::Refused { server: self.spec.name.clone(), message: error.message.to_string() })
            }
            Ok(Err(e)) => {
                self.wait_not_running().await;
                Err(died(e))
            }
            Err(_) => {
                self.wait_not_running().await;
                Err(died(ServiceError::TransportClosed))
            }
        }
    }

    /// After a call lost its connection: waits (briefly) until the server's own task has
    /// noticed, so the next model request already sees it failed.
    async fn wait_not_running(&self) {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.lock().state == State::Running {
            if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
                return;
            }
        }
    }

    /// Restarts the server now: a running one is ended gracefully and started again, one waiting
    /// to restart stops waiting, one left failed starts again; one that is starting goes on.
    pub fn restart(self: &Arc<Self>) {
        {
            let mut inner = self.lock();
            if !inner.active {
                drop(inner);
                return self.ensure_started();
            }
            if inner.state == State::Starting {
                return;
            }
            inner.state = State::Starting;
            inner.starting_until = Some(Instant::now() + self.spec.startup_timeout);
        }
        self.changed.send_modify(|n| *n += 1);
        // The task takes it where it is: serving, or waiting to restart.
        self.restart.notify_one();
    }

    /// Stops the server for good: its program is ended (SIGTERM, then SIGKILL).
    pub async fn stop(&self) {
        self.stop.cancel();
        let mut changes = self.changed.subscribe();
        let deadline = Instant::now() + crate::exec::KILL_GRACE + Duration::from_secs(1);
        while self.lock().active && Instant::now() < deadline {
            let _ = tokio::time::timeout_at(deadline.into(), changes.changed()).await;
        }
    }
}

/// Removes a call's progress route when the call ends.
struct RouteGuard<'a> {
    routes: &'a ProgressRoutes,
    key: String,
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        self.routes.0.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.key);
    }
}

/// The HTTP client's error inside a failed Streamable HTTP handshake (rmcp's errors do not
/// chain it as a `source`).
fn http_failure(error: &rmcp::service::ClientInitializeError) -> Option<&(dyn std::error::Error + 'static)> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let rmcp::service::ClientInitializeError::TransportError { error, .. } = error else { return None };
    match error.error.downcast_ref::<StreamableHttpError<mcp_reqwest::Error>>()? {
        StreamableHttpError::Client(client) => Some(client),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_tail_keeps_the_end() {
        let mut tail = Tail::default();
        tail.push(&vec![b'x'; STDERR_TAIL * 3]);
        tail.push(b"\nthe real error\n");
        assert_eq!(tail.0.len(), STDERR_TAIL);
        assert_eq!(tail.text(15), "the real error");
    }
}
