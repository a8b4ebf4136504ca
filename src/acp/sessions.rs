//! `session/new`, `session/load`, `session/resume`, `session/list`, `session/close`,
//! `session/set_mode` and `session/set_config_option`: sessions built by the one session
//! builder, in the shared transcript store.
//!
//! Invariants:
//! - A session's transcript is the language server's format in the same store: a session
//!   created here is listed and resumed by `agentls.listSessions` / `resumeSession`, and one
//!   created there is loaded or resumed here.
//! - The MCP servers a client passes in `session/new` join the session's configured ones as the
//!   host's own layer (stdio and Streamable HTTP; SSE is refused, as `initialize` says).
//! - A session is registered before its pump runs; its pump is the only reader of its events.
//! - A prompt answers once: at its input's `processing_end`, or, when `session/cancel` dropped
//!   the input before it started, at the cancel's marker. This relies on the agent's
//!   current-thread runtime: a session announces an input (`user_input`) in the same poll that
//!   takes it up, so no cancel falls between the two.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    CloseSessionRequest, CloseSessionResponse, Error, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionInfo, SessionNotification,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use serde_json::Value;
use tokio::sync::oneshot;

use super::fs::{ClientFs, FsAccess};
use super::port::AcpPort;
use super::session::AcpSession;
use super::terminal::ClientTerminal;
use super::updates::Pump;
use super::{Agent, absolute, modes};
use crate::config::{ConfigLayer, McpServerLayer};
use crate::session::{self, ConfigChange, SessionBuilder, SessionParts, Turn};

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(Value::String(message.into()))
}

/// The client's MCP servers as the host's configuration layer.
fn mcp_layer(servers: &[McpServer]) -> Result<Option<BTreeMap<String, McpServerLayer>>, Error> {
    if servers.is_empty() {
        return Ok(None);
    }
    let mut layer = BTreeMap::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(s) => (
                &s.name,
                McpServerLayer {
                    command: Some(s.command.to_string_lossy().into_owned()),
                    args: Some(s.args.clone()),
                    env: Some(s.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect()),
                    ..Default::default()
                },
            ),
            McpServer::Http(h) => (
                &h.name,
                McpServerLayer {
                    url: Some(h.url.clone()),
                    http_headers: Some(h.headers.iter().map(|v| (v.name.clone(), v.value.clone())).collect()),
                    ..Default::default()
                },
            ),
            _ => {
                return Err(invalid(
                    "only stdio and HTTP MCP servers are supported (mcpCapabilities.sse is false)",
                ));
            }
        };
        layer.insert(crate::config::mcp::server_name_from(name), entry);
    }
    Ok(Some(layer))
}

/// What a session starts from.
struct Start {
    id: Option<String>,
    cwd: PathBuf,
    mcp_servers: Vec<McpServer>,
    history: Vec<Turn>,
}

/// Builds a session with the one session builder and starts its pump.
async fn start(agent: &Arc<Agent>, request: Start) -> Result<Arc<AcpSession>, Error> {
    let client = agent.client()?.clone();
    let cwd = absolute(&request.cwd)?;
    let overrides = ConfigLayer { mcp_servers: mcp_layer(&request.mcp_servers)?, ..Default::default() };
    let id = request.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let access = FsAccess { read: client.fs.read_text_file, write: client.fs.write_text_file };
    let wire = Arc::clone(&agent.wire);
    let (asks_tx, asks) = tokio::sync::mpsc::unbounded_channel();
    let mut builder = SessionBuilder::load(&agent.env, cwd.clone(), overrides)
        .map_err(|e| Error::internal_error().data(Value::String(e.to_string())))?;
    if client.terminal {
        let local = crate::exec::LocalOptions::from_config(builder.config(), &cwd);
        let (wire, pump) = (Arc::clone(&wire), asks_tx.clone());
        builder = builder.wrap_environment(|inner| {
            Arc::new(ClientTerminal::new(inner, wire, &id, pump, local.env_policy, local.limits))
        });
    }
    let builder = builder.wrap_environment(|inner| Arc::new(ClientFs::new(inner, wire, &id, access)));
    if let Some(report) = builder.trust().and_then(|t| t.report()) {
        tracing::warn!("{report}");
    }
    let env = builder.environment();
    let port = Arc::new(AcpPort::new(asks_tx, builder.environment(), super::review::opted_in(&client)));
    let resumed = !request.history.is_empty();
    let built = builder
        .build(SessionParts {
            id: Some(id.clone()),
            profile: None,
            history: request.history,
            documents: None,
            editor: port.clone(),
            permission_rules: Arc::clone(&agent.rules),
            extra_tools: Vec::new(),
            transcripts: agent
                .transcripts
                .clone()
                .map(|store| Arc::new(store) as Arc<dyn session::Transcripts>),
            mcp: Some(Arc::clone(&agent.mcp)),
            // As the language server's: the recording wraps the port and the environment above
            // (`/undo` and `/redo` in `commands.rs`).
            checkpoints: agent.data_dir.clone(),
        })
        .await
        .map_err(|e| Error::internal_error().data(Value::String(e.to_string())))?;
    let (profile, model) = (built.profile, built.model.clone());
    let provider = built.options.client.settings().kind;
    let (handle, events) = session::spawn(built.options);
    let _ = port.handle.set(handle.clone());
    let (ended_tx, ended) = oneshot::channel();
    let session = Arc::new(AcpSession {
        id: id.clone(),
        cwd,
        handle,
        provider,
        turns: Mutex::default(),
        titled: AtomicBool::new(resumed),
        ended: Mutex::new(Some(ended)),
        env,
        mcp: built.mcp.clone(),
        prompts: tokio::sync::OnceCell::new(),
    });
    agent.sessions().insert(id.clone(), Arc::clone(&session));
    tracing::info!(session = %id, profile = profile.as_str(), model = %model, resumed, "ACP session started");
    let pump = Pump::new(
        Arc::clone(&session),
        Arc::clone(&agent.wire),
        built.transcript,
        super::convert::Shows::of(&client),
    );
    tokio::spawn(async move {
        pump.run(events, asks).await;
        let _ = ended_tx.send(());
    });
    Ok(session)
}

pub async fn new_session(
    agent: &Arc<Agent>,
    request: NewSessionRequest,
) -> Result<(NewSessionResponse, Arc<AcpSession>), Error> {
    let session = start(
        agent,
        Start { id: None, cwd: request.cwd, mcp_servers: request.mcp_servers, history: Vec::new() },
    )
    .await?;
    let response = NewSessionResponse::new(session.id.clone())
        .modes(session.mode_state())
        .config_options(session.config_options());
    Ok((response, session))
}

/// A stored session's history, or an error naming what is wrong.
fn stored(agent: &Agent, id: &str) -> Result<Vec<Turn>, Error> {
    let store = agent.transcripts.as_ref().ok_or_else(|| {
        Error::internal_error().data(Value::String("no data directory: sessions are not stored".into()))
    })?;
    let transcript = store.load(id).map_err(|e| match e {
        crate::store::StoreError::NotFound(_) | crate::store::StoreError::BadId(_) => {
            Error::session_not_found(id.to_string())
        }
        other => Error::internal_error().data(Value::String(other.to_string())),
    })?;
    Ok(crate::store::history(&transcript.records))
}

/// An open session, or the stored one started again with its history.
async fn reopen(
    agent: &Arc<Agent>,
    id: &str,
    cwd: PathBuf,
    mcp_servers: Vec<McpServer>,
) -> Result<(Arc<AcpSession>, Vec<Turn>), Error> {
    if let Some(open) = agent.sessions().get(id).cloned() {
        let history = open.handle.history();
        return Ok((open, history));
    }
    let history = stored(agent, id)?;
    let session =
        start(agent, Start { id: Some(id.to_string()), cwd, mcp_servers, history: history.clone() }).await?;
    Ok((session, history))
}

pub async fn load_session(
    agent: &Arc<Agent>,
    request: LoadSessionRequest,
) -> Result<(LoadSessionResponse, Arc<AcpSession>), Error> {
    let (session, history) = reopen(agent, &request.session_id.0, request.cwd, request.mcp_servers).await?;
    let shows = super::convert::Shows::of(agent.client()?);
    for update in super::replay::updates(&history, &session.cwd, shows) {
        agent.wire.notify("session/update", SessionNotification::new(session.id.clone(), update));
    }
    let response =
        LoadSessionResponse::new().modes(session.mode_state()).config_options(session.config_options());
    Ok((response, session))
}

pub async fn resume_session(
    agent: &Arc<Agent>,
    request: ResumeSessionRequest,
) -> Result<(ResumeSessionResponse, Arc<AcpSession>), Error> {
    let (session, _) = reopen(agent, &request.session_id.0, request.cwd, request.mcp_servers).await?;
    let response =
        ResumeSessionResponse::new().modes(session.mode_state()).config_options(session.config_options());
    Ok((response, session))
}

pub fn list_sessions(
    agent: &Arc<Agent>,
    request: ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let cwd = request.cwd.map(|cwd| cwd.canonicalize().unwrap_or(cwd));
    let open: Vec<Arc<AcpSession>> = agent.sessions().values().cloned().collect();
    let mut sessions: Vec<SessionInfo> =
        open.iter().map(|s| SessionInfo::new(s.id.clone(), s.cwd.clone())).collect();
    if let Some(store) = &agent.transcripts {
        match store.list() {
            Ok(stored) => sessions.extend(
                stored.into_iter().filter(|t| !open.iter().any(|s| s.id == t.header.session_id)).map(|t| {
                    let title = (!t.title.is_empty()).then(|| super::convert::title_of(&t.title));
                    SessionInfo::new(t.header.session_id, t.header.root)
                        .title(title)
                        .updated_at(t.header.created)
                }),
            ),
            Err(e) => tracing::warn!("cannot list stored sessions: {e}"),
        }
    }
    sessions.retain(|s| cwd.as_ref().is_none_or(|cwd| s.cwd == *cwd));
    Ok(ListSessionsResponse::new(sessions))
}

pub async fn close_session(
    agent: &Arc<Agent>,
    request: CloseSessionRequest,
) -> Result<CloseSessionResponse, Error> {
    let session = agent.session(&request.session_id.0)?;
    agent.sessions().remove(&session.id);
    session.close();
    session.ended().await;
    Ok(CloseSessionResponse::new())
}

pub fn set_mode(agent: &Arc<Agent>, request: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
    let session = agent.session(&request.session_id.0)?;
    let approval = modes::approval_of(&request.mode_id.0)
        .ok_or_else(|| invalid(format!("unknown mode `{}`", request.mode_id.0)))?;
    session.handle.configure(ConfigChange { approval: Some(approval), ..Default::default() });
    Ok(SetSessionModeResponse::new())
}

pub fn set_config_option(
    agent: &Arc<Agent>,
    request: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, Error> {
    let session = agent.session(&request.session_id.0)?;
    let value = request
        .value
        .as_value_id()
        .map(|v| v.0.to_string())
        .ok_or_else(|| invalid("a select option's value id"))?;
    let change = match &*request.config_id.0 {
        modes::MODE_OPTION => ConfigChange {
            approval: Some(
                modes::approval_of(&value).ok_or_else(|| invalid(format!("unknown mode `{value}`")))?,
            ),
            ..Default::default()
        },
        modes::MODEL_OPTION => ConfigChange { model: Some(value), ..Default::default() },
        modes::EFFORT_OPTION => {
            let current = session.current();
            if !crate::llm::capabilities(current.provider, &current.model).reasoning_effort {
                return Err(invalid(format!("the model `{}` takes no reasoning effort", current.model)));
            }
            let effort = modes::effort_of(&value).ok_or_else(|| {
                invalid(format!("unknown reasoning effort `{value}`: default, minimal, low, medium or high"))
            })?;
            ConfigChange { reasoning_effort: Some(effort), ..Default::default() }
        }
        other => return Err(invalid(format!("unknown config option `{other}`"))),
    };
    session.handle.configure(change);
    Ok(SetSessionConfigOptionResponse::new(session.config_options()))
}
