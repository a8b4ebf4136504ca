//! Undo and redo of recorded turns: which turns a call takes, what each file becomes, and the
//! one change set that gets it there, carried out by the host like any other change (the
//! editor's buffers through `workspace/applyEdit`, other files through the disk committer).
//!
//! Invariants:
//! - Undo takes the named turn (else the latest one that changed files) and every later turn
//!   not undone yet; redo takes the turns of the latest undo, while no later turn changed files.
//! - Each file is merged three-way, turn by turn (latest first for undo): the turn's after-text
//!   is the base, its before-text ours, what the file holds now theirs. Edits the user made
//!   since are kept; a change that overlaps them, a file deleted since, or one that exists
//!   again is a [`CheckpointError::Conflict`] and nothing is changed.
//! - A file whose text was not kept is skipped and listed in [`Reversal::not_covered`].
//! - A move an edit tool made is reversed as a move.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::{CheckpointError, Checkpoints, HistoryMark, Side, TurnRecord, Uncovered};
use crate::exec::ExecutionEnvironment;
use crate::workspace::{ChangeSet, FileChange, ResolvedChangeSet, Snapshot, Workspace, rebase, shown_path};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Undo,
    Redo,
}

/// How a host carries out a change set (the language server through the editor, the command
/// line on disk); `Err` says why nothing was changed.
#[async_trait]
pub trait Apply: Send + Sync {
    async fn apply(&self, change: ResolvedChangeSet) -> Result<(), String>;
}

/// An undo or a redo, planned (and once carried out, done).
#[derive(Debug, Clone, PartialEq)]
pub struct Reversal {
    pub direction: Direction,
    /// The turns it takes, oldest first.
    pub turns: Vec<u64>,
    /// What changes (`None`: the files already hold what they should).
    pub change: Option<ChangeSet>,
    /// Files whose text was not kept, with why.
    pub not_covered: Vec<(PathBuf, Uncovered)>,
    /// Where the oldest turn's user input is in the history (to rewind to before it).
    pub mark: HistoryMark,
}

impl Reversal {
    /// Each file it changes with what happens to it (A, M, D, R) and, for a move, its target.
    pub fn files(&self) -> Vec<(&FileChange, char)> {
        self.change.iter().flat_map(|c| c.files()).map(|f| (f, f.op.letter())).collect()
    }
}

impl Checkpoints {
    /// The turns `direction` takes: see the module's invariants.
    fn select(&self, direction: Direction, turn: Option<u64>) -> Result<Vec<TurnRecord>, CheckpointError> {
        let turns = self.turns();
        match direction {
            Direction::Undo => {
                let applied: Vec<&TurnRecord> = turns.iter().filter(|t| t.undone.is_none()).collect();
                let first = match turn {
                    Some(id) => {
                        let found =
                            turns.iter().find(|t| t.id == id).ok_or(CheckpointError::UnknownTurn(id))?;
                        if found.undone.is_some() {
                            return Err(CheckpointError::Nothing(format!("turn {id} is undone already")));
                        }
                        id
                    }
                    None => {
                        applied.iter().rev().find(|t| t.changed_files()).map(|t| t.id).ok_or_else(|| {
                            CheckpointError::Nothing(
                                "no turn of this session changed files: nothing to undo".into(),
                            )
                        })?
                    }
                };
                Ok(applied.into_iter().filter(|t| t.id >= first).cloned().collect())
            }
            Direction::Redo => {
                let group = super::redo_group(&turns)
                    .ok_or_else(|| CheckpointError::Nothing("nothing to redo".into()))?;
                Ok(turns.into_iter().filter(|t| t.undone.is_some_and(|m| m.group == group)).collect())
            }
        }
    }

    /// Plans `direction` for `turn` (see [`Checkpoints::select`]) against what the agent's view
    /// holds now; nothing is changed.
    pub async fn plan(
        &self,
        direction: Direction,
        turn: Option<u64>,
        workspace: &Workspace,
        env: &dyn ExecutionEnvironment,
    ) -> Result<Reversal, CheckpointError> {
        let turns = self.select(direction, turn)?;
        let first = turns.first().ok_or_else(|| CheckpointError::Nothing("no turn to take".into()))?;
        let mark = HistoryMark { index: first.history_index, timestamp: first.user_timestamp };
        let ordered: Vec<&TurnRecord> = match direction {
            Direction::Undo => turns.iter().rev().collect(),
            Direction::Redo => turns.iter().collect(),
        };
        let mut now: BTreeMap<PathBuf, Option<Arc<str>>> = BTreeMap::new();
        let mut next: BTreeMap<PathBuf, Option<Arc<str>>> = BTreeMap::new();
        let mut not_covered = Vec::new();
        for turn in &ordered {
            // A moved file's text follows it: merged from its old path's held text.
            let mut moved: Vec<&Path> = Vec::new();
            for m in &turn.moves {
                let (source, target) = match direction {
                    Direction::Undo => (&m.to, &m.from),
                    Direction::Redo => (&m.from, &m.to),
                };
                let record = |path: &Path| turn.files.iter().find(|f| f.path == path);
                let (Some(src), Some(dst)) = (record(source), record(target)) else { continue };
                let (from, to) = match direction {
                    Direction::Undo => (self.side(&src.after)?, self.side(&dst.before)?),
                    Direction::Redo => (self.side(&src.before)?, self.side(&dst.after)?),
                };
                let (Side::Text(from), Side::Text(to)) = (from, to) else { continue };
                let held_source = self.held(&mut now, &mut next, workspace, env, source).await?;
                let held_target = self.held(&mut now, &mut next, workspace, env, target).await?;
                let (Some(held), None) = (held_source, held_target) else { continue };
                let merged = merge(Some(from), Some(to), Some(held))
                    .map_err(|reason| self.conflict(source, reason))?;
                next.insert(source.clone(), None);
                next.insert(target.clone(), merged);
                moved.extend([source.as_path(), target.as_path()]);
            }
            for file in turn.files.iter().filter(|f| !moved.contains(&f.path.as_path())) {
                let (from, to) = match direction {
                    Direction::Undo => (self.side(&file.after)?, self.side(&file.before)?),
                    Direction::Redo => (self.side(&file.before)?, self.side(&file.after)?),
                };
                let (from, to) = match (from, to) {
                    (Side::NotCovered(reason), _) | (_, Side::NotCovered(reason)) => {
                        if !not_covered.iter().any(|(p, _)| p == &file.path) {
                            not_covered.push((file.path.clone(), reason));
                        }
                        continue;
                    }
                    (from, to) => (text_of(from), text_of(to)),
                };
                let held = self.held(&mut now, &mut next, workspace, env, &file.path).await?;
                let merged = merge(from, to, held).map_err(|reason| self.conflict(&file.path, reason))?;
                next.insert(file.path.clone(), merged);
            }
        }
        let moves: Vec<(PathBuf, PathBuf)> = turns
            .iter()
            .flat_map(|t| &t.moves)
            .map(|m| match direction {
                Direction::Undo => (m.to.clone(), m.from.clone()),
                Direction::Redo => (m.from.clone(), m.to.clone()),
            })
            .collect();
        let change = self.change_set(&now, &next, &moves)?;
        Ok(Reversal { direction, turns: turns.iter().map(|t| t.id).collect(), change, not_covered, mark })
    }

    /// The refusal for `path`, named as the user sees it.
    fn conflict(&self, path: &Path, reason: String) -> CheckpointError {
        CheckpointError::Conflict {
            path: path.to_path_buf(),
            shown: shown_path(path, &[self.root()]),
            reason,
        }
    }

    /// What `path` holds in the plan so far: read from the agent's view the first time.
    async fn held(
        &self,
        now: &mut BTreeMap<PathBuf, Option<Arc<str>>>,
        next: &mut BTreeMap<PathBuf, Option<Arc<str>>>,
        workspace: &Workspace,
        env: &dyn ExecutionEnvironment,
        path: &Path,
    ) -> Result<Option<Arc<str>>, CheckpointError> {
        if let Some(held) = next.get(path) {
            return Ok(held.clone());
        }
        let held = workspace
            .read_if_exists(env, path)
            .await
            .map_err(|e| self.conflict(path, e.to_string()))?
            .map(|s| s.text);
        now.insert(path.to_path_buf(), held.clone());
        next.insert(path.to_path_buf(), held.clone());
        Ok(held)
    }

    /// The change from what the files hold (`now`) to what they become (`next`).
    fn change_set(
        &self,
        now: &BTreeMap<PathBuf, Option<Arc<str>>>,
        next: &BTreeMap<PathBuf, Option<Arc<str>>>,
        moves: &[(PathBuf, PathBuf)],
    ) -> Result<Option<ChangeSet>, CheckpointError> {
        let shown = |path: &Path| shown_path(path, &[self.root()]);
        let mut files = Vec::new();
        let mut done: Vec<&Path> = Vec::new();
        for (source, target) in moves {
            let (Some(Some(text)), Some(None), Some(None), Some(Some(moved))) =
                (now.get(source), next.get(source), now.get(target), next.get(target))
            else {
                continue;
            };
            if done.contains(&source.as_path()) || done.contains(&target.as_path()) {
                continue;
            }
            let base = Snapshot::from_disk(source.clone(), text.clone());
            files.push(FileChange::modify(base, shown(source), moved.clone()).moved_to(target.clone()));
            done.extend([source.as_path(), target.as_path()]);
        }
        for (path, held) in now {
            let becomes = &next[path];
            if held == becomes || done.contains(&path.as_path()) {
                continue;
            }
            files.push(match (held, becomes) {
                (Some(text), Some(new)) => FileChange::modify(
                    Snapshot::from_disk(path.clone(), text.clone()),
                    shown(path),
                    new.clone(),
                ),
                (None, Some(new)) => FileChange::create(path.clone(), shown(path), new.clone()),
                (Some(text), None) => {
                    FileChange::delete(Snapshot::from_disk(path.clone(), text.clone()), shown(path))
                }
                (None, None) => continue,
            });
        }
        if files.is_empty() {
            return Ok(None);
        }
        ChangeSet::new(files).map(Some).map_err(|e| CheckpointError::Io(e.to_string()))
    }

    /// Plans `direction` for `turn`, carries it out with `apply` and records it.
    pub async fn reverse(
        &self,
        direction: Direction,
        turn: Option<u64>,
        workspace: &Workspace,
        env: &dyn ExecutionEnvironment,
        apply: &dyn Apply,
    ) -> Result<Reversal, CheckpointError> {
        if self.recording() {
            return Err(CheckpointError::Nothing(
                "the session is working on an input; wait or cancel it first".into(),
            ));
        }
        let reversal = self.plan(direction, turn, workspace, env).await?;
        if let Some(change) = &reversal.change {
            apply.apply(change.clone().accept_all()).await.map_err(CheckpointError::Apply)?;
        }
        self.finish(&reversal)?;
        Ok(reversal)
    }
}

fn text_of(side: Side) -> Option<Arc<str>> {
    match side {
        Side::Text(text) => Some(text),
        Side::Absent | Side::NotCovered(_) => None,
    }
}

/// What a file holding `held` becomes when the change `from → to` is made on it; `Err` says
/// why it cannot be.
fn merge(
    from: Option<Arc<str>>,
    to: Option<Arc<str>>,
    held: Option<Arc<str>>,
) -> Result<Option<Arc<str>>, String> {
    if held == to {
        return Ok(to);
    }
    match (from, to, held) {
        (Some(from), Some(to), Some(held)) => {
            rebase(&from, &to, &held).map(|text| Some(Arc::from(text))).map_err(|c| c.to_string())
        }
        (Some(_), Some(_), None) => Err("it was deleted since".into()),
        (None, Some(_), Some(_)) => Err("it exists again, with other text".into()),
        (None, Some(to), None) => Ok(Some(to)),
        (Some(from), None, Some(held)) if held == from => Ok(None),
        (Some(_), None, Some(_)) => Err("it was edited since; it is not deleted".into()),
        (Some(_), None, None) | (None, None, _) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Option<Arc<str>> {
        Some(Arc::from(s))
    }

    #[test]
    fn a_merge_keeps_the_users_later_lines_and_refuses_overlaps() {
        let undone = merge(t("a\nB\nc\n"), t("a\nb\nc\n"), t("a\nB\nc\nuser\n")).expect("merges");
        assert_eq!(undone, t("a\nb\nc\nuser\n"));
        assert!(
            merge(t("a\nB\nc\n"), t("a\nb\nc\n"), t("a\nX\nc\n")).is_err(),
            "overlapping lines are refused"
        );
        assert_eq!(merge(t("new\n"), None, t("new\n")).expect("removes"), None);
        assert!(merge(t("new\n"), None, t("new\nmine\n")).is_err(), "a created file the user edited stays");
        assert_eq!(merge(None, t("old\n"), None).expect("restores"), t("old\n"));
        assert!(merge(None, t("old\n"), t("other\n")).is_err(), "a path taken again is not clobbered");
    }
}
