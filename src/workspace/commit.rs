//! Committing a reviewed change set: the [`Committer`] seam, the disk committer, and the
//! [`ChangeOutcome`] the tool reports to the model. Invariant: a commit is validated completely
//! (existence, overwrite refusals, changes since the base snapshot, rebase) before the first
//! write, and a failed write rolls back what was already written: all files or none.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use super::change::{FileOp, ResolvedChangeSet, ResolvedFile};
use super::rebase::{RebaseConflict, rebase};
use super::{WorkspaceError, read_disk_text};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommitError {
    #[error(
        "{path} changed since you read it and your edit overlaps the change ({conflict}); nothing was changed. \
         Read the file again and redo the edit against its current text"
    )]
    Conflict { path: PathBuf, conflict: RebaseConflict },
    #[error("{0} changed since you read it; nothing was changed. Read it again before deleting it")]
    ChangedBeforeDelete(PathBuf),
    #[error(
        "{0} already exists; refusing to overwrite it (nothing was changed). Edit it instead, or delete it first"
    )]
    AlreadyExists(PathBuf),
    #[error("{0} no longer exists (it was deleted since you read it); nothing was changed")]
    Vanished(PathBuf),
    #[error("{0}; nothing was changed")]
    Workspace(#[from] WorkspaceError),
    #[error("could not write {path}: {message}; nothing was changed")]
    Io { path: PathBuf, message: String },
}

/// Applies reviewed change sets somewhere (the disk here; editor buffers in the language server).
#[async_trait]
pub trait Committer: Send + Sync {
    /// Applies every accepted file of `change` or none of them.
    async fn commit(&self, change: ResolvedChangeSet) -> Result<Vec<FileOutcome>, CommitError>;
}

/// What happened to one file of a proposed change set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    Applied,
    /// Some hunks were rejected by the reviewer.
    PartiallyApplied,
    Rejected,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileOutcome {
    pub path: PathBuf,
    pub display_path: String,
    pub op: FileOp,
    pub status: FileStatus,
    pub applied_hunks: Vec<usize>,
    pub rejected_hunks: Vec<usize>,
    /// The change was rebased onto text that changed since the agent read it.
    pub rebased: bool,
    /// The reviewer edited the proposed text before accepting it.
    pub user_edited: bool,
    /// The file's text after the commit (`None` when deleted or rejected).
    pub final_text: Option<Arc<str>>,
}

impl FileOutcome {
    /// The outcome of a file the committer did not touch.
    pub fn rejected(file: &ResolvedFile) -> Self {
        Self {
            path: file.change.path.clone(),
            display_path: file.change.display_path.clone(),
            op: file.change.op.clone(),
            status: FileStatus::Rejected,
            applied_hunks: Vec::new(),
            rejected_hunks: file.change.hunks.iter().map(|hunk| hunk.index).collect(),
            rebased: false,
            user_edited: false,
            final_text: None,
        }
    }

    /// The outcome of a file committed with `final_text`.
    pub fn committed(file: &ResolvedFile, final_text: Option<Arc<str>>, rebased: bool) -> Self {
        let status =
            if file.rejected_hunks.is_empty() { FileStatus::Applied } else { FileStatus::PartiallyApplied };
        Self {
            path: file.change.path.clone(),
            display_path: file.change.display_path.clone(),
            op: file.change.op.clone(),
            status,
            applied_hunks: file.applied_hunks.clone(),
            rejected_hunks: file.rejected_hunks.clone(),
            rebased,
            user_edited: file.user_edited,
            final_text,
        }
    }
}

/// What happened to a proposed change set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeOutcome {
    pub files: Vec<FileOutcome>,
    /// What the reviewer said (passed on to the model).
    pub feedback: Option<String>,
    /// Why nothing was applied, when the commit failed.
    pub error: Option<String>,
}

impl ChangeOutcome {
    pub fn failed(error: impl Into<String>) -> Self {
        Self { files: Vec::new(), feedback: None, error: Some(error.into()) }
    }

    /// Whether at least one file was changed.
    pub fn applied_any(&self) -> bool {
        self.error.is_none() && self.files.iter().any(|file| file.status != FileStatus::Rejected)
    }

    /// The message for the model when nothing was applied; `None` when something was.
    pub fn refusal_message(&self) -> Option<String> {
        if let Some(error) = &self.error {
            return Some(error.clone());
        }
        if self.applied_any() {
            return None;
        }
        let mut message = String::from("The user rejected the change; nothing was applied.");
        if let Some(feedback) = &self.feedback {
            message.push_str(&format!("\nUser feedback: {feedback}"));
        }
        Some(message)
    }

    /// Extra lines for the model about partial application, rebases, user edits and feedback.
    pub fn notes(&self) -> String {
        let mut notes = String::new();
        for file in &self.files {
            match file.status {
                FileStatus::Rejected => {
                    notes.push_str(&format!("\nThe user rejected the change to {}.", file.display_path))
                }
                FileStatus::PartiallyApplied => notes.push_str(&format!(
                    "\nIn {} the user accepted hunks {:?} and rejected hunks {:?} (numbered from 0 in file order).",
                    file.display_path, file.applied_hunks, file.rejected_hunks
                )),
                FileStatus::Applied => {}
            }
            if file.user_edited {
                notes.push_str(&format!(
                    "\nThe user edited your change to {} before accepting it; read it again before editing it further.",
                    file.display_path
                ));
            }
            if file.rebased {
                notes.push_str(&format!(
                    "\n{} had changed since you read it; your edit was merged with those changes.",
                    file.display_path
                ));
            }
        }
        if let Some(feedback) = &self.feedback {
            notes.push_str(&format!("\nUser feedback: {feedback}"));
        }
        notes
    }
}

/// Applies change sets to files on disk.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiskCommitter;

/// One planned disk operation, computed and checked before anything is written.
enum Action {
    Remove { path: PathBuf },
    Write { path: PathBuf, text: Arc<str>, permissions: Option<std::fs::Permissions> },
}

/// How to undo one performed disk operation.
enum Undo {
    Restore { path: PathBuf, bytes: Vec<u8>, permissions: std::fs::Permissions },
    Remove { path: PathBuf },
}

impl DiskCommitter {
    fn plan(change: &ResolvedChangeSet) -> Result<(Vec<Action>, Vec<FileOutcome>), CommitError> {
        let vacated: Vec<&Path> = change
            .files
            .iter()
            .filter(|file| file.accepted && matches!(file.change.op, FileOp::Delete | FileOp::Rename { .. }))
            .map(|file| file.change.path.as_path())
            .collect();
        let mut removes = Vec::new();
        let mut writes = Vec::new();
        let mut outcomes = Vec::new();
        for file in &change.files {
            if !file.accepted {
                outcomes.push(FileOutcome::rejected(file));
                continue;
            }
            let change = &file.change;
            let refuse_existing = |target: &Path| -> Result<(), CommitError> {
                if target.symlink_metadata().is_ok() && !vacated.contains(&target) {
                    return Err(CommitError::AlreadyExists(target.to_path_buf()));
                }
                Ok(())
            };
            match &change.op {
                FileOp::Create => {
                    refuse_existing(&change.path)?;
                    let text = file.final_text.clone().unwrap_or_else(|| Arc::from(""));
                    writes.push(Action::Write {
                        path: change.path.clone(),
                        text: text.clone(),
                        permissions: None,
                    });
                    outcomes.push(FileOutcome::committed(file, Some(text), false));
                }
                FileOp::Delete => {
                    let current = current_text(&change.path)?;
                    if *current != *change.base_text() {
                        return Err(CommitError::ChangedBeforeDelete(change.path.clone()));
                    }
                    removes.push(Action::Remove { path: change.path.clone() });
                    outcomes.push(FileOutcome::committed(file, None, false));
                }
                FileOp::Modify | FileOp::Rename { .. } => {
                    let current = current_text(&change.path)?;
                    let proposed = file.final_text.clone().unwrap_or_else(|| Arc::from(""));
                    let (text, rebased) = if *current == *change.base_text() {
                        (proposed, false)
                    } else {
                        let merged = rebase(change.base_text(), &proposed, &current).map_err(|conflict| {
                            CommitError::Conflict { path: change.path.clone(), conflict }
                        })?;
                        (Arc::from(merged), true)
                    };
                    let permissions =
                        std::fs::metadata(&change.path).ok().map(|metadata| metadata.permissions());
                    let target = change.target_path().to_path_buf();
                    if target != change.path {
                        refuse_existing(&target)?;
                        removes.push(Action::Remove { path: change.path.clone() });
                    }
                    writes.push(Action::Write { path: target, text: text.clone(), permissions });
                    outcomes.push(FileOutcome::committed(file, Some(text), rebased));
                }
            }
        }
        removes.extend(writes);
        Ok((removes, outcomes))
    }

    fn perform(actions: Vec<Action>) -> Result<(), CommitError> {
        let mut undo: Vec<Undo> = Vec::new();
        for action in actions {
            if let Err(error) = Self::perform_one(action, &mut undo) {
                for step in undo.into_iter().rev() {
                    let result = match &step {
                        Undo::Restore { path, bytes, permissions } => std::fs::write(path, bytes)
                            .and_then(|()| std::fs::set_permissions(path, permissions.clone())),
                        Undo::Remove { path } => std::fs::remove_file(path),
                    };
                    if let Err(undo_error) = result {
                        tracing::error!(%undo_error, "could not roll back a partially applied change set");
                    }
                }
                return Err(error);
            }
        }
        Ok(())
    }

    fn perform_one(action: Action, undo: &mut Vec<Undo>) -> Result<(), CommitError> {
        match action {
            Action::Remove { path } => {
                let io = |error: std::io::Error| CommitError::Io {
                    path: path.clone(),
                    message: error.to_string(),
                };
                let bytes = std::fs::read(&path).map_err(io)?;
                let permissions = std::fs::metadata(&path).map_err(io)?.permissions();
                std::fs::remove_file(&path).map_err(io)?;
                undo.push(Undo::Restore { path, bytes, permissions });
            }
            Action::Write { path, text, permissions } => {
                let io = |error: std::io::Error| CommitError::Io {
                    path: path.clone(),
                    message: error.to_string(),
                };
                let previous = match std::fs::read(&path) {
                    Ok(bytes) => Some((bytes, std::fs::metadata(&path).map_err(io)?.permissions())),
                    Err(_) => None,
                };
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io)?;
                }
                let permissions =
                    permissions.or_else(|| previous.as_ref().map(|(_, permissions)| permissions.clone()));
                write_atomically(&path, text.as_bytes(), permissions).map_err(io)?;
                undo.push(match previous {
                    Some((bytes, permissions)) => Undo::Restore { path, bytes, permissions },
                    None => Undo::Remove { path },
                });
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Committer for DiskCommitter {
    async fn commit(&self, change: ResolvedChangeSet) -> Result<Vec<FileOutcome>, CommitError> {
        let work = move || {
            let (actions, outcomes) = Self::plan(&change)?;
            Self::perform(actions)?;
            Ok(outcomes)
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(work)
            }
            _ => work(),
        }
    }
}

fn current_text(path: &Path) -> Result<String, CommitError> {
    match read_disk_text(path) {
        Ok(text) => Ok(text),
        Err(WorkspaceError::NotFound(path)) => Err(CommitError::Vanished(path)),
        Err(error) => Err(error.into()),
    }
}

/// Writes through a temporary file in the same directory and a rename, so a reader never sees
/// a half-written file.
fn write_atomically(
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(
        ".{name}.agentls-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = std::fs::write(&temp, bytes)
        .and_then(|()| match permissions {
            Some(permissions) => std::fs::set_permissions(&temp, permissions),
            None => Ok(()),
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
