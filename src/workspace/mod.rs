//! What the agent reads and writes: open buffers (document store) before the environment's
//! files, change sets, hunks, diffs, three-way rebase, the one planner of change sets (`plan`),
//! and the [`EditorPort`] seam to the editor.
//! Invariant: the agent never writes a file directly; it proposes a [`ChangeSet`] computed against
//! a [`Snapshot`], and a [`Committer`] applies it all or nothing, never over text the agent did
//! not see. Files are read and written only through an [`ExecutionEnvironment`].

mod change;
mod commit;
mod disk_port;
mod documents;
mod hunks;
mod plan;
mod port;
pub mod position;
mod reads;
mod rebase;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use change::{
    ChangeError, ChangeSet, FileChange, FileDecision, FileOp, FileOutcome, FileStatus, ResolvedChangeSet,
    ResolvedFile,
};
pub use commit::{ChangeOutcome, CommitError, Committed, Committer, DiskCommitter, UndoError};
pub use disk_port::DiskPort;
pub use documents::{BufferText, DocumentError, DocumentStore, TextChange};
pub use hunks::{DIFF_DEADLINE, Hunk, apply_hunks, check_hunks, compute_hunks, split_lines, unified_diff};
pub use plan::{Action, Current, MoveCycle, Plan, PlanError, Step};
pub use port::{EditorPort, McpCall, PermissionDecision, PermissionRequest, PortError};
pub use reads::{ReadCheckError, ReadTracker};
pub use rebase::{RebaseConflict, rebase};

use crate::exec::{ExecError, ExecutionEnvironment, into_shared_str};

/// Files larger than this are refused by [`Workspace::read`] (the agent edits text, not data dumps).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0}: no such file; check the path (list the directory to find the right name)")]
    NotFound(PathBuf),
    #[error("{0} is a directory, not a file")]
    IsDirectory(PathBuf),
    #[error("{0} looks like a binary file (it contains NUL bytes); it cannot be read or edited as text")]
    Binary(PathBuf),
    #[error("{0} is not valid UTF-8 text; it cannot be read or edited as text")]
    NotUtf8(PathBuf),
    #[error("{path} is too large ({size} bytes, limit {limit}); it cannot be read or edited as text")]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
}

impl WorkspaceError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::NotFound(path) | Self::IsDirectory(path) | Self::Binary(path) | Self::NotUtf8(path) => path,
            Self::TooLarge { path, .. } | Self::Io { path, .. } => path,
        }
    }

    /// The error of an environment operation on `path`.
    fn from_exec(path: &Path, error: ExecError) -> Self {
        match error {
            ExecError::NotFound { .. } => Self::NotFound(path.to_path_buf()),
            ExecError::IsDirectory { .. } => Self::IsDirectory(path.to_path_buf()),
            ExecError::TooLarge { size, limit, .. } => {
                Self::TooLarge { path: path.to_path_buf(), size, limit }
            }
            ExecError::Io { message, .. } => Self::Io { path: path.to_path_buf(), message },
            other => Self::Io { path: path.to_path_buf(), message: other.to_string() },
        }
    }
}

/// A file's text as the agent saw it, to compute edits against and to check for later changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// The buffer version when read from an open buffer.
    pub version: Option<i32>,
    /// [`content_hash`] of `text`.
    pub hash: u64,
    pub from_buffer: bool,
}

impl Snapshot {
    /// A snapshot of text read from disk.
    pub fn from_disk(path: PathBuf, text: impl Into<Arc<str>>) -> Self {
        let text = text.into();
        Self { path, hash: content_hash(text.as_bytes()), text, version: None, from_buffer: false }
    }
}

/// `path` as a person reads it: relative to the folder among `folders` that holds it most
/// closely; a path outside all of them (or one of them itself, or a relative path) as it is.
/// The one way every host and tool shows a path.
pub fn shown_path(path: &Path, folders: &[&Path]) -> String {
    folders
        .iter()
        .filter(|_| path.is_absolute())
        .filter_map(|folder| path.strip_prefix(folder).ok())
        .min_by_key(|relative| relative.components().count())
        .filter(|relative| !relative.as_os_str().is_empty())
        .map(|relative| relative.display().to_string())
        .unwrap_or_else(|| path.display().to_string())
}

/// Where the agent's view holds a path's text.
#[derive(Debug, Clone, PartialEq)]
pub enum Holder {
    /// The editor's open buffer, at the version the editor last reported; not `confirmed` while
    /// it holds a server edit the editor has not reported (its version of that text is unknown).
    Buffer { version: i32, confirmed: bool },
    /// A server edit the editor holds in a buffer it does not show, over the file's text `disk`
    /// (`None`: there is no file).
    Hidden { disk: Option<Arc<str>> },
    /// The file in the execution environment.
    File,
}

/// The agent's view of files: open buffers first, the execution environment's files otherwise.
/// Paths are absolute, as the environment's `resolve_path` gives them.
#[derive(Debug, Default)]
pub struct Workspace {
    documents: Arc<DocumentStore>,
}

impl Workspace {
    /// A workspace over the editor's open `documents`.
    pub fn new(documents: Arc<DocumentStore>) -> Self {
        Self { documents }
    }

    pub fn documents(&self) -> &Arc<DocumentStore> {
        &self.documents
    }

    /// The current text of `path`: the open buffer when there is one, the file in `env` otherwise.
    pub async fn read(
        &self,
        env: &dyn ExecutionEnvironment,
        path: &Path,
    ) -> Result<Snapshot, WorkspaceError> {
        let Some((text, holder)) = self.held(env, path).await? else {
            return Err(WorkspaceError::NotFound(path.to_path_buf()));
        };
        let version = match holder {
            Holder::File => return Ok(Snapshot::from_disk(path.to_path_buf(), text)),
            Holder::Buffer { version, .. } => Some(version),
            Holder::Hidden { .. } => None,
        };
        Ok(Snapshot {
            path: path.to_path_buf(),
            hash: content_hash(text.as_bytes()),
            text,
            version,
            from_buffer: true,
        })
    }

    /// What `path` holds in this view, and where (`None`: nothing): the open buffer, else a
    /// server edit the editor holds in a buffer it does not show, else the file in `env`.
    async fn held(
        &self,
        env: &dyn ExecutionEnvironment,
        path: &Path,
    ) -> Result<Option<(Arc<str>, Holder)>, WorkspaceError> {
        if let Some(buffer) = self.documents.get(path) {
            let holder = Holder::Buffer { version: buffer.version, confirmed: buffer.confirmed };
            return Ok(Some((buffer.text, holder)));
        }
        let disk = match read_text(env, path).await {
            Ok(text) => Some(text),
            Err(WorkspaceError::NotFound(_)) => None,
            Err(error) => return Err(error),
        };
        if let Some(text) = self.documents.unopened_text(path, disk.as_deref()) {
            return Ok(Some((text, Holder::Hidden { disk })));
        }
        Ok(disk.map(|text| (text, Holder::File)))
    }

    /// Like [`Workspace::read`], but a missing file is `Ok(None)`.
    pub async fn read_if_exists(
        &self,
        env: &dyn ExecutionEnvironment,
        path: &Path,
    ) -> Result<Option<Snapshot>, WorkspaceError> {
        match self.read(env, path).await {
            Ok(snapshot) => Ok(Some(snapshot)),
            Err(WorkspaceError::NotFound(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Whether `path` exists as an open buffer, a buffer the editor holds after a server edit, or
    /// in `env` (any kind of file).
    pub async fn exists(&self, env: &dyn ExecutionEnvironment, path: &Path) -> bool {
        self.documents.is_open(path)
            || env.stat(path).await.is_ok_and(|stat| stat.is_some())
            || (self.documents.has_unopened(path)
                && self.read_if_exists(env, path).await.is_ok_and(|s| s.is_some()))
    }
}

/// Reads `path` from `env` as text, refusing binary, non-UTF-8 and oversized files. The text is
/// the environment's shared allocation itself (no copy).
pub async fn read_text(env: &dyn ExecutionEnvironment, path: &Path) -> Result<Arc<str>, WorkspaceError> {
    let bytes =
        env.read_bytes(path, MAX_FILE_BYTES).await.map_err(|error| WorkspaceError::from_exec(path, error))?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(WorkspaceError::Binary(path.to_path_buf()));
    }
    into_shared_str(bytes).ok_or_else(|| WorkspaceError::NotUtf8(path.to_path_buf()))
}

/// A fast, non-cryptographic hash of file contents (same input, same hash, within a process and
/// across runs), used to notice that a file changed since it was read. Four independent lanes
/// over 32-byte blocks keep the multiplier busy: a large file hashes at memory speed.
pub fn content_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let step = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(K);
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    let mut lanes = [(bytes.len() as u64).wrapping_mul(K), K, K.rotate_left(17), K.rotate_left(41)];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, bytes) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = step(*lane, word(bytes));
        }
    }
    let mut hash = lanes.into_iter().fold(0, step);
    let mut words = blocks.remainder().chunks_exact(8);
    for bytes in &mut words {
        hash = step(hash, word(bytes));
    }
    for &byte in words.remainder() {
        hash = step(hash, u64::from(byte));
    }
    hash ^ (hash >> 29)
}

#[cfg(test)]
mod tests;
