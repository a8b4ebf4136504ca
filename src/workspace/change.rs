//! Change sets: the file operations an edit tool proposes (never applies), with per-file hunks,
//! and their resolution after review (all, accepted hunks only, or a user-edited final text).
//! Invariant: a [`ChangeSet`] that exists has passed [`ChangeSet::validate`]: each path is
//! touched once, every operation has the base it needs, and hunks are ordered and apply cleanly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::Snapshot;
use super::hunks::{
    DIFF_DEADLINE, Hunk, apply_hunks, check_hunks, compute_hunks, unified_diff, whole_text_hunk,
};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangeError {
    #[error("invalid change for {path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("{0} is changed twice in one change set; combine the edits into one")]
    DuplicatePath(PathBuf),
    #[error("{path} has no hunk {index} (it has {count})")]
    UnknownHunk { path: PathBuf, index: usize, count: usize },
}

/// What happens to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    Create,
    Modify,
    Delete,
    /// Moved to `to` (possibly with changes: the hunks are against the old path's text).
    Rename {
        to: PathBuf,
    },
}

impl FileOp {
    /// One-letter code as in `git status --short` (A, M, D, R).
    pub fn letter(&self) -> char {
        match self {
            Self::Create => 'A',
            Self::Modify => 'M',
            Self::Delete => 'D',
            Self::Rename { .. } => 'R',
        }
    }
}

/// One file's proposed operation.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    /// Absolute path of the file as it is now (the source of a rename).
    pub path: PathBuf,
    /// How the model named the file (for messages), e.g. `src/main.rs`.
    pub display_path: String,
    pub op: FileOp,
    /// The text the change was computed against; `None` for a create.
    pub base: Option<Snapshot>,
    /// The text after the change; `None` for a delete.
    pub new_text: Option<Arc<str>>,
    /// Minimal hunks from `base` to `new_text` (a create or delete has one whole-file hunk).
    pub hunks: Vec<Hunk>,
}

impl FileChange {
    pub fn create(path: PathBuf, display_path: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        let text = text.into();
        let hunks = vec![whole_text_hunk("", &text)];
        Self {
            path,
            display_path: display_path.into(),
            op: FileOp::Create,
            base: None,
            new_text: Some(text),
            hunks,
        }
    }

    pub fn delete(base: Snapshot, display_path: impl Into<String>) -> Self {
        let hunks = vec![whole_text_hunk(&base.text, "")];
        Self {
            path: base.path.clone(),
            display_path: display_path.into(),
            op: FileOp::Delete,
            base: Some(base),
            new_text: None,
            hunks,
        }
    }

    /// A modification whose hunks are computed by diffing (with a deadline).
    pub fn modify(base: Snapshot, display_path: impl Into<String>, new_text: impl Into<Arc<str>>) -> Self {
        let new_text = new_text.into();
        let hunks = compute_hunks(&base.text, &new_text, Some(Instant::now() + DIFF_DEADLINE));
        Self::modify_with_hunks(base, display_path, new_text, hunks)
    }

    /// A modification whose hunks the caller already knows (e.g. from a patch).
    pub fn modify_with_hunks(
        base: Snapshot,
        display_path: impl Into<String>,
        new_text: impl Into<Arc<str>>,
        hunks: Vec<Hunk>,
    ) -> Self {
        Self {
            path: base.path.clone(),
            display_path: display_path.into(),
            op: FileOp::Modify,
            base: Some(base),
            new_text: Some(new_text.into()),
            hunks,
        }
    }

    /// Turns a modification into a move to `to` (keeping its hunks).
    pub fn moved_to(mut self, to: PathBuf) -> Self {
        self.op = FileOp::Rename { to };
        self
    }

    /// Where the file lives after the change.
    pub fn target_path(&self) -> &Path {
        match &self.op {
            FileOp::Rename { to } => to,
            _ => &self.path,
        }
    }

    pub fn base_text(&self) -> &str {
        self.base.as_ref().map_or("", |base| &base.text)
    }

    pub fn new_text(&self) -> &str {
        self.new_text.as_deref().unwrap_or("")
    }

    /// A unified diff of this change for display (`/dev/null` for the missing side).
    pub fn unified_diff(&self) -> String {
        let (old_label, new_label) = match &self.op {
            FileOp::Create => ("/dev/null".to_string(), self.display_path.clone()),
            FileOp::Delete => (self.display_path.clone(), "/dev/null".to_string()),
            FileOp::Modify => (self.display_path.clone(), self.display_path.clone()),
            FileOp::Rename { to } => (self.display_path.clone(), self.shown_target(to)),
        };
        unified_diff(&old_label, &new_label, self.base_text(), self.new_text(), &self.hunks)
    }

    /// A rename's target as a person reads it: relative to the same folder as `display_path`
    /// when that is a relative path.
    pub fn shown_target(&self, to: &Path) -> String {
        let root = Path::new(&self.display_path)
            .is_relative()
            .then(|| {
                let depth = Path::new(&self.display_path).components().count();
                self.path.ancestors().nth(depth)
            })
            .flatten();
        super::shown_path(to, root.as_slice())
    }

    fn validate(&self) -> Result<(), ChangeError> {
        let invalid =
            |reason: &str| ChangeError::Invalid { path: self.path.clone(), reason: reason.to_string() };
        match (&self.op, self.base.is_some(), self.new_text.is_some()) {
            (FileOp::Create, false, true) | (FileOp::Modify | FileOp::Rename { .. }, true, true) => {}
            (FileOp::Delete, true, false) => {}
            _ => return Err(invalid("the operation does not match the base and new text it carries")),
        }
        if let FileOp::Rename { to } = &self.op
            && to == &self.path
        {
            return Err(invalid("a move onto itself is a modification"));
        }
        if let Some(base) = &self.base
            && base.path != self.path
        {
            return Err(invalid("the base snapshot is of another file"));
        }
        check_hunks(self.base_text(), &self.hunks).map_err(|reason| invalid(&reason))
    }
}

/// A proposed set of file operations with hunks; never applied by the tool that built it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeSet {
    files: Vec<FileChange>,
}

impl ChangeSet {
    /// A validated change set.
    pub fn new(files: Vec<FileChange>) -> Result<Self, ChangeError> {
        let change = Self { files };
        change.validate()?;
        Ok(change)
    }

    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every operation is well-formed and each path is touched once (a path a delete or move
    /// vacates may be the target of a create or move in the same set).
    pub fn validate(&self) -> Result<(), ChangeError> {
        let mut sources: Vec<&Path> = Vec::new();
        let mut targets: Vec<&Path> = Vec::new();
        for file in &self.files {
            file.validate()?;
            match &file.op {
                FileOp::Create => targets.push(&file.path),
                FileOp::Modify => {
                    sources.push(&file.path);
                    targets.push(&file.path);
                }
                FileOp::Delete => sources.push(&file.path),
                FileOp::Rename { to } => {
                    sources.push(&file.path);
                    targets.push(to);
                }
            }
        }
        for list in [&mut sources, &mut targets] {
            list.sort();
            if let Some(pair) = list.windows(2).find(|pair| pair[0] == pair[1]) {
                return Err(ChangeError::DuplicatePath(pair[0].to_path_buf()));
            }
        }
        Ok(())
    }

    /// Resolves the review: `decide` says, per file (by position), what the reviewer chose.
    pub fn resolve(
        self,
        mut decide: impl FnMut(usize, &FileChange) -> FileDecision,
    ) -> Result<ResolvedChangeSet, ChangeError> {
        let mut files = Vec::with_capacity(self.files.len());
        for (position, change) in self.files.into_iter().enumerate() {
            let decision = decide(position, &change);
            files.push(ResolvedFile::new(change, decision)?);
        }
        Ok(ResolvedChangeSet { files })
    }

    /// Everything accepted as proposed.
    pub fn accept_all(self) -> ResolvedChangeSet {
        let files = self.files.into_iter().map(ResolvedFile::accepted).collect();
        ResolvedChangeSet { files }
    }

    /// Everything rejected.
    pub fn reject_all(self) -> ResolvedChangeSet {
        let files = self.files.into_iter().map(ResolvedFile::rejected).collect();
        ResolvedChangeSet { files }
    }
}

/// A reviewer's decision about one file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileDecision {
    Accept,
    Reject,
    /// Only these hunk indices are applied (none: the file is rejected, except that a move
    /// still moves).
    AcceptHunks(Vec<usize>),
    /// The reviewer edited the proposal: this text is written instead.
    FinalText(String),
}

/// One file after review: what will be written.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFile {
    pub change: FileChange,
    /// False when the reviewer rejected the whole file.
    pub accepted: bool,
    /// The text to write; `None` deletes (or, when not accepted, leaves the file alone).
    pub final_text: Option<Arc<str>>,
    pub applied_hunks: Vec<usize>,
    pub rejected_hunks: Vec<usize>,
    pub user_edited: bool,
}

impl ResolvedFile {
    fn accepted(change: FileChange) -> Self {
        let applied_hunks = change.hunks.iter().map(|hunk| hunk.index).collect();
        let final_text = change.new_text.clone();
        Self {
            change,
            accepted: true,
            final_text,
            applied_hunks,
            rejected_hunks: Vec::new(),
            user_edited: false,
        }
    }

    fn rejected(change: FileChange) -> Self {
        let rejected_hunks = change.hunks.iter().map(|hunk| hunk.index).collect();
        Self {
            change,
            accepted: false,
            final_text: None,
            applied_hunks: Vec::new(),
            rejected_hunks,
            user_edited: false,
        }
    }

    fn new(change: FileChange, decision: FileDecision) -> Result<Self, ChangeError> {
        match decision {
            FileDecision::Accept => Ok(Self::accepted(change)),
            FileDecision::Reject => Ok(Self::rejected(change)),
            FileDecision::FinalText(text) => {
                if change.op == FileOp::Delete {
                    return Err(ChangeError::Invalid {
                        path: change.path,
                        reason: "a deleted file cannot be given a final text; accept or reject the delete"
                            .into(),
                    });
                }
                let mut resolved = Self::accepted(change);
                resolved.final_text = Some(Arc::from(text));
                resolved.user_edited = true;
                Ok(resolved)
            }
            FileDecision::AcceptHunks(mut indices) => {
                indices.sort_unstable();
                indices.dedup();
                let count = change.hunks.len();
                if let Some(&index) = indices.iter().find(|&&index| index >= count) {
                    return Err(ChangeError::UnknownHunk { path: change.path, index, count });
                }
                if indices.len() == count {
                    return Ok(Self::accepted(change));
                }
                let keeps_file = matches!(change.op, FileOp::Rename { .. }) || !indices.is_empty();
                if !keeps_file || matches!(change.op, FileOp::Create | FileOp::Delete) {
                    return Ok(Self::rejected(change));
                }
                let accepted: Vec<&Hunk> = indices.iter().map(|&index| &change.hunks[index]).collect();
                let final_text = apply_hunks(change.base_text(), accepted);
                let rejected_hunks = (0..count).filter(|index| !indices.contains(index)).collect();
                Ok(Self {
                    change,
                    accepted: true,
                    final_text: Some(Arc::from(final_text)),
                    applied_hunks: indices,
                    rejected_hunks,
                    user_edited: false,
                })
            }
        }
    }
}

/// A change set after review, ready for a [`super::Committer`].
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedChangeSet {
    pub files: Vec<ResolvedFile>,
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
