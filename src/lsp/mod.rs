//! The language server: the only module that speaks LSP. It hosts agent sessions tied to the
//! workspace folders, streams their events, and carries reviews, permissions and edits between
//! the agent core and the editor.
//!
//! Invariants:
//! - Handlers never await the editor or the model; long work runs in session tasks.
//! - Document sync is applied in arrival order before any handler runs ([`text_sync`]).
//! - Every request to the client has a deadline ([`outbound`]); nothing waits forever.
//!
//! One file per method family: `server` (lifecycle, routing), `text_sync`, `commands/*`,
//! `permission`, `capabilities`, `convert`, `outbound`.

pub mod apply;
pub mod capabilities;
pub mod code_actions;
pub mod commands;
pub mod convert;
pub mod diagnostics;
pub mod outbound;
pub mod pending;
pub mod permission;
pub mod port;
mod prompt_context;
pub mod review;
pub mod server;
pub mod sessions;
pub mod text_sync;
pub mod transport;
pub mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server};

use crate::config::Env;
use crate::tools::Tool;
use crate::workspace::DocumentStore;
pub use outbound::Deadlines;
use server::Backend;
use text_sync::OrderedSync;

/// How a server instance is set up (the binary builds it from the environment; tests build it
/// directly).
#[derive(Clone)]
pub struct ServerOptions {
    pub env: Env,
    pub deadlines: Deadlines,
    /// Where transcripts and permission rules live; `None` keeps them in memory only.
    pub data_dir: Option<PathBuf>,
    /// Tools every session gets in addition to its profile's (embedders' custom tools).
    pub extra_tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("deadlines", &self.deadlines)
            .field("data_dir", &self.data_dir)
            .field("extra_tools", &self.extra_tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>())
            .finish()
    }
}

impl ServerOptions {
    /// Options from the environment: `AGENTLS_DATA_DIR`, `AGENTLS_CLIENT_TIMEOUT_MS` (the
    /// deadline for requests the editor answers by itself) and `AGENTLS_QUESTION_TIMEOUT_MS`
    /// (how long a review or permission question waits for the user).
    pub fn from_env(env: Env) -> Self {
        let mut deadlines = Deadlines::default();
        for (name, deadline) in [
            ("AGENTLS_CLIENT_TIMEOUT_MS", &mut deadlines.request),
            ("AGENTLS_QUESTION_TIMEOUT_MS", &mut deadlines.human),
        ] {
            let Some(value) = env.get(name) else { continue };
            match value.trim().parse::<u64>() {
                Ok(ms) => *deadline = Duration::from_millis(ms.max(1)),
                Err(_) => tracing::warn!(
                    "{name}=`{value}` is not a number of milliseconds; using {} ms",
                    deadline.as_millis()
                ),
            }
        }
        let data_dir = crate::store::data_dir(&env);
        Self { env, deadlines, data_dir, extra_tools: Vec::new() }
    }
}

/// How serving ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// `shutdown` came before `exit` (or the end of input): exit code 0.
    AfterShutdown,
    /// `exit` or the end of input without `shutdown`: exit code 1, as the LSP specification says.
    WithoutShutdown,
}

/// Serves one client over `input`/`output` until it exits or the input closes.
pub async fn serve<I, O>(input: I, output: O, options: ServerOptions) -> Ended
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let documents = Arc::new(DocumentStore::new());
    let mut shared = None;
    let (service, socket) = commands::register_custom_methods(LspService::build(|client| {
        let backend = Backend::new(client, options, documents);
        shared = Some(backend.state.clone());
        backend
    }))
    .finish();
    let Some(state) = shared else { return Ended::WithoutShutdown };
    // The framework sits between two pipes; the guard answers malformed input itself.
    let (to_server, server_input) = tokio::io::duplex(PIPE_BYTES);
    let (server_output, from_server) = tokio::io::duplex(PIPE_BYTES);
    let (replies_tx, replies_rx) = tokio::sync::mpsc::unbounded_channel();
    let guard = tokio::spawn(transport::guard_input(input, to_server, replies_tx));
    // Plain clients get a pause after each response (eglot 1.9: see `merge_output`); plugin
    // clients, which stream, get none.
    let writer_state = state.clone();
    let pause_after_response = move || writer_state.is_initialized() && !writer_state.profile().plugin;
    let writer = tokio::spawn(transport::merge_output(from_server, replies_rx, output, pause_after_response));
    Server::new(server_input, server_output, socket).serve(OrderedSync::new(service, state.clone())).await;
    guard.abort();
    let _ = writer.await;
    if state.shutdown_requested.load(std::sync::atomic::Ordering::SeqCst) {
        Ended::AfterShutdown
    } else {
        Ended::WithoutShutdown
    }
}

const PIPE_BYTES: usize = 256 << 10;

/// `agentls serve`: LSP over stdio on a multi-threaded runtime.
pub fn run_stdio(options: ServerOptions) -> std::io::Result<Ended> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let ended = runtime.block_on(serve(tokio::io::stdin(), tokio::io::stdout(), options));
    // The stdin reader may sit in a blocking read after `exit`; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(ended)
}
