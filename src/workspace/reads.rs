//! Which files the agent read in a session (and the text hash it saw), which it changed, and
//! every file it touched either way (for the instruction files of their directories).
//! Invariant: `check` passes only for a file read in this session whose current text is the text
//! last read or written by the agent.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::change::FileStatus;
use super::commit::ChangeOutcome;
use super::{FileOp, Snapshot, content_hash};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadCheckError {
    #[error("{0} has not been read in this session; read it first, then edit it")]
    NotRead(PathBuf),
    #[error("{0} changed since you last read it; read it again, then retry the edit")]
    ChangedSinceRead(PathBuf),
}

#[derive(Debug, Default)]
struct ReadState {
    seen: HashMap<PathBuf, u64>,
    /// In the order first changed; `changed_set` holds the same paths for lookups.
    changed: Vec<PathBuf>,
    changed_set: HashSet<PathBuf>,
    /// Every path read, written or changed, in the order first touched; `touched_set` holds the
    /// same paths for lookups.
    touched: Vec<PathBuf>,
    touched_set: HashSet<PathBuf>,
}

impl ReadState {
    fn touch(&mut self, path: &Path) {
        if self.touched_set.insert(path.to_path_buf()) {
            self.touched.push(path.to_path_buf());
        }
    }
}

/// Files read in a session and the snapshot each was read at (read-before-edit guard), plus the
/// files the agent changed (saved before a shell command runs).
#[derive(Debug, Default)]
pub struct ReadTracker {
    state: Mutex<ReadState>,
}

impl ReadTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the agent saw `snapshot`'s text.
    pub fn record_read(&self, snapshot: &Snapshot) {
        let mut state = self.lock();
        state.seen.insert(snapshot.path.clone(), snapshot.hash);
        state.touch(&snapshot.path);
    }

    /// Records that the agent's own edit left `path` with `text` (so it may edit it again).
    pub fn record_written(&self, path: &Path, text: &str) {
        let mut state = self.lock();
        state.seen.insert(path.to_path_buf(), content_hash(text.as_bytes()));
        state.touch(path);
    }

    /// The read-before-edit guard: `snapshot` (the file's current text) must be what was read.
    pub fn check(&self, snapshot: &Snapshot) -> Result<(), ReadCheckError> {
        match self.lock().seen.get(&snapshot.path) {
            None => Err(ReadCheckError::NotRead(snapshot.path.clone())),
            Some(&hash) if hash != snapshot.hash => {
                Err(ReadCheckError::ChangedSinceRead(snapshot.path.clone()))
            }
            Some(_) => Ok(()),
        }
    }

    pub fn has_read(&self, path: &Path) -> bool {
        self.lock().seen.contains_key(path)
    }

    /// Records that the agent changed (created, modified, deleted or moved) `path`.
    pub fn record_change(&self, path: &Path) {
        let mut state = self.lock();
        if !state.changed_set.contains(path) {
            state.changed_set.insert(path.to_path_buf());
            state.changed.push(path.to_path_buf());
        }
        state.touch(path);
    }

    /// Records every file an applied change set touched, and the text the agent left in it.
    pub fn record_outcome(&self, outcome: &ChangeOutcome) {
        if outcome.error.is_some() {
            return;
        }
        for file in outcome.files.iter().filter(|file| file.status != FileStatus::Rejected) {
            self.record_change(&file.path);
            let target = match &file.op {
                FileOp::Rename { to } => {
                    self.record_change(to);
                    to
                }
                _ => &file.path,
            };
            if let Some(text) = &file.final_text {
                self.record_written(target, text);
            }
        }
    }

    /// Files the agent changed in this session, in the order first changed.
    pub fn changed_files(&self) -> Vec<PathBuf> {
        self.lock().changed.clone()
    }

    /// Files the agent read, wrote or changed, in the order first touched, from the `skip`th on
    /// (a caller that remembers how many it has seen gets only the new ones).
    pub fn touched_files(&self, skip: usize) -> Vec<PathBuf> {
        self.lock().touched.iter().skip(skip).cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReadState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_files_are_listed_once_in_first_touched_order() {
        let reads = ReadTracker::new();
        reads.record_written(Path::new("/w/b.rs"), "b");
        reads.record_change(Path::new("/w/a.rs"));
        reads.record_change(Path::new("/w/b.rs"));
        reads.record_written(Path::new("/w/a.rs"), "a2");
        assert_eq!(reads.touched_files(0), [PathBuf::from("/w/b.rs"), PathBuf::from("/w/a.rs")]);
        assert_eq!(reads.touched_files(1), [PathBuf::from("/w/a.rs")]);
        assert!(reads.touched_files(2).is_empty());
    }
}
