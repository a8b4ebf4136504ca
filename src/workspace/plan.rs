//! Planning a reviewed change set: the one place that decides, against what each path holds now
//! (the files of an environment, or the agent's view: open buffers first), what every accepted
//! file becomes: created, deleted, modified or moved, rebased onto text that changed since the
//! agent read it, or refused with a typed [`PlanError`]. The disk committer executes a plan on
//! the files; the language server maps one to the editor's document changes.
//!
//! Invariants:
//! - A plan never overwrites text the agent did not see: a file that changed since it was read
//!   is rebased three-way or refused, a delete needs the exact text read, and a create or a move
//!   never lands on a path that holds something, unless the same change vacates that path (a
//!   delete, or a move away).
//! - Nothing is written while planning: a refused plan has changed nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::change::{FileOp, FileOutcome, ResolvedChangeSet, ResolvedFile};
use super::rebase::{RebaseConflict, rebase};
use super::{Holder, Snapshot, Workspace, WorkspaceError};
use crate::exec::ExecutionEnvironment;

/// Why a change set cannot be done on what the files hold now; nothing was changed.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanError {
    /// `path` changed since the agent read it, and the edit overlaps that change.
    Conflict { path: PathBuf, conflict: RebaseConflict },
    /// A file to delete changed since the agent read it.
    ChangedBeforeDelete(PathBuf),
    /// A create or a move would overwrite `path`, which the change does not vacate.
    AlreadyExists(PathBuf),
    /// A file to change or delete no longer exists.
    Vanished(PathBuf),
    /// What a path holds could not be found out.
    Workspace(WorkspaceError),
}

impl From<WorkspaceError> for PlanError {
    fn from(error: WorkspaceError) -> Self {
        Self::Workspace(error)
    }
}

impl PlanError {
    /// What went wrong, without saying that nothing was changed.
    pub fn reason(&self) -> String {
        match self {
            Self::Conflict { path, conflict } => format!(
                "{} changed since you read it and your edit overlaps the change ({conflict})",
                path.display()
            ),
            Self::ChangedBeforeDelete(path) => format!("{} changed since you read it", path.display()),
            Self::AlreadyExists(path) => {
                format!("{} already exists; refusing to overwrite it", path.display())
            }
            Self::Vanished(path) => {
                format!("{} no longer exists (it was deleted since you read it)", path.display())
            }
            Self::Workspace(error) => error.to_string(),
        }
    }

    /// What the model should do next.
    fn advice(&self) -> Option<&'static str> {
        match self {
            Self::Conflict { .. } => Some("Read the file again and redo the edit against its current text"),
            Self::ChangedBeforeDelete(_) => Some("Read it again before deleting it"),
            Self::AlreadyExists(_) => Some("Edit it instead, or delete it first"),
            Self::Vanished(_) | Self::Workspace(_) => None,
        }
    }
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; nothing was changed", self.reason())?;
        match self.advice() {
            Some(advice) => write!(f, ". {advice}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for PlanError {}

/// What a path holds when a change is planned.
#[derive(Debug, Clone, PartialEq)]
pub struct Current<D> {
    /// The text now; the base snapshot's own text when the path still holds it (no copy).
    pub text: Arc<str>,
    /// The path holds exactly the text the change was computed against.
    pub is_base: bool,
    /// What the executor needs besides the text: the file's mode on disk, or where the agent's
    /// view holds the text (a buffer, or the file).
    pub detail: D,
}

/// What one accepted file becomes. The paths are the file's (`file.change.path`, and for a move
/// `file.change.target_path()`).
#[derive(Debug, Clone, PartialEq)]
pub enum Action<D> {
    /// A new file with `text`.
    Create {
        text: Arc<str>,
    },
    Delete {
        current: Current<D>,
    },
    /// The file rewritten with `text` (the proposal, rebased onto `current` when that changed).
    Modify {
        current: Current<D>,
        text: Arc<str>,
    },
    /// The file moved to its target with `text`.
    Move {
        current: Current<D>,
        text: Arc<str>,
    },
}

/// One accepted file of a plan and what it becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<'c, D> {
    pub file: &'c ResolvedFile,
    pub action: Action<D>,
}

impl<D> Step<'_, D> {
    /// The path this step vacates (a delete, or a move's source).
    fn vacates(&self) -> Option<&Path> {
        matches!(self.action, Action::Delete { .. } | Action::Move { .. }).then_some(&*self.file.change.path)
    }

    /// The path this step puts a new file at (a create, or a move's target).
    fn takes(&self) -> Option<&Path> {
        match self.action {
            Action::Create { .. } | Action::Move { .. } => Some(self.file.change.target_path()),
            Action::Delete { .. } | Action::Modify { .. } => None,
        }
    }
}

/// A change set checked against what the files hold now.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<'c, D> {
    /// The accepted files, in the change set's order.
    pub steps: Vec<Step<'c, D>>,
    /// Every file's outcome once the plan is carried out, in the change set's order.
    pub outcomes: Vec<FileOutcome>,
}

/// Moves that take each other's paths (files trading places), found at the move onto this path:
/// they cannot be done one file at a time.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the files moved onto {0} and onward take each other's places")]
pub struct MoveCycle(pub PathBuf);

impl<'c, D> Plan<'c, D> {
    /// The steps in an order in which each can be done whole (a move at once, as an editor
    /// renames a file) once the ones before it are: a step that takes a path another step
    /// vacates comes after that one; otherwise the change set's order is kept.
    pub fn in_sequence(&self) -> Result<Vec<&Step<'c, D>>, MoveCycle> {
        let vacater: HashMap<&Path, usize> =
            self.steps.iter().enumerate().filter_map(|(at, step)| Some((step.vacates()?, at))).collect();
        let waits_for = |at: usize| {
            let taken = self.steps[at].takes()?;
            vacater.get(taken).copied().filter(|&other| other != at)
        };
        let mut done = vec![false; self.steps.len()];
        let mut order = Vec::with_capacity(self.steps.len());
        for start in 0..self.steps.len() {
            // Each step waits for at most one other: follow the chain to its first free step.
            let mut chain = Vec::new();
            let mut next = Some(start);
            while let Some(at) = next.filter(|&at| !done[at]) {
                if chain.contains(&at) {
                    let path = self.steps[at].takes().unwrap_or(&self.steps[at].file.change.path);
                    return Err(MoveCycle(path.to_path_buf()));
                }
                chain.push(at);
                next = waits_for(at);
            }
            for at in chain.into_iter().rev() {
                done[at] = true;
                order.push(&self.steps[at]);
            }
        }
        Ok(order)
    }
}

/// Where a planner finds what a path holds now.
#[async_trait]
pub(super) trait CurrentText: Sync {
    type Detail: Send;

    /// Whether `path` holds anything a create or a move must not overwrite.
    async fn exists(&self, path: &Path) -> Result<bool, WorkspaceError>;

    /// What `path` holds now (`None`: nothing). `base` is the text the change was computed
    /// against, which a source may compare without reading; `vacating` says the file is to be
    /// deleted or moved away.
    async fn current(
        &self,
        path: &Path,
        base: Option<&Snapshot>,
        vacating: bool,
    ) -> Result<Option<Current<Self::Detail>>, WorkspaceError>;
}

/// Plans `change` against what `source` says the paths hold now.
pub(super) async fn plan<'c, S: CurrentText>(
    change: &'c ResolvedChangeSet,
    source: &S,
) -> Result<Plan<'c, S::Detail>, PlanError> {
    let vacated: Vec<&Path> = change
        .files
        .iter()
        .filter(|file| file.accepted && matches!(file.change.op, FileOp::Delete | FileOp::Rename { .. }))
        .map(|file| file.change.path.as_path())
        .collect();
    let refuse_existing = async |target: &Path| -> Result<(), PlanError> {
        if source.exists(target).await? && !vacated.contains(&target) {
            return Err(PlanError::AlreadyExists(target.to_path_buf()));
        }
        Ok(())
    };
    let mut steps = Vec::new();
    let mut outcomes = Vec::new();
    for file in &change.files {
        if !file.accepted {
            outcomes.push(FileOutcome::rejected(file));
            continue;
        }
        let change = &file.change;
        let proposed = || file.final_text.clone().unwrap_or_else(|| Arc::from(""));
        let vanished = || PlanError::Vanished(change.path.clone());
        let action = match &change.op {
            FileOp::Create => {
                refuse_existing(&change.path).await?;
                Action::Create { text: proposed() }
            }
            FileOp::Delete => {
                let current =
                    source.current(&change.path, change.base.as_ref(), true).await?.ok_or_else(vanished)?;
                if !current.is_base {
                    return Err(PlanError::ChangedBeforeDelete(change.path.clone()));
                }
                Action::Delete { current }
            }
            FileOp::Modify | FileOp::Rename { .. } => {
                let target = change.target_path();
                let moved = target != change.path;
                let current =
                    source.current(&change.path, change.base.as_ref(), moved).await?.ok_or_else(vanished)?;
                let text = if current.is_base {
                    proposed()
                } else {
                    let merged = rebase(change.base_text(), &proposed(), &current.text)
                        .map_err(|conflict| PlanError::Conflict { path: change.path.clone(), conflict })?;
                    Arc::from(merged)
                };
                if moved {
                    refuse_existing(target).await?;
                    Action::Move { current, text }
                } else {
                    Action::Modify { current, text }
                }
            }
        };
        let (text, rebased) = match &action {
            Action::Create { text } => (Some(text.clone()), false),
            Action::Delete { .. } => (None, false),
            Action::Modify { current, text } | Action::Move { current, text } => {
                (Some(text.clone()), !current.is_base)
            }
        };
        outcomes.push(FileOutcome::committed(file, text, rebased));
        steps.push(Step { file, action });
    }
    Ok(Plan { steps, outcomes })
}

/// The agent's view of files (open buffers first) as a planner sees it.
struct View<'w> {
    workspace: &'w Workspace,
    env: &'w dyn ExecutionEnvironment,
}

#[async_trait]
impl CurrentText for View<'_> {
    type Detail = Holder;

    async fn exists(&self, path: &Path) -> Result<bool, WorkspaceError> {
        Ok(self.workspace.held(self.env, path).await?.is_some())
    }

    async fn current(
        &self,
        path: &Path,
        base: Option<&Snapshot>,
        _vacating: bool,
    ) -> Result<Option<Current<Holder>>, WorkspaceError> {
        Ok(self.workspace.held(self.env, path).await?.map(|(text, holder)| {
            let is_base = base.is_some_and(|base| *base.text == *text);
            Current { text, is_base, detail: holder }
        }))
    }
}

impl Workspace {
    /// Plans `change` against the text of this view, as the editor holds it (open buffers, and
    /// edits it holds but has not reported) and the files of `env` otherwise.
    pub async fn plan<'c>(
        &self,
        env: &dyn ExecutionEnvironment,
        change: &'c ResolvedChangeSet,
    ) -> Result<Plan<'c, Holder>, PlanError> {
        plan(change, &View { workspace: self, env }).await
    }
}
