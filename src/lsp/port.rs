//! The LSP implementation of [`EditorPort`]: review, apply, permission and save, for one session.
//!
//! Invariants:
//! - Every call returns: reviews and permissions are answered by the user, by a cancelled
//!   turn, or by a deadline; a panic inside becomes a [`PortError`], never a dead session.
//! - Approval `auto` applies at once, `deny` refuses, `review` asks first. Nothing is applied
//!   that the user rejected.
//! - `save` writes only the files it is given (the ones the agent changed), and of their text
//!   only the agent's changes unless the user agrees to more; it writes them through the
//!   session's committer (checked against the text read, all files or none).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use futures::FutureExt;

use tower_lsp_server::ls_types::MessageType;

use super::apply;
use super::capabilities::ClientProfile;
use super::protocol::{PermissionParams, ReviewParams, SaveDocumentsParams, SaveDocumentsRequest};
use super::review::{self, ReviewDecision};
use super::state::ServerState;
use crate::config::Approval;
use crate::exec::ExecutionEnvironment;
use crate::session::SessionHandle;
use crate::workspace::{
    ChangeOutcome, ChangeSet, Committer, DiskCommitter, EditorPort, FileChange, FileDecision, FileOutcome,
    PermissionDecision, PermissionRequest, PortError, ResolvedChangeSet, Snapshot, Workspace, WorkspaceError,
    read_text,
};

/// A question for a plugin client, sent by the session's event pump so that it follows the
/// events before it (its call's `tool_call_start`).
#[derive(Debug)]
pub enum Announcement {
    /// An `agentls/review` payload (its `callId` is filled in by the pump).
    Review(ReviewParams),
    /// An `agentls/permission` payload.
    Permission(PermissionParams),
}

pub struct LspEditorPort {
    session_id: String,
    state: Weak<ServerState>,
    pub handle: OnceLock<SessionHandle>,
    /// Review and permission announcements go through the session's event pump, so they
    /// follow the `tool_call_start` of their call (reviews also carry its id).
    announce: tokio::sync::mpsc::UnboundedSender<Announcement>,
    /// The session's execution environment: what the editor cannot apply or save is written to
    /// its files, through the committer.
    env: Arc<dyn ExecutionEnvironment>,
}

fn gone() -> PortError {
    PortError("the language server is shutting down".into())
}

fn rejected(change: ChangeSet, feedback: Option<String>, error: Option<String>) -> ChangeOutcome {
    let resolved = change.reject_all();
    ChangeOutcome { files: resolved.files.iter().map(FileOutcome::rejected).collect(), feedback, error }
}

impl LspEditorPort {
    pub fn new(
        session_id: String,
        state: Weak<ServerState>,
        announce: tokio::sync::mpsc::UnboundedSender<Announcement>,
        env: Arc<dyn ExecutionEnvironment>,
    ) -> Self {
        Self { session_id, state, handle: OnceLock::new(), announce, env }
    }

    /// Fires when the session's current turn is cancelled: questions the editor holds open
    /// (plain clients) stop waiting then.
    async fn turn_cancelled(&self) {
        match self.handle.get() {
            Some(handle) => handle.cancellation().cancelled_owned().await,
            None => std::future::pending().await,
        }
    }

    fn approval(&self) -> Approval {
        self.handle.get().map(|h| h.config().approval).unwrap_or(Approval::Review)
    }

    /// Applies a reviewed change set in the editor, and on the session's disk what the editor
    /// cannot do.
    async fn apply(
        &self,
        state: &ServerState,
        profile: &ClientProfile,
        resolved: &ResolvedChangeSet,
        label: &str,
        confirm: bool,
    ) -> Result<Vec<FileOutcome>, String> {
        let workspace = Workspace::new(Arc::clone(&state.documents));
        apply::apply(&state.outbound, &workspace, &self.env, profile, resolved, label, confirm).await
    }

    async fn propose_inner(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        let state = self.state.upgrade().ok_or_else(gone)?;
        let profile = state.profile();
        let label = format!(
            "agentls: {}",
            change.files().iter().map(|f| f.display_path.as_str()).collect::<Vec<_>>().join(", ")
        );
        let decision = match self.approval() {
            Approval::Deny => {
                return Ok(rejected(
                    change,
                    None,
                    Some(
                        "Edits are not allowed in this session (approval: deny); nothing was changed.".into(),
                    ),
                ));
            }
            Approval::Auto => ReviewDecision::Accept { files: Default::default(), feedback: None },
            Approval::Review if profile.plugin => {
                let announce = |payload| {
                    let _ = self.announce.send(Announcement::Review(payload));
                };
                state.reviews.ask_plugin(&state.outbound, announce, &self.session_id, &change).await
            }
            Approval::Review if profile.document_changes && profile.change_annotations => {
                // The client's own preview asks the user (needsConfirmation annotations).
                let resolved = change.clone().accept_all();
                return Ok(match self.apply(&state, &profile, &resolved, &label, true).await {
                    Ok(files) => ChangeOutcome { files, feedback: None, error: None },
                    Err(e) => rejected(change, None, Some(format!("The change was not applied: {e}"))),
                });
            }
            Approval::Review => {
                let dir = state.options.data_dir.clone().unwrap_or_else(std::env::temp_dir).join("reviews");
                let ask = review::ask_plain(&state.outbound, &change, &dir, profile.show_document);
                tokio::select! {
                    decision = ask => decision,
                    () = self.turn_cancelled() => ReviewDecision::Reject {
                        feedback: Some("the turn was cancelled before the review was answered".into()),
                    },
                }
            }
        };
        let (files, feedback) = match decision {
            ReviewDecision::Reject { feedback } => return Ok(rejected(change, feedback, None)),
            ReviewDecision::Accept { files, feedback } => (files, feedback),
        };
        let resolved = match change.resolve(|i, _| files.get(&i).cloned().unwrap_or(FileDecision::Accept)) {
            Ok(resolved) => resolved,
            Err(e) => return Ok(ChangeOutcome { files: Vec::new(), feedback, error: Some(e.to_string()) }),
        };
        if resolved.files.iter().all(|f| !f.accepted) {
            let files = resolved.files.iter().map(FileOutcome::rejected).collect();
            return Ok(ChangeOutcome { files, feedback, error: None });
        }
        Ok(match self.apply(&state, &profile, &resolved, &label, false).await {
            Ok(files) => ChangeOutcome { files, feedback, error: None },
            Err(e) => ChangeOutcome { files: Vec::new(), feedback, error: Some(e) },
        })
    }

    async fn save_inner(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        let state = self.state.upgrade().ok_or_else(gone)?;
        if state.profile().plugin {
            let uris: Vec<String> = paths
                .iter()
                .filter_map(|p| super::convert::uri_of(p))
                .map(|u| u.as_str().to_string())
                .collect();
            match state.outbound.request::<SaveDocumentsRequest>(SaveDocumentsParams { uris }).await {
                Ok(_) => {
                    paths.iter().for_each(|path| state.documents.written(path));
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!("the editor did not save the files ({e}); writing them from the server")
                }
            }
        }
        write_agent_changes(&state, &self.env, paths).await
    }
}

const SAVE_BUFFER: &str = "Save buffer";
const DONT_SAVE: &str = "Don't save";

/// Writes the agent's changes to `paths` for an editor that does not save them itself: the disk
/// text with the server's edits of each file replayed on it, so the user's other unsaved changes
/// stay in the buffer. Where the two cannot be told apart (the agent edited lines the user changed
/// and has not saved), the user is asked before the whole buffer is written. The files are
/// written together through the committer: each still holding the text read here (else merged
/// with what changed), all of them or none.
async fn write_agent_changes(
    state: &ServerState,
    env: &Arc<dyn ExecutionEnvironment>,
    paths: &[PathBuf],
) -> Result<(), PortError> {
    let mut writes = Vec::new();
    let mut unchanged = Vec::new();
    let mut not_saved = Vec::new();
    for path in paths {
        let shown = state.shown_path(path);
        let disk = match read_text(&**env, path).await {
            Ok(text) => Some(text),
            Err(WorkspaceError::NotFound(_)) => None,
            Err(e) => {
                not_saved.push(format!("cannot read {shown}: {e}"));
                continue;
            }
        };
        let held = state.documents.get(path).map(|buffer| buffer.text);
        let Some(held) = held.or_else(|| state.documents.unopened_text(path, disk.as_deref())) else {
            continue; // the editor holds nothing newer than the disk
        };
        if disk.as_deref() == Some(&*held) {
            unchanged.push(path);
            continue;
        }
        let text = match state.documents.server_edits_onto(path, disk.as_deref().unwrap_or("")) {
            Ok(Some(text)) => text,
            Ok(None) => continue, // no edit of the agent's is waiting in the editor
            Err(_) => {
                let question = format!(
                    "agentls is about to run a command. Its edit of {shown} touches lines you changed and have not \
                     saved: save the whole buffer (your changes too) so that the command sees the edit?"
                );
                match state.outbound.ask(MessageType::WARNING, question, &[SAVE_BUFFER, DONT_SAVE]).await {
                    Ok(Some(answer)) if answer == SAVE_BUFFER => held.to_string(),
                    _ => {
                        not_saved.push(format!(
                            "{shown} was not saved: your edit touches lines the user changed and has not saved, and \
                             the user chose not to save them"
                        ));
                        continue;
                    }
                }
            }
        };
        match disk {
            Some(disk) if *disk == *text => unchanged.push(path),
            Some(disk) => {
                writes.push(FileChange::modify(Snapshot::from_disk(path.clone(), disk), shown, text))
            }
            None => writes.push(FileChange::create(path.clone(), shown, text)),
        }
    }
    unchanged.into_iter().for_each(|path| state.documents.written(path));
    if !writes.is_empty() {
        let written: Vec<PathBuf> = writes.iter().map(|change| change.path.clone()).collect();
        let change = ChangeSet::new(writes).map_err(|error| PortError(error.to_string()))?;
        DiskCommitter::new(Arc::clone(env))
            .commit(change.accept_all())
            .await
            .map_err(|error| PortError(format!("the edited files were not saved: {error}")))?;
        written.iter().for_each(|path| state.documents.written(path));
    }
    if not_saved.is_empty() { Ok(()) } else { Err(PortError(not_saved.join("; "))) }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[async_trait]
impl EditorPort for LspEditorPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        match std::panic::AssertUnwindSafe(self.propose_inner(change)).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => {
                let message = panic_message(panic);
                tracing::error!("the review of a change set panicked: {message}");
                Err(PortError(format!(
                    "internal error while proposing the change ({message}); nothing was applied"
                )))
            }
        }
    }

    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        let Some(state) = self.state.upgrade() else {
            return PermissionDecision::Deny {
                feedback: Some("the language server is shutting down".into()),
            };
        };
        let profile = state.profile();
        let announce = |payload| {
            let _ = self.announce.send(Announcement::Permission(payload));
        };
        let decide = state.permissions.decide(&state.outbound, announce, &profile, &self.session_id, request);
        let decision = tokio::select! {
            decision = std::panic::AssertUnwindSafe(decide).catch_unwind() => decision,
            () = self.turn_cancelled() => {
                return PermissionDecision::Deny { feedback: Some("the turn was cancelled".into()) };
            }
        };
        match decision {
            Ok(decision) => decision,
            Err(panic) => PermissionDecision::Deny {
                feedback: Some(format!("internal error: {}", panic_message(panic))),
            },
        }
    }

    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        match std::panic::AssertUnwindSafe(self.save_inner(paths)).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => Err(PortError(format!("internal error while saving: {}", panic_message(panic)))),
        }
    }
}

/// The port's session id (for logs).
impl std::fmt::Debug for LspEditorPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspEditorPort").field("session_id", &self.session_id).finish()
    }
}
