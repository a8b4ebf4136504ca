//! Where tools run: the [`ExecutionEnvironment`] trait (spec §4), its local implementation and
//! the read-only / logging wrappers.
//!
//! Invariants:
//! - Every command runs in its own process group; a timeout, an abort or `cleanup()` ends the
//!   whole group (SIGTERM, then SIGKILL after the grace period), so nothing is orphaned.
//! - Child processes never inherit secrets (`*_API_KEY`, `*_SECRET`, `*_TOKEN`, `*_PASSWORD`,
//!   `*_CREDENTIAL`…), whatever the environment policy.
//! - Paths are resolved against the working directory with symlinks followed; paths outside the
//!   workspace roots are refused unless the environment was built to allow them. File
//!   operations take the paths `resolve_path` returns as they are (no second resolution).
//! - Files are written in place: an existing file keeps its inode (links, owner, mode, extended
//!   attributes); `create_file` never replaces anything, not even a dangling symlink.

mod env_filter;
pub mod guard;
mod local;
mod paths;
mod process;
mod search;
mod shared;
mod wrappers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use env_filter::{CORE_VARIABLES, filter_environment, is_secret_name, shell_prelude};
pub use guard::KILL_GRACE;
pub use local::{LocalExecutionEnvironment, LocalOptions};
pub(crate) use paths::{canonicalize_lenient, normalize_lexically};
pub use process::ChildProcess;
pub(crate) use process::{LiveGroups, spawn_child};
pub(crate) use shared::{SharedStrBuilder, into_shared_str};
pub(crate) use wrappers::wrapper_impl;
pub use wrappers::{LoggingExecutionEnvironment, OutputExecutionEnvironment, ReadOnlyExecutionEnvironment};

/// A failure of an environment operation. Messages say what went wrong and what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    #[error("{path} does not exist; check the path (glob or list_dir can find the right one)")]
    NotFound { path: String },
    #[error("{path} already exists")]
    AlreadyExists { path: String },
    #[error("{path} is a directory, not a file")]
    IsDirectory { path: String },
    #[error("{path} is too large ({size} bytes, limit {limit})")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path} is outside the workspace ({roots}); only paths inside the workspace can be used")]
    OutsideWorkspace { path: String, roots: String },
    #[error("permission denied: {path}")]
    PermissionDenied { path: String },
    #[error("{0}")]
    InvalidInput(String),
    #[error("write operations are disabled in read-only mode")]
    ReadOnly,
    #[error("cannot run the command: {0}")]
    Spawn(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

impl ExecError {
    /// Maps an IO error on `path` to the matching variant. A path below a file names nothing:
    /// it does not exist.
    pub fn io(path: &Path, error: std::io::Error) -> Self {
        let path = path.display().to_string();
        match error.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => Self::NotFound { path },
            std::io::ErrorKind::PermissionDenied => Self::PermissionDenied { path },
            std::io::ErrorKind::AlreadyExists => Self::AlreadyExists { path },
            std::io::ErrorKind::IsADirectory => Self::IsDirectory { path },
            _ => Self::Io { path, message: error.to_string() },
        }
    }
}

/// One command to run.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    /// Run by `/bin/bash -c`.
    pub command: String,
    /// Wall-clock limit; 0 means the environment's default.
    pub timeout_ms: u64,
    /// Where the command runs (default: the environment's working directory).
    pub working_dir: Option<PathBuf>,
    /// Extra variables set on top of the filtered environment.
    pub env_vars: BTreeMap<String, String>,
    /// Fires to abort the command; the process group is then terminated.
    pub cancel: CancellationToken,
    /// The tool call the command runs for (empty outside one), so wrappers can attribute output.
    pub call_id: String,
    /// Receives the output while the command runs; the result still carries all of it.
    pub output: Option<OutputSink>,
}

/// Where a running command's output goes as it arrives: text in arrival order, stdout and
/// stderr interleaved, each piece valid UTF-8.
#[derive(Clone)]
pub struct OutputSink(Arc<dyn Fn(&str) + Send + Sync>);

impl OutputSink {
    pub fn new(deliver: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(deliver))
    }

    pub fn send(&self, text: &str) {
        (self.0)(text)
    }
}

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSink")
    }
}

impl ExecRequest {
    pub fn new(command: impl Into<String>) -> Self {
        Self { command: command.into(), ..Self::default() }
    }
}

/// A long-lived program to start (code mode's REPL), with piped stdio.
#[derive(Debug, Clone, Default)]
pub struct ProcessRequest {
    pub program: String,
    pub args: Vec<String>,
    /// Where it runs (default: the environment's working directory).
    pub working_dir: Option<PathBuf>,
    /// Extra variables set on top of the filtered environment.
    pub env_vars: BTreeMap<String, String>,
}

/// What a finished (or stopped) command produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExecResult {
    pub stdout: String,
    pub stderr: String,
    /// The exit status; `128 + signal` when a signal ended it, -1 when unknown.
    pub exit_code: i32,
    pub timed_out: bool,
    /// The command was stopped because its cancellation token fired.
    pub cancelled: bool,
    pub duration_ms: u64,
    /// The timeout that applied, after defaults and the maximum.
    pub timeout_ms: u64,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Path relative to the listed directory, `/`-separated.
    pub name: String,
    pub is_dir: bool,
    pub size: Option<u64>,
    /// Nesting level below the listed directory (0 = direct child).
    pub depth: usize,
}

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
    /// Anything else that takes the name: a symlink that leads nowhere, a socket, a device.
    Other,
}

/// What [`ExecutionEnvironment::stat`] says about a path (symlinks followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
    /// Permission bits (`0o644`), where the environment has them.
    pub mode: Option<u32>,
}

/// What `grep` reports per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrepMode {
    /// Matching lines (with context lines when asked).
    #[default]
    Content,
    /// Only which files match.
    FilesWithMatches,
    /// How many matching lines each file has.
    Count,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct GrepOptions {
    /// Only files whose path (relative to the search root) or name matches this glob.
    pub glob: Option<String>,
    pub case_insensitive: bool,
    pub mode: GrepMode,
    pub context_before: usize,
    pub context_after: usize,
    /// Stop after this many matching lines (content/count) or files (files mode); 0 = no limit.
    pub max_results: usize,
    /// Let `.` match newlines and patterns span lines.
    pub multiline: bool,
    /// Texts searched instead of the file at that path: the editor's buffers, saved or not. A
    /// buffer whose file is not on disk yet is searched when it lies under the search root.
    pub buffers: Arc<BTreeMap<PathBuf, Arc<str>>>,
}

/// One line of grep output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine {
    pub line_number: u64,
    pub text: String,
    /// A context line around a match rather than a match.
    pub is_context: bool,
}

/// Matches in one file.
#[derive(Debug, Clone, PartialEq)]
pub struct GrepFile {
    pub path: PathBuf,
    /// Matching lines (content mode; empty otherwise).
    pub lines: Vec<GrepLine>,
    /// Number of matching lines.
    pub match_count: u64,
    pub modified: Option<SystemTime>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct GrepResult {
    /// Files with at least one match, sorted by path (files mode: newest first).
    pub files: Vec<GrepFile>,
    /// Whether `max_results` cut the search short.
    pub limit_reached: bool,
}

/// Files, processes and search, wherever they live (local by default). Implement it to run the
/// same tools in a container, over SSH, or in memory: the tools and the committer that writes
/// their change sets reach files only through it.
#[async_trait]
pub trait ExecutionEnvironment: Send + Sync {
    /// Reads a text file; `offset` is the 1-based first line, `limit` the number of lines.
    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError>;
    /// Reads a file's raw bytes; a directory or a file over `max_len` bytes is refused
    /// ([`ExecError::IsDirectory`], [`ExecError::TooLarge`]) before anything is read.
    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError>;
    /// Whether the file at `path` holds exactly `expected`, compared as it is read (an
    /// environment elsewhere may compare digests instead of sending the file).
    async fn file_equals(&self, path: &Path, expected: &[u8]) -> Result<bool, ExecError>;
    /// Writes `content` to `path` in place: an existing file is overwritten from its start, then
    /// cut to the new length, and keeps its inode; a missing one is created (parent directories
    /// too).
    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError>;
    /// Creates `path` with `content` and, when given, the permission bits `mode`; parent
    /// directories are created. Fails with [`ExecError::AlreadyExists`] when anything is at
    /// `path`, even a symlink that leads nowhere; a half-written file is removed.
    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError>;
    /// Removes a file (not a directory).
    async fn remove_file(&self, path: &Path) -> Result<(), ExecError>;
    /// What is at `path`, symlinks followed; `None` when nothing is.
    async fn stat(&self, path: &Path) -> Result<Option<FileStat>, ExecError>;
    async fn file_exists(&self, path: &Path) -> bool;
    /// Lists a directory down to `depth` levels (1 = direct children), gitignored entries skipped.
    async fn list_directory(&self, path: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError>;
    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError>;
    /// Starts a long-lived program in its own process group (same environment filtering as
    /// commands). Dropping the handle kills the group, and so does `cleanup()`.
    async fn spawn_process(&self, request: ProcessRequest) -> Result<ChildProcess, ExecError> {
        Err(ExecError::Spawn(format!(
            "this execution environment cannot start long-lived processes such as `{}`",
            request.program
        )))
    }
    /// Searches file contents below `path` (a file or a directory) with a regex.
    async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError>;
    /// Files below `path` matching a glob, newest first.
    async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError>;
    /// Makes a path absolute against the working directory, symlinks followed, and checks it
    /// may be used.
    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError>;
    /// Resolves many paths like [`ExecutionEnvironment::resolve_path`], in order; an
    /// environment may share work between them (the local one canonicalizes each folder once).
    fn resolve_paths(&self, paths: &[&Path]) -> Vec<Result<PathBuf, ExecError>> {
        paths.iter().map(|path| self.resolve_path(path)).collect()
    }

    async fn initialize(&self) -> Result<(), ExecError> {
        Ok(())
    }
    /// Ends whatever the environment still runs (background process groups).
    async fn cleanup(&self) {}

    fn working_directory(&self) -> &Path;
    /// "linux", "darwin", "windows", …
    fn platform(&self) -> String;
    fn os_version(&self) -> String;
}

/// Shell-related limits a tool call runs under.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellLimits {
    pub default_timeout_ms: u64,
    pub max_timeout_ms: u64,
}

impl Default for ShellLimits {
    fn default() -> Self {
        Self {
            default_timeout_ms: crate::config::DEFAULT_TIMEOUT_MS,
            max_timeout_ms: crate::config::MAX_TIMEOUT_MS,
        }
    }
}
