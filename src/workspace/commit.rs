//! Committing a reviewed change set: the [`Committer`] seam, the disk committer, and the
//! [`ChangeOutcome`] the tool reports to the model. Invariant: a commit is validated completely
//! (existence, overwrite refusals, changes since the base snapshot, rebase) before the first
//! write, and a failed write rolls back what was already written: all files or none.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::change::{FileOp, ResolvedChangeSet, ResolvedFile};
use super::rebase::{RebaseConflict, rebase};
use super::{Snapshot, WorkspaceError, read_disk_text};

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

/// One planned disk operation, computed and checked before anything is written. Each carries
/// the file's verified current content, so undoing it needs no second read.
enum Action {
    Remove { path: PathBuf, previous: Arc<str>, permissions: std::fs::Permissions },
    Write { path: PathBuf, text: Arc<str>, permissions: Option<std::fs::Permissions>, previous: Previous },
}

/// What a write replaces.
enum Previous {
    /// Nothing (a create, or a path a planned remove vacates): undo removes the written file.
    Nothing,
    /// This verified content with its permissions: undo writes it back.
    Content(Arc<str>, std::fs::Permissions),
}

/// How to undo one performed disk operation.
enum Undo {
    Restore { path: PathBuf, text: Arc<str>, permissions: std::fs::Permissions },
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
        let mut block = Vec::new();
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
                        previous: Previous::Nothing,
                    });
                    outcomes.push(FileOutcome::committed(file, Some(text), false));
                }
                FileOp::Delete => {
                    let current = current_state(&change.path, change.base.as_ref(), &mut block)?;
                    if !current.is_base {
                        return Err(CommitError::ChangedBeforeDelete(change.path.clone()));
                    }
                    removes.push(Action::Remove {
                        path: change.path.clone(),
                        previous: current.text,
                        permissions: current.permissions,
                    });
                    outcomes.push(FileOutcome::committed(file, None, false));
                }
                FileOp::Modify | FileOp::Rename { .. } => {
                    let current = current_state(&change.path, change.base.as_ref(), &mut block)?;
                    let proposed = file.final_text.clone().unwrap_or_else(|| Arc::from(""));
                    let (text, rebased) = if current.is_base {
                        (proposed, false)
                    } else {
                        let merged =
                            rebase(change.base_text(), &proposed, &current.text).map_err(|conflict| {
                                CommitError::Conflict { path: change.path.clone(), conflict }
                            })?;
                        (Arc::from(merged), true)
                    };
                    let target = change.target_path().to_path_buf();
                    let previous = if target != change.path {
                        refuse_existing(&target)?;
                        removes.push(Action::Remove {
                            path: change.path.clone(),
                            previous: current.text,
                            permissions: current.permissions.clone(),
                        });
                        Previous::Nothing
                    } else {
                        Previous::Content(current.text, current.permissions.clone())
                    };
                    writes.push(Action::Write {
                        path: target,
                        text: text.clone(),
                        permissions: Some(current.permissions),
                        previous,
                    });
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
                        Undo::Restore { path, text, permissions } => {
                            restore(path, text.as_bytes(), permissions)
                        }
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
            Action::Remove { path, previous, permissions } => {
                std::fs::remove_file(&path)
                    .map_err(|error| CommitError::Io { path: path.clone(), message: error.to_string() })?;
                undo.push(Undo::Restore { path, text: previous, permissions });
            }
            Action::Write { path, text, permissions, previous } => {
                let io = |error: std::io::Error| CommitError::Io {
                    path: path.clone(),
                    message: error.to_string(),
                };
                match previous {
                    Previous::Nothing => {
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent).map_err(io)?;
                        }
                        create(&path, text.as_bytes(), permissions.as_ref()).map_err(|error| {
                            // Created since the plan was checked: never overwrite what nobody saw.
                            if error.kind() == std::io::ErrorKind::AlreadyExists {
                                CommitError::AlreadyExists(path.clone())
                            } else {
                                io(error)
                            }
                        })?;
                        undo.push(Undo::Remove { path });
                    }
                    Previous::Content(previous, permissions) => {
                        if let Err(error) = overwrite(&path, text.as_bytes(), previous.len()) {
                            // Put back what this write may have half replaced; the previous text
                            // fits in the space the file already had, so this does not fail for
                            // want of space.
                            if let Err(undo_error) = overwrite(&path, previous.as_bytes(), text.len()) {
                                tracing::error!(%undo_error, path = %path.display(), "could not restore a file after a failed write");
                            }
                            return Err(io(error));
                        }
                        undo.push(Undo::Restore { path, text: previous, permissions });
                    }
                }
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

/// A file's content on disk when a commit is planned, with its permissions.
struct CurrentState {
    /// The base snapshot's text itself when the disk still holds it (no copy is made).
    text: Arc<str>,
    is_base: bool,
    permissions: std::fs::Permissions,
}

/// Reads what `path` holds now. When it is byte for byte the `base` the change was computed
/// against (the usual case), the base text is reused; the file is compared in blocks without
/// being copied.
fn current_state(
    path: &Path,
    base: Option<&Snapshot>,
    block: &mut Vec<u8>,
) -> Result<CurrentState, CommitError> {
    let vanished = |error: WorkspaceError| match error {
        WorkspaceError::NotFound(path) => CommitError::Vanished(path),
        error => error.into(),
    };
    let io = |error: std::io::Error| vanished(WorkspaceError::io(path, &error));
    let mut file = std::fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if metadata.is_dir() {
        return Err(CommitError::Workspace(WorkspaceError::IsDirectory(path.to_path_buf())));
    }
    let permissions = metadata.permissions();
    if let Some(base) = base
        && metadata.len() == base.text.len() as u64
        && same_content(&mut file, base.text.as_bytes(), block).map_err(io)?
    {
        return Ok(CurrentState { text: base.text.clone(), is_base: true, permissions });
    }
    let text = read_disk_text(path).map_err(vanished)?;
    Ok(CurrentState { text, is_base: false, permissions })
}

/// Whether the rest of `file` is exactly `expected`; `block` is scratch space, reused across files.
fn same_content(file: &mut std::fs::File, expected: &[u8], block: &mut Vec<u8>) -> std::io::Result<bool> {
    const BLOCK: usize = 256 * 1024;
    // One byte more than expected, to notice a file that grew since its size was read.
    let wanted = (expected.len() + 1).min(BLOCK);
    if block.len() < wanted {
        block.resize(wanted, 0);
    }
    let block = &mut block[..wanted];
    let mut at = 0;
    loop {
        let read = match file.read(block) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if read == 0 {
            return Ok(at == expected.len());
        }
        if expected.get(at..at + read) != Some(&block[..read]) {
            return Ok(false);
        }
        at += read;
    }
}

/// Writes `bytes` over the file at `path` in place, from its start, then cuts it to their length
/// when it held more (`previous_len` bytes). The file keeps its inode, so its hard links, owner,
/// permissions, ACLs and extended attributes stay as they are, and watchers see a modification.
/// No temporary file is made: overwriting costs a few system calls, where a new inode and a
/// rename cost ten times as much on ext4 (see docs/ARCHITECTURE.md, "Writing files").
fn overwrite(path: &Path, bytes: &[u8], previous_len: usize) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(bytes)?;
    if previous_len > bytes.len() {
        file.set_len(bytes.len() as u64)?;
    }
    Ok(())
}

/// Creates `path` with `bytes`, failing when anything (even a dangling symlink) is there
/// already. A half-written new file is removed.
fn create(path: &Path, bytes: &[u8], permissions: Option<&std::fs::Permissions>) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    let written = file.write_all(bytes).and_then(|()| match permissions {
        Some(permissions) => file.set_permissions(permissions.clone()),
        None => Ok(()),
    });
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// Puts `bytes` back at `path` with `permissions`, whether the file is still there or was removed.
fn restore(path: &Path, bytes: &[u8], permissions: &std::fs::Permissions) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)?;
    file.set_permissions(permissions.clone())
}
