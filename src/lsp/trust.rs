//! Workspace trust in the editor: telling the user that a folder's project file sets keys that
//! were ignored because the folder is not trusted, and taking the user's grant.
//!
//! Invariants:
//! - Each folder is raised at most once per server process, whether its first check comes from
//!   `initialized` or from a session starting there.
//! - A plugin that announced `experimental.agentls.trust` gets `agentls/trustRequired` and
//!   decides itself (its editor's trust store, or its own question); any other client gets one
//!   `window/showMessageRequest` with [Not now] [Trust this folder] (in that order: editors that
//!   preset the first action, as eglot does, then need a deliberate choice to trust). Only an
//!   explicit grant writes the user's trust store; a dismissed or unanswered question trusts
//!   nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tower_lsp_server::ls_types::MessageType;

use super::convert::uri_of;
use super::protocol::{IgnoredKeyParams, TrustRequiredNotification, TrustRequiredParams};
use super::state::ServerState;
use crate::config::{Config, LoadOptions, ProjectTrust, TrustError, TrustStore};

const TRUST: &str = "Trust this folder";
const NOT_NOW: &str = "Not now";

/// Checks every workspace folder (after `initialized`) and raises the untrusted ones whose
/// project file sets keys that need trust.
pub async fn check_roots(state: &Arc<ServerState>) {
    for root in state.roots() {
        let options = LoadOptions {
            project_root: Some(root.clone()),
            overrides: state.client_layer(),
            ..Default::default()
        };
        match Config::load(&state.options.env, options) {
            Ok(config) => {
                if let Some(trust) = config.trust {
                    raise(state, trust).await;
                }
            }
            // A session started there reports the broken file with its error.
            Err(e) => tracing::warn!("{e}"),
        }
    }
}

/// Tells the user about `trust` once per folder (nothing when the folder is trusted or nothing
/// was ignored). Asking a plain client waits for the user, so callers that must not wait
/// spawn it.
pub async fn raise(state: &Arc<ServerState>, trust: ProjectTrust) {
    if trust.trusted || trust.ignored.is_empty() || !state.first_trust_raise(&trust.root) {
        return;
    }
    let Some(report) = trust.report() else { return };
    tracing::warn!("{report}");
    if state.profile().trust {
        let params = TrustRequiredParams {
            root_uri: uri_of(&trust.root).map(|u| u.to_string()).unwrap_or_default(),
            file: trust.file.display().to_string(),
            ignored: trust
                .ignored
                .iter()
                .map(|k| IgnoredKeyParams { key: k.key.clone(), reason: k.reason.clone() })
                .collect(),
            command: trust.grant_command(),
        };
        state.outbound.notify::<TrustRequiredNotification>(params).await;
        return;
    }
    let question = format!("agentls: {report}");
    match state.outbound.ask(MessageType::WARNING, question, &[NOT_NOW, TRUST]).await {
        Ok(Some(answer)) if answer == TRUST => match grant(state, &trust.root) {
            Ok(dir) => {
                let message = format!(
                    "agentls: trusted {}; new sessions there use its whole .agentls.toml",
                    dir.display()
                );
                state.outbound.tell(MessageType::INFO, message).await;
            }
            Err(e) => state.outbound.tell(MessageType::ERROR, format!("agentls: {e}")).await,
        },
        Ok(_) => tracing::info!("{} stays untrusted", trust.root.display()),
        Err(e) => tracing::warn!("the trust question for {} got no answer: {e}", trust.root.display()),
    }
}

/// Trusts `root` in the user's store (the one `agentls trust` writes).
pub fn grant(state: &ServerState, root: &Path) -> Result<PathBuf, TrustError> {
    let dir = TrustStore::for_user(&state.options.env).trust(root)?;
    tracing::info!("trusted {}", dir.display());
    Ok(dir)
}
