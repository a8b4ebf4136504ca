//! The language server: the only module that speaks LSP. It hosts agent sessions tied to the
//! workspace folders, streams their events, and carries reviews, permissions and edits between
//! the agent core and the editor.
//!
//! Invariants:
//! - Handlers never await the editor or the model; long work runs in session tasks.
//! - Document sync is applied in arrival order before any handler runs ([`text_sync`]).
//! - Every request to the client has a deadline ([`outbound`]); nothing waits forever.
//! - When the editor leaves (`exit`, or the end of its input), every session ends before
//!   [`serve`] returns: running commands are killed and transcripts written.
//!
//! One file per method family and per job: `server` (lifecycle, routing), `text_sync`,
//! `commands/*`, `code_actions`, `review`, `permission`; `state` (what handlers share),
//! `registry` (open sessions), `assembly` (starting one), `pump` (its events to the editor),
//! `port` and `apply` (the agent's edits to the editor), `protocol` (every `agentls.*` command's
//! name, argument and result, and every `agentls/*` payload),
//! `outbound`, `transport` (the wire), `dispatch` (the message loop), `stdio`, `capabilities`, `convert`.
//!
//! Layering (no import circles): `server` → `commands` → `assembly` → `pump` → `port` →
//! `state` → `registry`, `review`, `permission`, `outbound` → `protocol`, `convert`.

mod apply;
mod assembly;
mod capabilities;
mod code_actions;
mod commands;
mod convert;
mod diagnostics;
mod dispatch;
mod outbound;
mod pending;
mod permission;
mod port;
mod prompt_context;
pub mod protocol;
mod pump;
mod registry;
mod review;
mod server;
mod state;
mod stdio;
mod text_sync;
pub mod transport;
mod trust;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::LspService;

use crate::workspace::DocumentStore;
pub use outbound::Deadlines;
use server::Backend;
pub use state::ServerOptions;
use text_sync::OrderedSync;

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
    let (service, socket) = server::register_custom_methods(LspService::build(|client| {
        let backend = Backend::new(client, options, documents);
        shared = Some(backend.state.clone());
        backend
    }))
    .finish();
    let Some(state) = shared else { return Ended::WithoutShutdown };
    let (to_editor, queued) = tokio::sync::mpsc::channel(OUTPUT_QUEUE);
    // Plain clients get a pause after each response (eglot 1.9: see `write_output`); plugin
    // clients, which stream, get none.
    let writer_state = state.clone();
    let pause_after_response = move || writer_state.is_initialized() && !writer_state.profile().plugin;
    let writer = tokio::spawn(transport::write_output(queued, output, pause_after_response));
    dispatch::run(input, OrderedSync::new(service, state.clone()), socket, to_editor).await;
    // The editor is gone (`exit`, or the end of its input, as when it crashed): every session
    // ends, its commands killed and its transcript written, before the process does.
    state.outbound.editor_gone();
    state.close_all_sessions();
    state.all_sessions_ended(SESSIONS_END_PATIENCE).await;
    state.mcp.shutdown().await;
    let _ = writer.await;
    if state.shutdown_requested.load(std::sync::atomic::Ordering::SeqCst) {
        Ended::AfterShutdown
    } else {
        Ended::WithoutShutdown
    }
}

/// Frames queued for the editor before their producers wait (a text delta is one frame).
const OUTPUT_QUEUE: usize = 256;
/// How long the sessions may take to end after the editor left: a command that ignores SIGTERM
/// is killed after the exec module's grace period.
const SESSIONS_END_PATIENCE: Duration = Duration::from_secs(5);

/// `agentls serve`: LSP over stdio on one thread.
///
/// Everything the server does between a provider's bytes and the editor's notification is a
/// hand-off between tasks (session, pump, framework, writer); on one thread each is a queue
/// push, on several it is a wake-up of another thread per event. Blocking work (file reads,
/// search, commands' I/O) runs on tokio's blocking pool, so it never stalls the loop.
pub fn run_stdio(options: ServerOptions) -> std::io::Result<Ended> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let ended = runtime.block_on(async {
        let (input, output) = stdio::stdio();
        serve(input, output, options).await
    });
    // The stdin reader may sit in a blocking read after `exit`; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(ended)
}
