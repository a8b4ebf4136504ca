//! Nested instruction files during a session: the `AGENTS.md` / `CLAUDE.md` / `GEMINI.md` of a
//! subdirectory start to apply when the agent reads or edits a file under it, or when a prompt's
//! context names one. They reach the model as an instructions turn of the history (a user-role
//! message), so the transcript records them and a resumed session sends the same requests.
//!
//! Invariant: a file is handed over once, again only when its text changed (after a reload);
//! the files a resumed history already holds count as handed over.

use std::path::{Path, PathBuf};

use super::turn::Turn;
use crate::profiles::ProfileKind;
use crate::profiles::project_docs::NestedDocs;
use crate::workspace::ReadTracker;

pub(super) struct Instructions {
    nested: NestedDocs,
    /// How many of the tracker's touched files were looked at.
    touched: usize,
}

impl Instructions {
    pub(super) fn new(cwd: &Path, profile: ProfileKind, history: &[Turn]) -> Self {
        let mut nested = NestedDocs::new(cwd, profile);
        for turn in history {
            if let Turn::Instructions(turn) = turn {
                nested.restore(&turn.docs);
            }
        }
        Self { nested, touched: 0 }
    }

    /// The turn for files the agent touched since the last call, and for `context` (the files a
    /// prompt names), when any of them brings instruction files the model does not have yet.
    pub(super) fn after_work(&mut self, reads: &ReadTracker, context: &[PathBuf]) -> Option<Turn> {
        let touched = reads.touched_files(self.touched);
        self.touched += touched.len();
        let docs = self.nested.for_files(context.iter().chain(&touched).map(PathBuf::as_path));
        (!docs.is_empty()).then(|| Turn::instructions(docs))
    }

    /// After an instruction file changed: the turn with the handed-over files whose text changed.
    pub(super) fn after_reload(&mut self) -> Option<Turn> {
        let docs = self.nested.refresh();
        (!docs.is_empty()).then(|| Turn::instructions(docs))
    }
}
