//! The `LanguageServer` implementation: lifecycle, capabilities, and routing of each LSP method
//! to the file that handles its family.
//!
//! Invariant: no handler awaits the editor or the model. Handlers decode, hand the work to a
//! session task or a spawned task, and return; document sync never reaches this type (it is
//! applied in arrival order by [`super::text_sync`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspServiceBuilder};

use super::capabilities::ClientProfile;
use super::state::{ServerOptions, ServerState};
use super::{code_actions, commands, convert, protocol, trust, watch};
use crate::workspace::DocumentStore;

/// Reads the `agentls` section with `workspace/configuration` when the client supports it.
async fn pull_configuration(state: &ServerState) {
    if !state.profile().configuration {
        return;
    }
    let params = ConfigurationParams {
        items: vec![ConfigurationItem { scope_uri: None, section: Some("agentls".into()) }],
    };
    match state.outbound.request::<request::WorkspaceConfiguration>(params).await {
        Ok(values) => match values.into_iter().next() {
            Some(section) if section.as_object().is_some_and(|o| !o.is_empty()) => {
                if state.set_client_settings(section, "workspace/configuration") {
                    let message = "agentls: using the editor's `agentls` settings for new sessions";
                    state.outbound.log(MessageType::INFO, message.to_string()).await;
                }
            }
            _ => {
                tracing::debug!("the editor has no `agentls` settings");
                state.set_client_settings(Value::Object(Default::default()), "workspace/configuration");
            }
        },
        Err(e) => tracing::info!("no settings from the editor: {e}"),
    }
}

/// The server behind `tower-lsp-server`.
pub struct Backend {
    pub(super) state: Arc<ServerState>,
    /// The server's own watcher of instruction files (kept alive here). It starts with the
    /// first session: until then no session has project docs to reload, and a server the user
    /// never prompts costs no watcher thread.
    watcher: Arc<Mutex<Option<watch::InstructionWatcher>>>,
}

impl Backend {
    pub(super) fn new(client: Client, options: ServerOptions, documents: Arc<DocumentStore>) -> Self {
        Self { state: Arc::new(ServerState::new(client, options, documents)), watcher: Arc::default() }
    }
}

/// Adds the methods `LanguageServer` has no slot for.
pub(super) fn register_custom_methods(builder: LspServiceBuilder<Backend>) -> LspServiceBuilder<Backend> {
    builder.custom_method("window/workDoneProgress/cancel", Backend::work_done_progress_cancel).custom_method(
        <protocol::UserTypingNotification as notification::Notification>::METHOD,
        Backend::user_typing,
    )
}

fn roots_of(params: &InitializeParams) -> Vec<PathBuf> {
    let from_folders: Vec<PathBuf> = params
        .workspace_folders
        .iter()
        .flatten()
        .filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned()))
        .collect();
    if !from_folders.is_empty() {
        return from_folders;
    }
    #[allow(deprecated)]
    let root_uri = params.root_uri.as_ref().and_then(|u| u.to_file_path().map(|p| p.into_owned()));
    root_uri.into_iter().collect()
}

/// The capabilities this server announces.
fn server_capabilities(profile: &ClientProfile) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(convert::encoding_kind(profile.encoding)),
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            ..Default::default()
        })),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX, CodeActionKind::EMPTY]),
            ..Default::default()
        })),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: commands::names().map(str::to_string).collect(),
            ..Default::default()
        }),
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        experimental: Some(json!({"agentls": {"protocolVersion": 1}})),
        ..Default::default()
    }
}

impl Backend {
    /// (Re)starts the watcher on the current roots once a session exists; until then it waits
    /// for the first one.
    fn restart_watcher(&self) {
        let (state, slot) = (self.state.clone(), self.watcher.clone());
        let start = move || {
            let watcher = watch::watch_roots(&state, &state.roots());
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = watcher;
        };
        if !self.state.sessions.all().is_empty() {
            start();
            return;
        }
        let sessions = self.state.clone();
        tokio::spawn(async move {
            sessions.sessions.first_opened().await;
            start();
        });
    }

    /// `window/workDoneProgress/cancel`: cancelling a turn's or a tool's progress interrupts
    /// the turn.
    pub async fn work_done_progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let token = match &params.token {
            NumberOrString::String(s) => s.clone(),
            NumberOrString::Number(n) => n.to_string(),
        };
        let Some(id) = self.state.sessions.session_of_progress(&token) else { return };
        if let Some(session) = self.state.sessions.get(&id) {
            tracing::info!(session = %id, "progress cancelled by the user: interrupting the turn");
            self.state.cancel_turn(&session);
        }
    }
}

impl Backend {
    /// `agentls/userTyping`: the user started writing a prompt. The connections to the
    /// providers the sessions use are opened again where they were closed, while the user types
    /// (`llm::http`: at most one per provider, none that is fresh); before any session, the
    /// provider a new session of the first folder would use. Nothing waits for them.
    pub async fn user_typing(&self, params: protocol::UserTypingParams) {
        tracing::info!(session = ?params.session_id, "agentls/userTyping: opening the provider's connection");
        if !crate::llm::http::warm_known() {
            super::assembly::warm_provider(&self.state);
        }
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let profile = ClientProfile::from_initialize(&params);
        tracing::info!(
            client = %profile.name,
            plugin = profile.plugin,
            encoding = ?profile.encoding,
            document_changes = profile.document_changes,
            "initialize"
        );
        let capabilities = server_capabilities(&profile);
        self.state.initialize(profile, roots_of(&params), params.initialization_options.clone());
        Ok(InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "agentls".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        tracing::info!(roots = ?self.state.roots(), "initialized");
        self.restart_watcher();
        let state = self.state.clone();
        tokio::spawn(async move {
            watch::register_with_client(&state).await;
            pull_configuration(&state).await;
            trust::check_roots(&state).await;
        });
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        Ok(Some(code_actions::actions(&self.state, &params).await))
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        let paths: Vec<PathBuf> = params
            .changes
            .iter()
            .filter_map(|c| convert::path_of(&c.uri))
            .filter(|p| crate::profiles::project_docs::is_instruction_file(p))
            .collect();
        if paths.is_empty() {
            return;
        }
        let state = self.state.clone();
        tokio::spawn(async move {
            for path in paths {
                watch::reload(&state, &path).await;
            }
        });
    }

    async fn shutdown(&self) -> Result<()> {
        tracing::info!("shutdown");
        self.state.shutdown_requested.store(true, std::sync::atomic::Ordering::SeqCst);
        self.state.close_all_sessions();
        Ok(())
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        commands::dispatch(&self.state, params.command, params.arguments).await.map(Some)
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let section = params.settings.get("agentls").cloned().unwrap_or(params.settings);
        if section.is_null() || section.as_object().is_some_and(|o| o.is_empty()) {
            // The pull model: the notification only says something changed.
            let state = self.state.clone();
            tokio::spawn(async move { pull_configuration(&state).await });
            return;
        }
        let _ = self.state.set_client_settings(section, "workspace/didChangeConfiguration");
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        let path = |f: &WorkspaceFolder| f.uri.to_file_path().map(|p| p.into_owned());
        let removed: Vec<PathBuf> = params.event.removed.iter().filter_map(path).collect();
        let added: Vec<PathBuf> = params.event.added.iter().filter_map(path).collect();
        self.state.change_roots(&removed, added);
        self.restart_watcher();
    }
}
