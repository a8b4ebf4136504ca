//! The state every handler and every session task shares, and how a server instance is set up.
//!
//! Invariants:
//! - Nothing outside `lsp` sees this type; inside, fields are read directly and changed only
//!   through the methods here (roots, client settings, the client's profile).
//! - This module imports no other part of `lsp` that imports it back: handlers, the pump and
//!   the editor port depend on the state, never the other way round.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::MessageType;

use super::capabilities::ClientProfile;
use super::outbound::{Deadlines, Outbound};
use super::permission::PermissionBroker;
use super::registry::{LspSession, SessionRegistry};
use super::review::ReviewBroker;
use crate::config::{ConfigError, ConfigLayer, Env};
use crate::exec::LocalExecutionEnvironment;
use crate::policy::PermissionRules;
use crate::store::TranscriptStore;
use crate::tools::Tool;
use crate::workspace::{DocumentStore, Workspace};

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

/// State shared by every handler and every session task.
pub struct ServerState {
    pub(super) outbound: Outbound,
    pub(super) options: ServerOptions,
    profile: OnceLock<ClientProfile>,
    roots: RwLock<Vec<PathBuf>>,
    /// The editor's configuration layer: its `initializationOptions`, with its latest `agentls`
    /// settings section (`workspace/configuration`, `didChangeConfiguration`) over them.
    client_layer: RwLock<ClientLayers>,
    pub(super) documents: Arc<DocumentStore>,
    pub(super) permissions: PermissionBroker,
    /// The user's "always allow" rules, shared by every session's permission policy.
    pub(super) rules: Arc<PermissionRules>,
    /// The MCP servers of every session, each started once.
    pub(super) mcp: Arc<crate::mcp::McpHub>,
    pub(super) reviews: ReviewBroker,
    pub(super) sessions: SessionRegistry,
    /// Stored transcripts; `None` without a data directory.
    pub(super) transcripts: Option<TranscriptStore>,
    /// `shutdown` was received (the exit code is 0 only then).
    pub(super) shutdown_requested: AtomicBool,
    /// Folders whose trust was raised with the user (`trust.rs`): once per folder.
    trust_raised: std::sync::Mutex<std::collections::HashSet<PathBuf>>,
    /// Editor settings already reported as left out (by key and reason): each is told once,
    /// whichever layer or change carried it again.
    settings_reported: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl ServerState {
    pub(super) fn new(client: Client, options: ServerOptions, documents: Arc<DocumentStore>) -> Self {
        let rules = Arc::new(PermissionRules::open(options.data_dir.as_deref()));
        let transcripts = options.data_dir.as_deref().map(TranscriptStore::new);
        Self {
            outbound: Outbound::new(client, options.deadlines),
            reviews: ReviewBroker::default(),
            sessions: SessionRegistry::default(),
            transcripts,
            shutdown_requested: AtomicBool::new(false),
            options,
            profile: OnceLock::new(),
            roots: RwLock::new(Vec::new()),
            client_layer: RwLock::new(ClientLayers::default()),
            documents,
            permissions: PermissionBroker::default(),
            trust_raised: Default::default(),
            settings_reported: Default::default(),
            rules,
            mcp: crate::mcp::McpHub::new(),
        }
    }

    /// Records the client of `initialize`: its profile, roots and `initializationOptions`.
    pub(super) fn initialize(&self, profile: ClientProfile, roots: Vec<PathBuf>, options: Option<Value>) {
        *self.roots.write().unwrap_or_else(|p| p.into_inner()) = roots;
        if let Some(options) = options.filter(|v| !v.is_null()) {
            let (layer, errors) = ConfigLayer::from_json_lenient(options, "initializationOptions");
            self.client_layer.write().unwrap_or_else(|p| p.into_inner()).initialization = layer;
            self.report_settings_errors(errors);
        }
        let _ = self.profile.set(profile);
    }

    /// Tells the user of each editor setting that was left out (its key and what was expected);
    /// the others apply.
    fn report_settings_errors(&self, errors: Vec<ConfigError>) {
        let new: Vec<ConfigError> = {
            let mut reported = self.settings_reported.lock().unwrap_or_else(|p| p.into_inner());
            errors
                .into_iter()
                .filter(|e| match e {
                    ConfigError::Invalid { key, expected, .. } => {
                        reported.insert(format!("{key}: {expected}"))
                    }
                    other => reported.insert(other.to_string()),
                })
                .collect()
        };
        if new.is_empty() {
            return;
        }
        let list: Vec<String> = new.iter().map(ToString::to_string).collect();
        let message =
            format!("agentls ignores these editor settings (the others apply): {}", list.join("; "));
        tracing::warn!("{message}");
        let outbound = self.outbound.clone();
        tokio::spawn(async move { outbound.tell(MessageType::WARNING, message).await });
    }

    /// Applies a `workspace/didChangeWorkspaceFolders` change.
    pub(super) fn change_roots(&self, removed: &[PathBuf], added: Vec<PathBuf>) {
        let mut roots = self.roots.write().unwrap_or_else(|p| p.into_inner());
        roots.retain(|r| !removed.contains(r));
        for root in added {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
    }

    /// Cancels a session's turn and answers its pending reviews and permissions.
    pub(super) fn cancel_turn(&self, session: &LspSession) {
        session.handle.cancel();
        self.reviews.cancel_session(&session.id);
        self.permissions.cancel_session(&session.id);
    }

    /// Closes every session: its turn is interrupted and its commands stopped, then it ends.
    pub(super) fn close_all_sessions(&self) {
        for session in self.sessions.all() {
            self.cancel_turn(&session);
            session.handle.close();
        }
    }

    /// Waits, up to `patience`, until every session has ended and its transcript is written
    /// (a session leaves the registry once its pump handled its last event).
    pub(super) async fn all_sessions_ended(&self, patience: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + patience;
        while !self.sessions.all().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    /// The client's profile; the default (a plain UTF-16 client) before `initialize`.
    pub(super) fn profile(&self) -> ClientProfile {
        self.profile.get().cloned().unwrap_or_default()
    }

    pub(super) fn is_initialized(&self) -> bool {
        self.profile.get().is_some()
    }

    /// `true` the first time a folder's trust is raised, `false` after.
    pub(super) fn first_trust_raise(&self, root: &Path) -> bool {
        self.trust_raised.lock().unwrap_or_else(|p| p.into_inner()).insert(root.to_path_buf())
    }

    pub(super) fn roots(&self) -> Vec<PathBuf> {
        self.roots.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `path` as a person reads it: relative to the workspace folder that holds it.
    pub(super) fn shown_path(&self, path: &std::path::Path) -> String {
        let roots = self.roots();
        crate::workspace::shown_path(path, &roots.iter().map(PathBuf::as_path).collect::<Vec<_>>())
    }

    /// The text the editor shows for `path`: its open buffer, else the file (read through
    /// [`Workspace`] like the agent's reads, so a large file is read off the loop thread); empty
    /// when there is neither or it is not text.
    pub(super) async fn shown_text(&self, path: &Path) -> String {
        let folder = path.parent().unwrap_or(path);
        let env = LocalExecutionEnvironment::new(folder);
        match Workspace::new(Arc::clone(&self.documents)).read(&env, path).await {
            Ok(snapshot) => snapshot.text.to_string(),
            Err(_) => String::new(),
        }
    }

    pub(super) fn client_layer(&self) -> ConfigLayer {
        let layers = self.client_layer.read().unwrap_or_else(|p| p.into_inner());
        let mut layer = layers.initialization.clone();
        layer.merge(layers.settings.clone());
        layer
    }

    /// Takes the editor's whole `agentls` settings section as its settings (a setting the user
    /// cleared is gone, not kept from before); `false` when it is invalid and was ignored.
    /// Takes the editor's settings section: its valid keys apply, each bad one is reported and
    /// left out; `false` when nothing of it was valid.
    pub(super) fn set_client_settings(&self, section: Value, origin: &str) -> bool {
        let empty = section.as_object().is_some_and(|o| o.is_empty());
        let (layer, errors) = ConfigLayer::from_json_lenient(section, origin);
        let applied = empty || errors.is_empty() || layer != ConfigLayer::default();
        self.client_layer.write().unwrap_or_else(|p| p.into_inner()).settings = layer;
        self.report_settings_errors(errors);
        applied
    }
}

/// The editor's two sources of configuration: `initializationOptions`, fixed at start, and the
/// `agentls` settings section, replaced whole whenever the editor sends or is asked for it.
#[derive(Debug, Default)]
struct ClientLayers {
    initialization: ConfigLayer,
    settings: ConfigLayer,
}
