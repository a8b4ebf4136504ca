//! Committing a reviewed change set: the [`Committer`] seam, the disk committer, and the
//! [`ChangeOutcome`] the tool reports to the model. The disk committer is the one writer of files:
//! `agentls exec`, `agentls tool` and the language server's disk fallback all commit through it,
//! and it reaches files only through an [`ExecutionEnvironment`].
//!
//! Invariants:
//! - A commit is planned completely against the files (`plan.rs`: existence, overwrite
//!   refusals, changes since the base snapshot, rebase) before the first write.
//! - A failed write rolls back what was already written: all files or none. When the rollback
//!   itself fails, the error names the files left changed; it never says nothing was changed.
//! - An undo (a rollback, or [`Committed::undo`]) puts a file back only while it still holds what
//!   the commit left in it, and never creates a file over one that appeared meanwhile.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::change::{FileOutcome, FileStatus, ResolvedChangeSet};
use super::plan::{Action, Current, CurrentText, Plan, PlanError, Step, plan};
use super::{Snapshot, WorkspaceError, read_text};
use crate::exec::{ExecError, ExecutionEnvironment, FileKind};

/// Why a commit did not happen (or, for [`CommitError::NotRolledBack`], did not fully undo).
#[derive(Debug, Clone, PartialEq)]
pub enum CommitError {
    /// The plan refused the change; nothing was written.
    Plan(PlanError),
    Io {
        path: PathBuf,
        message: String,
    },
    /// `error` stopped the commit, and the files written before it could not all be put back.
    NotRolledBack {
        error: Box<CommitError>,
        left: UndoError,
    },
}

impl From<PlanError> for CommitError {
    fn from(error: PlanError) -> Self {
        Self::Plan(error)
    }
}

impl CommitError {
    /// What went wrong, without saying what that left changed (for callers that changed other
    /// things before committing).
    pub fn reason(&self) -> String {
        match self {
            Self::Plan(error) => error.reason(),
            Self::Io { path, message } => format!("could not write {}: {message}", path.display()),
            Self::NotRolledBack { error, .. } => error.reason(),
        }
    }
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotRolledBack { error, left } => write!(
                f,
                "{}; the files written before it could not all be put back: {left}. Read them before editing them further",
                error.reason()
            ),
            Self::Plan(error) => write!(f, "{error}"),
            Self::Io { .. } => write!(f, "{}; nothing was changed", self.reason()),
        }
    }
}

impl std::error::Error for CommitError {}

/// Files an undo could not put back, each with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct UndoError(pub Vec<String>);

/// Applies reviewed change sets somewhere (the disk here; editor buffers in the language server).
#[async_trait]
pub trait Committer: Send + Sync {
    /// Applies every accepted file of `change` or none of them.
    async fn commit(&self, change: ResolvedChangeSet) -> Result<Vec<FileOutcome>, CommitError>;
}

/// What happened to a proposed change set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeOutcome {
    pub files: Vec<FileOutcome>,
    /// What the reviewer said (passed on to the model).
    pub feedback: Option<String>,
    /// Why the change was not applied, when the commit failed. The text says whether anything
    /// was left changed (a failed rollback names the files).
    pub error: Option<String>,
}

impl ChangeOutcome {
    pub fn failed(error: impl Into<String>) -> Self {
        Self { files: Vec::new(), feedback: None, error: Some(error.into()) }
    }

    /// Whether the change was applied, at least in part (a failed commit is not, even when its
    /// rollback left files changed: its error says which).
    pub fn applied_any(&self) -> bool {
        self.error.is_none() && self.files.iter().any(|file| file.status != FileStatus::Rejected)
    }

    /// The message for the model when the change was not applied; `None` when it was.
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

/// Applies change sets to the files of an execution environment (the local disk, or wherever
/// the session's tools run).
#[derive(Clone)]
pub struct DiskCommitter {
    env: Arc<dyn ExecutionEnvironment>,
}

/// A commit that happened, with what is needed to undo it.
pub struct Committed {
    pub files: Vec<FileOutcome>,
    undo: Vec<Undo>,
    env: Arc<dyn ExecutionEnvironment>,
}

impl Committed {
    /// Puts every file back as it was before the commit, last change first; a file that changed
    /// again since is left alone and named in the error.
    pub async fn undo(self) -> Result<(), UndoError> {
        undo_all(&*self.env, self.undo).await
    }
}

/// One disk operation of a plan, checked before anything is written. Each carries the file's
/// verified current content, so undoing it needs no second read.
enum DiskOp {
    Remove {
        path: PathBuf,
        previous: Arc<str>,
        mode: Option<u32>,
    },
    /// Creates `path` (O_EXCL) when `previous` is `None`, else overwrites it in place.
    Write {
        path: PathBuf,
        text: Arc<str>,
        mode: Option<u32>,
        previous: Option<Arc<str>>,
    },
}

/// How to undo one performed operation.
enum Undo {
    /// A removed file: create it again, with its mode.
    Recreate { path: PathBuf, text: Arc<str>, mode: Option<u32> },
    /// An overwritten file: write `previous` back while it holds `written` (`None`: a write that
    /// failed half way, put back whatever it holds).
    Rewrite { path: PathBuf, previous: Arc<str>, written: Option<Arc<str>> },
    /// A created file: remove it while it holds `written`.
    Remove { path: PathBuf, written: Arc<str> },
}

impl DiskCommitter {
    pub fn new(env: Arc<dyn ExecutionEnvironment>) -> Self {
        Self { env }
    }

    /// Commits like [`Committer::commit`] and keeps what is needed to undo the commit (for a
    /// caller with more to do that may fail: the language server's editor edit).
    pub async fn commit_undoable(&self, change: ResolvedChangeSet) -> Result<Committed, CommitError> {
        let Plan { steps, outcomes } = plan(&change, &Files(&*self.env)).await?;
        let undo = self.perform(Self::disk_ops(steps)).await?;
        Ok(Committed { files: outcomes, undo, env: Arc::clone(&self.env) })
    }

    /// The plan's steps as disk operations: every removal first (so a path the change vacates
    /// is free for the file that takes it), then every write, each in the change set's order.
    fn disk_ops(steps: Vec<Step<'_, Option<u32>>>) -> Vec<DiskOp> {
        let mut removes = Vec::new();
        let mut writes = Vec::new();
        for step in steps {
            let change = &step.file.change;
            match step.action {
                Action::Create { text } => {
                    writes.push(DiskOp::Write { path: change.path.clone(), text, mode: None, previous: None })
                }
                Action::Delete { current } => removes.push(DiskOp::Remove {
                    path: change.path.clone(),
                    previous: current.text,
                    mode: current.detail,
                }),
                Action::Modify { current, text } => writes.push(DiskOp::Write {
                    path: change.path.clone(),
                    text,
                    mode: None,
                    previous: Some(current.text),
                }),
                Action::Move { current, text } => {
                    removes.push(DiskOp::Remove {
                        path: change.path.clone(),
                        previous: current.text,
                        mode: current.detail,
                    });
                    writes.push(DiskOp::Write {
                        path: change.target_path().to_path_buf(),
                        text,
                        mode: current.detail,
                        previous: None,
                    });
                }
            }
        }
        removes.extend(writes);
        removes
    }

    /// Performs `ops` in order; on a failure, undoes the ones done.
    async fn perform(&self, ops: Vec<DiskOp>) -> Result<Vec<Undo>, CommitError> {
        let mut undo = Vec::new();
        for op in ops {
            if let Err(error) = self.perform_one(op, &mut undo).await {
                return Err(match undo_all(&*self.env, undo).await {
                    Ok(()) => error,
                    Err(left) => {
                        tracing::error!(%left, "could not roll back a partially applied change set");
                        CommitError::NotRolledBack { error: Box::new(error), left }
                    }
                });
            }
        }
        Ok(undo)
    }

    async fn perform_one(&self, op: DiskOp, undo: &mut Vec<Undo>) -> Result<(), CommitError> {
        let env = &*self.env;
        match op {
            DiskOp::Remove { path, previous, mode } => {
                env.remove_file(&path).await.map_err(|error| write_error(&path, error))?;
                undo.push(Undo::Recreate { path, text: previous, mode });
            }
            DiskOp::Write { path, text, mode, previous: None } => {
                env.create_file(&path, &text, mode).await.map_err(|error| match error {
                    // Created since the plan was checked: never overwrite what nobody saw.
                    ExecError::AlreadyExists { .. } => PlanError::AlreadyExists(path.clone()).into(),
                    error => write_error(&path, error),
                })?;
                undo.push(Undo::Remove { path, written: text });
            }
            DiskOp::Write { path, text, previous: Some(previous), .. } => {
                if let Err(error) = env.write_file(&path, &text).await {
                    // Put back what this write may have half replaced; the previous text fits in
                    // the space the file already had, so this does not fail for want of space.
                    let error = write_error(&path, error);
                    undo.push(Undo::Rewrite { path, previous, written: None });
                    return Err(error);
                }
                undo.push(Undo::Rewrite { path, previous, written: Some(text) });
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Committer for DiskCommitter {
    async fn commit(&self, change: ResolvedChangeSet) -> Result<Vec<FileOutcome>, CommitError> {
        Ok(self.commit_undoable(change).await?.files)
    }
}

/// Undoes `steps`, last first; the files that could not be put back are in the error.
async fn undo_all(env: &dyn ExecutionEnvironment, steps: Vec<Undo>) -> Result<(), UndoError> {
    let mut left = Vec::new();
    for step in steps.into_iter().rev() {
        if let Err(problem) = undo_one(env, step).await {
            left.push(problem);
        }
    }
    if left.is_empty() { Ok(()) } else { Err(UndoError(left)) }
}

async fn undo_one(env: &dyn ExecutionEnvironment, step: Undo) -> Result<(), String> {
    let changed_since =
        |path: &Path| format!("{} changed again since it was written; it was left as it is", path.display());
    let still_holds = async |path: &Path, written: &str| {
        env.file_equals(path, written.as_bytes())
            .await
            .map_err(|error| format!("{}: {error}", path.display()))
    };
    match step {
        Undo::Recreate { path, text, mode } => env.create_file(&path, &text, mode).await.map_err(|error| {
            format!("{} was removed and could not be created again: {error}", path.display())
        }),
        Undo::Rewrite { path, previous, written } => {
            if let Some(written) = written
                && !still_holds(&path, &written).await?
            {
                return Err(changed_since(&path));
            }
            env.write_file(&path, &previous)
                .await
                .map_err(|error| format!("{} could not be written back: {error}", path.display()))
        }
        Undo::Remove { path, written } => {
            if !still_holds(&path, &written).await? {
                return Err(changed_since(&path));
            }
            env.remove_file(&path)
                .await
                .map_err(|error| format!("{} was created and could not be removed: {error}", path.display()))
        }
    }
}

/// The files of an environment, as the disk committer plans against them; a file's detail is
/// its permission bits (read for a file that is deleted or moved, to put it back or carry them).
struct Files<'e>(&'e dyn ExecutionEnvironment);

#[async_trait]
impl CurrentText for Files<'_> {
    type Detail = Option<u32>;

    async fn exists(&self, path: &Path) -> Result<bool, WorkspaceError> {
        let stat = self.0.stat(path).await.map_err(|error| WorkspaceError::from_exec(path, error))?;
        Ok(stat.is_some())
    }

    /// When the file is byte for byte the `base` the change was computed against (the usual
    /// case), the base text is reused; the environment compares the file without it being copied.
    async fn current(
        &self,
        path: &Path,
        base: Option<&Snapshot>,
        vacating: bool,
    ) -> Result<Option<Current<Option<u32>>>, WorkspaceError> {
        let env = self.0;
        let missing = |error: WorkspaceError| match error {
            WorkspaceError::NotFound(_) => Ok(None),
            error => Err(error),
        };
        let mode = if vacating {
            match env.stat(path).await.map_err(|error| WorkspaceError::from_exec(path, error))? {
                None => return Ok(None),
                Some(stat) if stat.kind == FileKind::Directory => {
                    return Err(WorkspaceError::IsDirectory(path.to_path_buf()));
                }
                Some(stat) => stat.mode,
            }
        } else {
            None
        };
        if let Some(base) = base {
            match env.file_equals(path, base.text.as_bytes()).await {
                Ok(true) => {
                    return Ok(Some(Current { text: base.text.clone(), is_base: true, detail: mode }));
                }
                Ok(false) => {}
                Err(error) => return missing(WorkspaceError::from_exec(path, error)),
            }
        }
        match read_text(env, path).await {
            Ok(text) => Ok(Some(Current { text, is_base: false, detail: mode })),
            Err(error) => missing(error),
        }
    }
}

/// An environment error met while writing `path`.
fn write_error(path: &Path, error: ExecError) -> CommitError {
    let message = match error {
        ExecError::Io { message, .. } => message,
        error => error.to_string(),
    };
    CommitError::Io { path: path.to_path_buf(), message }
}
