//! What the agent reads and writes: open buffers (document store) before the disk, change sets,
//! hunks, diffs, three-way rebase, and the [`EditorPort`] seam to the editor.
//! Invariant: the agent never writes a file directly; it proposes a [`ChangeSet`] computed against
//! a [`Snapshot`], and a [`Committer`] applies it all or nothing, never over text the agent did
//! not see.

mod change;
mod commit;
mod disk_port;
mod documents;
mod hunks;
mod port;
pub mod position;
mod reads;
mod rebase;
mod shared;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use change::{ChangeError, ChangeSet, FileChange, FileDecision, FileOp, ResolvedChangeSet, ResolvedFile};
pub use commit::{ChangeOutcome, CommitError, Committer, DiskCommitter, FileOutcome, FileStatus};
pub use disk_port::DiskPort;
pub use documents::{BufferText, DocumentError, DocumentStore, TextChange};
pub use hunks::{DIFF_DEADLINE, Hunk, apply_hunks, check_hunks, compute_hunks, split_lines, unified_diff};
pub use port::{EditorPort, PermissionDecision, PermissionRequest, PortError};
pub use reads::{ReadCheckError, ReadTracker};
pub use rebase::{RebaseConflict, rebase};
pub(crate) use shared::SharedStrBuilder;

/// Files larger than this are refused by [`Workspace::read`] (the agent edits text, not data dumps).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("empty path: give a file path relative to the working directory or absolute")]
    EmptyPath,
    #[error(
        "{path} is outside the workspace ({roots}); only files under the workspace roots can be read or changed"
    )]
    OutsideRoots { path: PathBuf, roots: String },
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
    fn io(path: &Path, error: &std::io::Error) -> Self {
        match error.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound(path.to_path_buf()),
            std::io::ErrorKind::IsADirectory => Self::IsDirectory(path.to_path_buf()),
            _ => Self::Io { path: path.to_path_buf(), message: error.to_string() },
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

/// `path` as a person reads it: relative to `cwd` when it is an absolute path inside it.
pub fn shown_path(path: &str, cwd: &Path) -> String {
    match Path::new(path).strip_prefix(cwd) {
        Ok(relative) if Path::new(path).is_absolute() && !relative.as_os_str().is_empty() => {
            relative.display().to_string()
        }
        _ => path.to_string(),
    }
}

/// The agent's view of files: open buffers first, the disk otherwise.
#[derive(Debug)]
pub struct Workspace {
    roots: Vec<PathBuf>,
    documents: Arc<DocumentStore>,
    allow_outside: bool,
}

impl Workspace {
    /// `roots` are the folders the agent may touch (canonicalized here); with `allow_outside`,
    /// paths outside them are allowed too.
    pub fn new(roots: Vec<PathBuf>, documents: Arc<DocumentStore>, allow_outside: bool) -> Self {
        let roots = roots.iter().map(|root| canonicalize_lenient(root)).collect();
        Self { roots, documents, allow_outside }
    }

    /// A workspace over the disk only (no open documents), rooted at `root` (exec mode).
    pub fn for_disk(root: PathBuf) -> Self {
        Self::new(vec![root], Arc::new(DocumentStore::new()), false)
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn documents(&self) -> &Arc<DocumentStore> {
        &self.documents
    }

    /// The absolute, symlink-resolved path `path` names (relative paths resolve against `cwd`);
    /// refused when outside the roots unless this workspace allows it.
    pub fn resolve(&self, cwd: &Path, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.resolver(cwd).resolve(path)
    }

    /// Resolves many paths against `cwd` like [`Workspace::resolve`], asking the file system
    /// about each directory once (a patch of a thousand files in ten folders canonicalizes ten
    /// folders, then checks each file for being a symlink). Use it for one batch and drop it:
    /// it does not notice folders renamed after it has seen them.
    pub fn resolver<'w>(&'w self, cwd: &'w Path) -> Resolver<'w> {
        Resolver { workspace: self, cwd, folders: HashMap::new() }
    }

    /// The current text of `path`: the open buffer when there is one, the disk otherwise.
    pub fn read(&self, path: &Path) -> Result<Snapshot, WorkspaceError> {
        if let Some(buffer) = self.documents.get(path) {
            return Ok(Snapshot {
                path: path.to_path_buf(),
                hash: content_hash(buffer.text.as_bytes()),
                text: buffer.text,
                version: Some(buffer.version),
                from_buffer: true,
            });
        }
        let disk = read_disk_text(path);
        if self.documents.has_unopened(path) {
            let on_disk = match &disk {
                Ok(text) => Some(&**text),
                Err(WorkspaceError::NotFound(_)) => None,
                Err(_) => return disk.map(|text| Snapshot::from_disk(path.to_path_buf(), text)),
            };
            if let Some(text) = self.documents.unopened_text(path, on_disk) {
                // The editor holds a server edit of this file in a buffer it does not show.
                return Ok(Snapshot {
                    path: path.to_path_buf(),
                    hash: content_hash(text.as_bytes()),
                    text,
                    version: None,
                    from_buffer: true,
                });
            }
        }
        disk.map(|text| Snapshot::from_disk(path.to_path_buf(), text))
    }

    /// Like [`Workspace::read`], but a missing file is `Ok(None)`.
    pub fn read_if_exists(&self, path: &Path) -> Result<Option<Snapshot>, WorkspaceError> {
        match self.read(path) {
            Ok(snapshot) => Ok(Some(snapshot)),
            Err(WorkspaceError::NotFound(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Whether `path` exists as an open buffer, a buffer the editor holds after a server edit, or
    /// on disk (any kind of file).
    pub fn exists(&self, path: &Path) -> bool {
        self.documents.is_open(path)
            || path.symlink_metadata().is_ok()
            || (self.documents.has_unopened(path) && self.read_if_exists(path).is_ok_and(|s| s.is_some()))
    }
}

/// Resolves a batch of paths for [`Workspace::resolve`], with the folders' canonical forms cached.
pub struct Resolver<'w> {
    workspace: &'w Workspace,
    cwd: &'w Path,
    folders: HashMap<PathBuf, PathBuf>,
}

impl Resolver<'_> {
    pub fn resolve(&mut self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let trimmed = path.trim();
        if trimmed.is_empty() {
            return Err(WorkspaceError::EmptyPath);
        }
        let joined = normalize_lexically(&self.cwd.join(trimmed));
        let resolved = match (joined.parent(), joined.file_name()) {
            (Some(folder), Some(name)) => {
                let folder = match self.folders.get(folder) {
                    Some(canonical) => canonical,
                    None => {
                        let canonical = canonicalize_lenient(folder);
                        self.folders.entry(folder.to_path_buf()).or_insert(canonical)
                    }
                };
                let candidate = folder.join(name);
                match candidate.symlink_metadata() {
                    Ok(metadata) if metadata.file_type().is_symlink() => canonicalize_lenient(&candidate),
                    _ => candidate,
                }
            }
            _ => canonicalize_lenient(&joined),
        };
        let workspace = self.workspace;
        if workspace.allow_outside
            || workspace.roots.is_empty()
            || workspace.roots.iter().any(|root| resolved.starts_with(root))
        {
            return Ok(resolved);
        }
        let roots =
            workspace.roots.iter().map(|root| root.display().to_string()).collect::<Vec<_>>().join(", ");
        Err(WorkspaceError::OutsideRoots { path: resolved, roots })
    }
}

/// Reads `path` from disk as text, refusing binary, non-UTF-8 and oversized files. The text is
/// read straight into its shared allocation (no copy).
pub fn read_disk_text(path: &Path) -> Result<Arc<str>, WorkspaceError> {
    let io = |error: std::io::Error| WorkspaceError::io(path, &error);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if metadata.is_dir() {
        return Err(WorkspaceError::IsDirectory(path.to_path_buf()));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(WorkspaceError::TooLarge {
            path: path.to_path_buf(),
            size: metadata.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    let bytes = shared::read_shared(&mut file, metadata.len()).map_err(io)?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(WorkspaceError::Binary(path.to_path_buf()));
    }
    shared::into_shared_str(bytes).ok_or_else(|| WorkspaceError::NotUtf8(path.to_path_buf()))
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

/// `path` made absolute-looking without `.`/`..`, with symlinks resolved for the longest prefix
/// that exists (the rest, which does not exist yet, is appended as written).
pub(crate) fn canonicalize_lenient(path: &Path) -> PathBuf {
    let normalized = normalize_lexically(path);
    let mut existing = normalized.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut result = canonical;
            result.extend(rest.iter().rev());
            return result;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return normalized,
        }
    }
}

fn normalize_lexically(path: &Path) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !normalized.pop() {
                    normalized.push(component);
                }
            }
            other => normalized.push(other),
        }
    }
    normalized
}

#[cfg(test)]
mod tests;
