//! The one session builder: every host (the language server, `agentls exec`) assembles its
//! sessions here — configuration, provider resolution, model client, workspace, execution
//! environment, tools and transcript — and adds only what is its own (the editor port).
//!
//! Invariants:
//! - Two steps: [`SessionBuilder::load`] reads the configuration and makes the execution
//!   environment (the host builds its editor port from them: the port commits to that
//!   environment's files), [`SessionBuilder::build`] resolves the provider and assembles the rest.
//! - The local-server probe (a TCP connect, only when no provider is configured and no key is
//!   set) runs on a blocking thread, never on an async worker; a session that needs no probe
//!   is resolved inline, without a thread.
//! - Every failure is a typed [`BuildError`]; hosts map its kind (exit code, JSON-RPC error)
//!   and show its whole message.
//! - Every session's editor port is behind the one permission policy ([`crate::policy`]): no
//!   host decides shell permission itself.
//! - MCP servers start when their first session is built, in the background: building never
//!   waits for them (the session's first model call does, bounded by their startup timeouts).
//! - The project file is read under the user's workspace trust (`config::trust`); what it was
//!   not allowed to set is in [`SessionBuilder::trust`] for the host to report.
//! - The transcript is the host's: the builder opens it through the host's [`Transcripts`] and
//!   never knows where it is kept.

use std::path::PathBuf;
use std::sync::Arc;

use super::transcript::{NewTranscript, StoredSession, TranscriptBusy, TranscriptSink, Transcripts};
use super::{HistorySink, SessionConfig, SessionOptions, Turn};
use crate::checkpoint::{
    Checkpoints, RecordingEnvironment, RecordingPort, RecordingTool, RecordingToolSource,
};
use crate::config::{
    Approval, Config, ConfigError, ConfigLayer, Env, LoadOptions, ProfileKind, ProjectTrust, ResolveError,
    SearchProvider, provider, resolve_provider, resolve_search_provider,
};
use crate::exec::{ExecutionEnvironment, LocalExecutionEnvironment, LocalOptions};
use crate::llm::{self, LlmError};
use crate::mcp::McpHub;
use crate::policy::{McpRules, PermissionRules, PolicedPort, ShellPolicy};
use crate::tools::codebase_search::CodebaseSearchTool;
use crate::tools::{ModelAccess, Tool};
use crate::workspace::{DocumentStore, EditorPort, Workspace};

/// Why a session could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The configuration files, flags or editor settings are invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No usable provider (nothing configured, a missing key).
    #[error(transparent)]
    Provider(#[from] ResolveError),
    /// The model client could not be built (a bad base URL, an unreadable cassette).
    #[error(transparent)]
    Client(LlmError),
    /// The stored session is open in another process.
    #[error(transparent)]
    Busy(#[from] TranscriptBusy),
}

/// What a host asks for besides the configuration.
pub struct SessionParts {
    /// A stored session's id when resuming; a new one otherwise.
    pub id: Option<String>,
    /// `None`: the profile aligned with the resolved provider.
    pub profile: Option<ProfileKind>,
    /// The history to resume from (empty for a new session).
    pub history: Vec<Turn>,
    /// The editor's open documents (the language server); `None` reads the disk only.
    pub documents: Option<Arc<DocumentStore>>,
    /// Where change sets, permission requests and saves go; the builder puts the session's
    /// permission policy in front of it, so the host's port is asked only what the policy asks.
    pub editor: Arc<dyn EditorPort>,
    /// The "always allow" rules the policy reads and stores (one per host process).
    pub permission_rules: Arc<PermissionRules>,
    /// Tools added to the profile's own (embedders', the editor's diagnostics); code mode takes none.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// Where the session's transcript is kept (created, or reopened when resuming); `None`
    /// keeps the session in memory only.
    pub transcripts: Option<Arc<dyn Transcripts>>,
    /// The host's MCP servers; the session uses the ones its configuration names. `None`: no
    /// MCP tools.
    pub mcp: Option<Arc<McpHub>>,
    /// The data directory the session's checkpoints are kept under (`checkpoints/<id>`, those
    /// of a resumed session reopened); `None` records none (no undo).
    pub checkpoints: Option<PathBuf>,
}

/// A session ready to spawn, with what its host shows about it.
pub struct BuiltSession {
    pub options: SessionOptions,
    pub id: String,
    pub profile: ProfileKind,
    pub model: String,
    /// `None` without a store, or when the transcript could not be opened (logged). The
    /// session writes its history through it; the host adds subagents and input ends.
    pub transcript: Option<Arc<dyn TranscriptSink>>,
    /// The session's MCP servers (a host offers their prompts); `None` without a hub, or in
    /// code mode.
    pub mcp: Option<Arc<crate::mcp::McpTools>>,
}

/// A session whose configuration is loaded.
pub struct SessionBuilder {
    env: Env,
    root: PathBuf,
    config: Config,
    default_approval: Approval,
    /// Where the session's tools run and its files are written.
    environment: Arc<dyn ExecutionEnvironment>,
}

impl SessionBuilder {
    /// Loads the configuration for a session rooted at `root`; `overrides` are the host's own
    /// layer (command-line flags, editor settings), highest of all.
    pub fn load(env: &Env, root: PathBuf, overrides: ConfigLayer) -> Result<Self, BuildError> {
        let options = LoadOptions { project_root: Some(root.clone()), overrides, ..Default::default() };
        let config = Config::load(env, options)?;
        let mut local = LocalOptions::from_config(&config, &root);
        local.roots = vec![root.clone()];
        let environment = Arc::new(LocalExecutionEnvironment::with_options(local));
        Ok(Self { env: env.clone(), root, config, default_approval: Approval::Review, environment })
    }

    /// The session's execution environment: its editor port writes files through it.
    pub fn environment(&self) -> Arc<dyn ExecutionEnvironment> {
        Arc::clone(&self.environment)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Puts a host's layer in front of the execution environment (the ACP front door reads and
    /// writes files through its client); every tool, and the port built after this, uses it.
    pub fn wrap_environment(
        mut self,
        wrap: impl FnOnce(Arc<dyn ExecutionEnvironment>) -> Arc<dyn ExecutionEnvironment>,
    ) -> Self {
        self.environment = wrap(self.environment);
        self
    }

    /// The project file's trust, when one was read.
    pub fn trust(&self) -> Option<&ProjectTrust> {
        self.config.trust.as_ref()
    }

    /// The approval used when no layer sets one (`agentls exec` applies edits by default; an
    /// editor reviews them).
    pub fn default_approval(mut self, approval: Approval) -> Self {
        self.default_approval = approval;
        self
    }

    /// The approval this session will use.
    pub fn approval(&self) -> Approval {
        self.config.approval(self.default_approval)
    }

    /// Opens the connection to the provider a session would use, in the background, when it is
    /// named or keyed (no probe of a local server); nothing happens when none resolves.
    pub fn warm_provider(&self) {
        if let Ok(settings) = resolve_provider(&self.config, &self.env, || false) {
            llm::http::warm(&settings);
        }
    }

    /// Resolves the provider and assembles the session.
    pub async fn build(self, parts: SessionParts) -> Result<BuiltSession, BuildError> {
        let Self { env, root, config, default_approval: _, environment } = &self;
        // Resolving needs the probe only when nothing names a provider and no key is set; only
        // then is it worth a blocking-pool thread.
        let mut needs_probe = false;
        let settings = match resolve_provider(config, env, || {
            needs_probe = true;
            false
        }) {
            resolved if !needs_probe => resolved?,
            _ => {
                let (config, env) = (config.clone(), env.clone());
                let resolved = tokio::task::spawn_blocking({
                    let (config, env) = (config.clone(), env.clone());
                    move || resolve_provider(&config, &env, provider::local_server_listening)
                })
                .await;
                match resolved {
                    Ok(settings) => settings?,
                    // The probe panicked: resolve as if nothing listened locally.
                    Err(_) => resolve_provider(&config, &env, || false)?,
                }
            }
        };
        let model = settings.model.clone();
        let profile = config
            .profile(parts.profile, Some(settings.kind))
            .unwrap_or_else(|| ProfileKind::for_provider(settings.kind));
        let search = resolve_search_provider(config, env)?;
        let client = llm::Client::from_config(config, settings).map_err(BuildError::Client)?;
        let documents = parts.documents.unwrap_or_default();
        let workspace = Arc::new(Workspace::new(documents));
        let mut session_config = SessionConfig::from_config(config, model.clone());
        session_config.approval = self.approval();
        let id = parts.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut history = parts.history;
        let resumed = history.len();
        // A resumed session's subagents come back with it, from the same transcript, and a turn
        // the server died in is closed for the model (`recovery`).
        let mut stored = StoredSession::default();
        let transcript = match parts.transcripts {
            None => None,
            Some(transcripts) if resumed > 0 => match reopen(transcripts.as_ref(), &id).await {
                Ok((transcript, found)) => {
                    // Read with the transcript held: what the last writer wrote as it let go
                    // (a server exiting under a restart) is in it.
                    stored = found;
                    history = std::mem::take(&mut stored.history);
                    Some(transcript)
                }
                // Another process writes this session: going on here would fork it.
                Err(OpenError::Busy(busy)) => return Err(BuildError::Busy(busy)),
                Err(OpenError::Other(e)) => {
                    tracing::warn!(
                        "session {id} will not be stored, and its subagents are not restored: {e}"
                    );
                    None
                }
            },
            Some(transcripts) => {
                let new = NewTranscript {
                    session_id: id.clone(),
                    root: root.clone(),
                    profile,
                    model: model.clone(),
                };
                transcripts
                    .create(&new)
                    .map_err(|e| tracing::warn!("session {id} will not be stored: {e}"))
                    .ok()
            }
        };
        if resumed > 0 {
            let closing = super::recovery::close_interrupted(&history, stored.interrupted);
            if !closing.is_empty() {
                tracing::info!(session = %id, "the resumed session's last turn was interrupted");
                if let Some(transcript) = &transcript {
                    closing.iter().for_each(|turn| transcript.appended(turn));
                    transcript.input_ended("interrupted");
                }
                history.extend(closing);
            }
        }
        let mut tools = profile.tools();
        let native_tools = config.search().native_tools.unwrap_or(true);
        if (search.is_some() || !native_tools) && tools.iter().any(|t| t.name() == "codebase_search") {
            let mut tool = CodebaseSearchTool::new().native_tools(native_tools);
            tool = match search {
                None => tool,
                Some(SearchProvider::SessionProvider { model }) => {
                    tool.with_model(ModelAccess { client: client.clone(), model })
                }
                Some(SearchProvider::Own(settings)) => tool.with_model(ModelAccess {
                    model: settings.model.clone(),
                    client: llm::Client::from_config(config, settings).map_err(BuildError::Client)?,
                }),
            };
            // A later tool of the same name replaces the profile's (which asks the session's model).
            tools.push(Arc::new(tool));
        }
        // Code mode's model has exactly one tool, the REPL (its prompt says so).
        if profile != ProfileKind::Code {
            tools.extend(parts.extra_tools);
        }
        let policy = ShellPolicy::new(&config.shell(), root.clone(), parts.permission_rules)
            .with_mcp(McpRules::from_config(config));
        // Code mode's model has only its REPL; every other profile gets the configured servers,
        // started now in the background.
        let mcp = match (parts.mcp, profile) {
            (Some(hub), profile) if profile != ProfileKind::Code => Some(hub.session(config, env, root)),
            _ => None,
        };
        let tool_source = mcp.clone().map(|tools| tools as Arc<dyn crate::tools::ToolSource>);
        let mut env = Arc::clone(environment);
        let mut editor: Arc<dyn EditorPort> = Arc::new(PolicedPort::new(parts.editor, policy));
        let checkpoints = parts.checkpoints.and_then(|dir| {
            Checkpoints::open(&dir, &id, root)
                .map_err(|e| tracing::warn!("session {id} records no checkpoints (no undo): {e}"))
                .ok()
                .map(Arc::new)
        });
        let (mut tools, mut tool_source) = (tools, tool_source);
        if let Some(checkpoints) = &checkpoints {
            editor =
                Arc::new(RecordingPort::new(editor, checkpoints.clone(), workspace.clone(), env.clone()));
            env = Arc::new(RecordingEnvironment::new(env, checkpoints.clone()));
            // MCP servers and code mode's Python change files outside the environment.
            tools = RecordingTool::wrap_all(tools, checkpoints);
            tool_source = tool_source.map(|source| {
                Arc::new(RecordingToolSource::new(source, checkpoints.clone()))
                    as Arc<dyn crate::tools::ToolSource>
            });
        }
        let options = SessionOptions {
            id: Some(id.clone()),
            profile,
            client,
            env,
            workspace,
            editor,
            config: session_config,
            cwd: root.clone(),
            history,
            agents: stored.agents,
            tools,
            transcript: transcript.clone().map(|t| t as Arc<dyn HistorySink>),
            tool_source,
            checkpoints,
        };
        Ok(BuiltSession { options, id, profile, model, transcript, mcp })
    }
}

/// How long a resume waits for another process to let go of the session (a server restarting
/// under the same editor: the old one is still exiting when the new one reopens the session).
const HANDOVER: std::time::Duration = std::time::Duration::from_secs(3);

enum OpenError {
    Busy(TranscriptBusy),
    Other(super::transcript::TranscriptError),
}

/// Reopens stored session `id`'s transcript, waiting up to [`HANDOVER`] while another process
/// holds it.
async fn reopen(
    transcripts: &dyn Transcripts,
    id: &str,
) -> Result<(Arc<dyn TranscriptSink>, StoredSession), OpenError> {
    let deadline = tokio::time::Instant::now() + HANDOVER;
    loop {
        match transcripts.reopen(id).map_err(|e| e.downcast::<TranscriptBusy>()) {
            Ok(transcript) => return Ok(transcript),
            Err(Ok(_)) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(Ok(busy)) => return Err(OpenError::Busy(*busy)),
            Err(Err(other)) => return Err(OpenError::Other(other)),
        }
    }
}
