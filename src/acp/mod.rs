//! `agentls acp`: the Agent Client Protocol front door (protocol version 1, newline-delimited
//! JSON-RPC on stdio), a third host of the same session core as the language server and
//! `agentls exec`. Sessions are built by the one session builder, stored in the same transcript
//! store (a session started here can be resumed from the language server and the other way
//! round), and behind the one permission policy.
//!
//! One file per method family: `lifecycle.rs` (`initialize`), `session.rs` (one session's
//! state: its handle, its running prompt), `sessions.rs` (`session/new`,
//! `load`, `resume`, `list`, `close`, modes and config options), `prompt.rs` (`session/prompt`,
//! `session/cancel`, the built-in slash commands), `commands.rs` the other commands (`/undo`,
//! `/redo`, the MCP servers' prompts); `updates.rs` turns a session's events into
//! `session/update` (and asks the permission questions in order with them), `convert.rs` the
//! conversions it shares with `replay.rs` and `subagents.rs`, `subagents.rs`
//! a session's children into `subagent_update` and their own updates, `replay.rs` a
//! stored history into the updates `session/load` replays; `port.rs` is the editor port
//! (review and permission through `session/request_permission`), `review.rs` the per-hunk review
//! extension in `_meta`, `fs.rs` the files through the client, `terminal.rs` the commands in
//! the client's terminal; `wire.rs` the JSON-RPC line transport.
//!
//! Invariants:
//! - Nothing but protocol is written to stdout; logs go to the log file.
//! - A client method is called only when the client advertised it (`fs/*` and `terminal/*` in
//!   `initialize`'s `clientCapabilities`); nothing is asked before `initialize`.
//! - Handlers run as tasks of their own: a running prompt never holds up `session/cancel` or a
//!   permission answer.
//! - When the client leaves (end of stdin), every session ends (commands stopped, transcripts
//!   written) before the process does.

mod commands;
mod convert;
mod fs;
mod lifecycle;
mod modes;
mod port;
mod prompt;
mod replay;
mod review;
mod session;
mod sessions;
mod subagents;
mod terminal;
mod updates;
mod wire;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol_schema::MethodDispatchError;
use agent_client_protocol_schema::v1::{
    ClientCapabilities, ClientNotification, ClientRequest, Error, RequestId,
};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::config::Env;
use crate::policy::PermissionRules;
use crate::store::TranscriptStore;

pub use session::AcpSession;
use wire::Wire;

/// The agent: what every handler shares.
pub struct Agent {
    env: Env,
    wire: Arc<Wire>,
    /// The client's capabilities, from `initialize`; unset before it.
    client: OnceLock<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    transcripts: Option<TranscriptStore>,
    /// Where sessions keep their checkpoints; `None`: no data directory, no undo.
    data_dir: Option<PathBuf>,
    rules: Arc<PermissionRules>,
    mcp: Arc<crate::mcp::McpHub>,
}

impl Agent {
    fn new(env: Env, wire: Arc<Wire>) -> Self {
        let data_dir = crate::store::data_dir(&env);
        Self {
            transcripts: data_dir.as_deref().map(TranscriptStore::new),
            rules: Arc::new(PermissionRules::open(data_dir.as_deref())),
            data_dir,
            env,
            wire,
            client: OnceLock::new(),
            sessions: Mutex::new(HashMap::new()),
            mcp: crate::mcp::McpHub::new(),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<AcpSession>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An open session, or `session not found`.
    fn session(&self, id: &str) -> Result<Arc<AcpSession>, Error> {
        self.sessions().get(id).cloned().ok_or_else(|| Error::session_not_found(id.to_string()))
    }

    /// The client's capabilities, or an error before `initialize`.
    fn client(&self) -> Result<&ClientCapabilities, Error> {
        self.client.get().ok_or_else(|| {
            Error::invalid_request().data(Value::String("`initialize` must come first".into()))
        })
    }
}

/// Runs the agent on stdin/stdout until the client closes stdin, on one thread (a current-thread
/// runtime, as `agentls serve`; `sessions.rs` relies on it for `session/cancel`).
pub fn run(env: Env) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let (out, lines) = tokio::sync::mpsc::unbounded_channel();
        let writer = tokio::spawn(wire::write_lines(lines));
        let agent = Arc::new(Agent::new(env, Arc::new(Wire::new(out))));
        let mut input = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            match input.next_line().await {
                Ok(Some(line)) if line.trim().is_empty() => continue,
                Ok(Some(line)) => receive(&agent, &line),
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("stdin: {e}");
                    break;
                }
            }
        }
        tracing::info!("the client closed stdin; ending every session");
        agent.wire.close();
        let sessions: Vec<Arc<AcpSession>> = agent.sessions().drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.close();
        }
        for session in sessions {
            session.ended().await;
        }
        agent.mcp.shutdown().await;
        drop(agent);
        let _ = writer.await;
    });
    Ok(())
}

/// One line from the client: a request, a notification or a response.
fn receive(agent: &Arc<Agent>, line: &str) {
    let message: Value = match serde_json::from_str(line) {
        Ok(message @ Value::Object(_)) => message,
        // JSON, but no message (ACP uses no batches).
        Ok(_) => {
            agent.wire.respond(RequestId::Null, Err(Error::invalid_request()));
            return;
        }
        Err(_) => {
            tracing::warn!("a line that is not JSON: {}", line.chars().take(200).collect::<String>());
            agent.wire.respond(RequestId::Null, Err(Error::parse_error()));
            return;
        }
    };
    let id = message
        .get("id")
        .map(|id| serde_json::from_value::<RequestId>(id.clone()).unwrap_or(RequestId::Null));
    let Some(method) = message.get("method").and_then(Value::as_str).map(str::to_string) else {
        if id.is_some() && (message.get("result").is_some() || message.get("error").is_some()) {
            agent.wire.answered(&message);
        } else {
            agent.wire.respond(id.unwrap_or(RequestId::Null), Err(Error::invalid_request()));
        }
        return;
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match id {
        Some(id) => {
            let agent = Arc::clone(agent);
            tokio::spawn(async move {
                let result = match ClientRequest::from_method_and_params(&method, &params) {
                    Ok(request) => handle(&agent, request).await,
                    Err(error) => Err(dispatch_error(error)),
                };
                if let Err(error) = &result {
                    tracing::info!("{method} failed: {} {:?}", error.message, error.data);
                }
                let after = result.as_ref().ok().and_then(|(_, after)| after.clone());
                agent.wire.respond(id, result.map(|(value, _)| value));
                if let Some(session) = after {
                    commands::announce(&session, &agent.wire);
                }
            });
        }
        None => match ClientNotification::from_method_and_params(&method, &params) {
            Ok(ClientNotification::CancelNotification(cancel)) => {
                if let Ok(session) = agent.session(&cancel.session_id.0) {
                    session.cancel();
                }
            }
            Ok(_) => tracing::debug!("notification {method} ignored"),
            Err(error) => tracing::warn!("notification {method}: {error}"),
        },
    }
}

fn dispatch_error(error: MethodDispatchError) -> Error {
    match error {
        MethodDispatchError::UnknownMethod { .. } => Error::method_not_found(),
        // The message may hold input values: it goes to the client that sent them, not the log.
        MethodDispatchError::InvalidPayload { source, .. } => {
            Error::invalid_params().data(Value::String(source.to_string()))
        }
        _ => Error::invalid_request(),
    }
}

/// A handler's result, and the session whose commands and options are announced after it.
type Handled = Result<(Value, Option<Arc<AcpSession>>), Error>;

fn value(result: impl serde::Serialize) -> Result<Value, Error> {
    serde_json::to_value(result).map_err(Error::into_internal_error)
}

async fn handle(agent: &Arc<Agent>, request: ClientRequest) -> Handled {
    if !matches!(request, ClientRequest::InitializeRequest(_)) {
        agent.client()?;
    }
    match request {
        ClientRequest::InitializeRequest(request) => {
            Ok((value(lifecycle::initialize(agent, request)?)?, None))
        }
        ClientRequest::AuthenticateRequest(_) => Ok((Value::Object(Default::default()), None)),
        ClientRequest::NewSessionRequest(request) => {
            let (response, session) = sessions::new_session(agent, request).await?;
            Ok((value(response)?, Some(session)))
        }
        ClientRequest::LoadSessionRequest(request) => {
            let (response, session) = sessions::load_session(agent, request).await?;
            Ok((value(response)?, Some(session)))
        }
        ClientRequest::ResumeSessionRequest(request) => {
            let (response, session) = sessions::resume_session(agent, request).await?;
            Ok((value(response)?, Some(session)))
        }
        ClientRequest::ListSessionsRequest(request) => {
            Ok((value(sessions::list_sessions(agent, request)?)?, None))
        }
        ClientRequest::CloseSessionRequest(request) => {
            Ok((value(sessions::close_session(agent, request).await?)?, None))
        }
        ClientRequest::SetSessionModeRequest(request) => {
            Ok((value(sessions::set_mode(agent, request)?)?, None))
        }
        ClientRequest::SetSessionConfigOptionRequest(request) => {
            Ok((value(sessions::set_config_option(agent, request)?)?, None))
        }
        ClientRequest::PromptRequest(request) => Ok((value(prompt::prompt(agent, request).await?)?, None)),
        _ => Err(Error::method_not_found()),
    }
}

/// A session's working directory: absolute (as ACP requires), canonical, and a directory.
fn absolute(cwd: &std::path::Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params()
            .data(Value::String(format!("cwd must be an absolute path, not {}", cwd.display()))));
    }
    let cwd = cwd.canonicalize().map_err(|e| {
        Error::invalid_params().data(Value::String(format!("cwd {} is not usable: {e}", cwd.display())))
    })?;
    if !cwd.is_dir() {
        return Err(
            Error::invalid_params().data(Value::String(format!("cwd {} is not a directory", cwd.display())))
        );
    }
    Ok(cwd)
}
