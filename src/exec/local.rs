//! The local machine as an execution environment: direct file access inside the workspace roots,
//! commands through `/bin/bash -c` in their own process group, search with the ripgrep crates.
//!
//! File operations of up to [`INLINE_BYTES`] run on the calling task: a few system calls cost
//! less than handing them to another thread, and a patch of a thousand files makes thousands.
//! A larger read goes to tokio's blocking pool, so the language server's one thread keeps
//! serving; a larger comparison or write (a commit's) runs through `block_in_place` on a
//! multi-threaded runtime and on the calling task otherwise.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::ShellLimits;
use super::paths::PathPolicy;
use super::process::{self, LiveGroups, Spawn};
use super::{
    ChildProcess, DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, FileKind, FileStat,
    GrepOptions, GrepResult, ProcessRequest, env_filter::filter_environment, search, shared,
};
use crate::config::{Config, EnvPolicy};

/// How a [`LocalExecutionEnvironment`] is set up.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    pub working_dir: PathBuf,
    /// Directories the tools may touch; empty means just the working directory.
    pub roots: Vec<PathBuf>,
    pub allow_outside_workspace: bool,
    pub env_policy: EnvPolicy,
    pub limits: ShellLimits,
    /// The variables children inherit from (before filtering); `None` = this process's.
    pub parent_env: Option<Vec<(String, String)>>,
}

impl LocalOptions {
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        Self {
            working_dir: working_dir.into(),
            roots: Vec::new(),
            allow_outside_workspace: false,
            env_policy: EnvPolicy::default(),
            limits: ShellLimits::default(),
            parent_env: None,
        }
    }

    /// Options from the resolved configuration (`[shell]`, `allow_outside_workspace`).
    pub fn from_config(config: &Config, working_dir: impl Into<PathBuf>) -> Self {
        let shell = config.shell();
        let defaults = ShellLimits::default();
        let mut options = Self::new(working_dir);
        options.allow_outside_workspace = config.layer.allow_outside_workspace.unwrap_or(false);
        options.env_policy = shell.env_policy.unwrap_or_default();
        options.limits = ShellLimits {
            default_timeout_ms: shell.default_timeout_ms.unwrap_or(defaults.default_timeout_ms),
            max_timeout_ms: shell.max_timeout_ms.unwrap_or(defaults.max_timeout_ms),
        };
        options
    }
}

/// Runs everything on this machine.
#[derive(Debug)]
pub struct LocalExecutionEnvironment {
    paths: PathPolicy,
    env_policy: EnvPolicy,
    limits: ShellLimits,
    parent_env: Option<Vec<(String, String)>>,
    groups: LiveGroups,
}

impl LocalExecutionEnvironment {
    /// An environment rooted at `working_dir` with default settings.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        Self::with_options(LocalOptions::new(working_dir))
    }

    pub fn with_options(options: LocalOptions) -> Self {
        Self {
            paths: PathPolicy::new(&options.working_dir, &options.roots, options.allow_outside_workspace),
            env_policy: options.env_policy,
            limits: options.limits,
            parent_env: options.parent_env,
            groups: LiveGroups::default(),
        }
    }

    pub fn limits(&self) -> &ShellLimits {
        &self.limits
    }

    /// The timeout that applies to a request: the default when unset, never above the maximum.
    pub fn effective_timeout_ms(&self, requested: u64) -> u64 {
        let wanted = if requested == 0 { self.limits.default_timeout_ms } else { requested };
        wanted.min(self.limits.max_timeout_ms).max(1)
    }

    fn child_env(&self, extra: &std::collections::BTreeMap<String, String>) -> Vec<(String, String)> {
        let mut vars = match &self.parent_env {
            Some(parent) => {
                filter_environment(self.env_policy, parent.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            }
            None => {
                let parent: Vec<(String, String)> = std::env::vars().collect();
                filter_environment(self.env_policy, parent.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            }
        };
        vars.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars
    }
}

impl Drop for LocalExecutionEnvironment {
    fn drop(&mut self) {
        self.groups.kill_all_now();
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ExecError> + Send + 'static,
) -> Result<T, ExecError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ExecError::Io { path: String::new(), message: format!("search task failed: {e}") })?
}

/// File work larger than this (bytes read, compared or written) may leave the calling task.
const INLINE_BYTES: u64 = 1 << 20;

/// Runs blocking file work of `bytes` bytes that borrows its data: inline when small, else
/// through `block_in_place` on a multi-threaded runtime (inline on any other).
fn file_work<T>(bytes: u64, work: impl FnOnce() -> T) -> T {
    if bytes > INLINE_BYTES
        && let Ok(handle) = tokio::runtime::Handle::try_current()
        && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
    {
        return tokio::task::block_in_place(work);
    }
    work()
}

/// Maps an IO error of a write, create or removal of `path`. Unlike a read's, a path below a
/// file is not "missing" here: the write failed because a file is where a folder must be.
fn write_error(path: &Path, error: std::io::Error) -> ExecError {
    match error.kind() {
        std::io::ErrorKind::NotADirectory => {
            ExecError::Io { path: path.display().to_string(), message: error.to_string() }
        }
        _ => ExecError::io(path, error),
    }
}

/// Opens `path` for reading, refusing a directory; with the file's size.
fn open_file(path: &Path) -> Result<(std::fs::File, u64), ExecError> {
    let file = std::fs::File::open(path).map_err(|e| ExecError::io(path, e))?;
    let metadata = file.metadata().map_err(|e| ExecError::io(path, e))?;
    if metadata.is_dir() {
        return Err(ExecError::IsDirectory { path: path.display().to_string() });
    }
    Ok((file, metadata.len()))
}

/// Whether the rest of `file` is exactly `expected`, compared block by block (no copy of the
/// file is made).
fn same_content(file: &mut std::fs::File, expected: &[u8]) -> std::io::Result<bool> {
    const BLOCK: usize = 256 * 1024;
    // One byte more than expected, to notice a file that grew since its size was read.
    let mut block = vec![0; (expected.len() + 1).min(BLOCK)];
    let mut at = 0;
    loop {
        let read = match file.read(&mut block) {
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

/// Opens `path` with `options`, creating its parent directories when they are missing.
fn open_creating_parents(path: &Path, options: &std::fs::OpenOptions) -> std::io::Result<std::fs::File> {
    match options.open(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|error| {
                    // "exists" here is a file where a folder is needed, not the file to create.
                    let kind = match error.kind() {
                        std::io::ErrorKind::AlreadyExists => std::io::ErrorKind::NotADirectory,
                        kind => kind,
                    };
                    std::io::Error::new(
                        kind,
                        format!("cannot create the folder {}: {error}", parent.display()),
                    )
                })?;
            }
            options.open(path)
        }
        opened => opened,
    }
}

/// Writes `bytes` over the file at `path` in place, from its start, then cuts it to their length.
/// The file keeps its inode, so its hard links, owner, permissions, ACLs and extended attributes
/// stay as they are, and watchers see a modification. No temporary file is made: overwriting
/// costs a few system calls, where a new inode and a rename cost ten times as much on ext4 (see
/// docs/ARCHITECTURE.md, "Writing files").
fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = open_creating_parents(path, std::fs::OpenOptions::new().write(true).create(true))?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)
}

/// Creates `path` with `bytes`, failing when anything (even a dangling symlink) is there
/// already. A half-written new file is removed.
fn create_new(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let mut file = open_creating_parents(path, std::fs::OpenOptions::new().write(true).create_new(true))?;
    let written = file.write_all(bytes).and_then(|()| set_mode(&file, mode));
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match mode {
        Some(mode) => file.set_permissions(std::fs::Permissions::from_mode(mode)),
        None => Ok(()),
    }
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _mode: Option<u32>) -> std::io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn mode_of(metadata: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(metadata.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode_of(_metadata: &std::fs::Metadata) -> Option<u32> {
    None
}

#[async_trait]
impl ExecutionEnvironment for LocalExecutionEnvironment {
    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        let path = self.paths.check(path)?;
        let text = tokio::fs::read_to_string(&path).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => {
                ExecError::InvalidInput(format!("{} is not a UTF-8 text file", path.display()))
            }
            _ => ExecError::io(&path, e),
        })?;
        if offset.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = offset.unwrap_or(1).saturating_sub(1);
        let take = limit.unwrap_or(usize::MAX);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
        let path = self.paths.check(path)?;
        let (mut file, len) = open_file(&path)?;
        if len > max_len {
            return Err(ExecError::TooLarge { path: path.display().to_string(), size: len, limit: max_len });
        }
        let read = if len > INLINE_BYTES {
            tokio::task::spawn_blocking(move || shared::read_shared(&mut file, len)).await.map_err(|e| {
                ExecError::Io { path: path.display().to_string(), message: format!("the read failed: {e}") }
            })?
        } else {
            shared::read_shared(&mut file, len)
        };
        read.map_err(|e| ExecError::io(&path, e))
    }

    async fn file_equals(&self, path: &Path, expected: &[u8]) -> Result<bool, ExecError> {
        let path = self.paths.check(path)?;
        let (mut file, len) = open_file(&path)?;
        if len != expected.len() as u64 {
            return Ok(false);
        }
        file_work(len, || same_content(&mut file, expected)).map_err(|e| ExecError::io(&path, e))
    }

    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        let path = self.paths.check(path)?;
        file_work(content.len() as u64, || write_in_place(&path, content.as_bytes()))
            .map_err(|e| write_error(&path, e))
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        let path = self.paths.check(path)?;
        file_work(content.len() as u64, || create_new(&path, content.as_bytes(), mode))
            .map_err(|e| write_error(&path, e))
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        let path = self.paths.check(path)?;
        std::fs::remove_file(&path).map_err(|e| write_error(&path, e))
    }

    async fn stat(&self, path: &Path) -> Result<Option<FileStat>, ExecError> {
        let path = self.paths.check(path)?;
        match std::fs::metadata(&path) {
            Ok(metadata) => {
                let kind = if metadata.is_dir() {
                    FileKind::Directory
                } else if metadata.is_file() {
                    FileKind::File
                } else {
                    FileKind::Other
                };
                Ok(Some(FileStat { kind, len: metadata.len(), mode: mode_of(&metadata) }))
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                // A symlink that leads nowhere still takes the name.
                Ok(path.symlink_metadata().is_ok().then_some(FileStat {
                    kind: FileKind::Other,
                    len: 0,
                    mode: None,
                }))
            }
            Err(error) => Err(ExecError::io(&path, error)),
        }
    }

    async fn file_exists(&self, path: &Path) -> bool {
        match self.paths.check(path) {
            Ok(path) => tokio::fs::try_exists(path).await.unwrap_or(false),
            Err(_) => false,
        }
    }

    async fn list_directory(&self, path: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError> {
        let path = self.paths.check(path)?.into_owned();
        blocking(move || search::list_directory(&path, depth)).await
    }

    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        let cwd = match &request.working_dir {
            Some(dir) => self.resolve_path(dir)?,
            None => self.paths.cwd().to_path_buf(),
        };
        if !cwd.is_dir() {
            return Err(ExecError::NotFound { path: cwd.display().to_string() });
        }
        let timeout_ms = self.effective_timeout_ms(request.timeout_ms);
        tracing::debug!(command = %request.command, timeout_ms, cwd = %cwd.display(), "exec");
        let finished = process::run(
            Spawn {
                command: &request.command,
                cwd: &cwd,
                env: self.child_env(&request.env_vars),
                timeout: Duration::from_millis(timeout_ms),
                cancel: request.cancel.clone(),
                output: request.output.clone(),
            },
            &self.groups,
        )
        .await?;
        Ok(ExecResult {
            stdout: finished.stdout,
            stderr: finished.stderr,
            exit_code: finished.exit_code,
            timed_out: finished.timed_out,
            cancelled: finished.cancelled,
            duration_ms: finished.duration.as_millis() as u64,
            timeout_ms,
        })
    }

    async fn spawn_process(&self, request: ProcessRequest) -> Result<ChildProcess, ExecError> {
        let cwd = match &request.working_dir {
            Some(dir) => self.resolve_path(dir)?,
            None => self.paths.cwd().to_path_buf(),
        };
        tracing::debug!(program = %request.program, cwd = %cwd.display(), "spawn");
        process::spawn_child(
            &request.program,
            &request.args,
            &cwd,
            self.child_env(&request.env_vars),
            &self.groups,
        )
    }

    async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError> {
        let path = self.paths.check(path)?.into_owned();
        let pattern = pattern.to_string();
        blocking(move || search::grep(&pattern, &path, &options)).await
    }

    async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError> {
        let path = self.paths.check(path)?.into_owned();
        let pattern = pattern.to_string();
        blocking(move || search::glob(&pattern, &path)).await
    }

    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
        self.paths.resolve(path)
    }

    fn resolve_paths(&self, paths: &[&Path]) -> Vec<Result<PathBuf, ExecError>> {
        self.paths.resolve_all(paths)
    }

    async fn cleanup(&self) {
        self.groups.terminate_all().await;
    }

    fn working_directory(&self) -> &Path {
        self.paths.cwd()
    }

    fn platform(&self) -> String {
        match std::env::consts::OS {
            "macos" => "darwin".to_string(),
            other => other.to_string(),
        }
    }

    fn os_version(&self) -> String {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .ok()
            .or_else(|| {
                std::process::Command::new("uname")
                    .arg("-r")
                    .output()
                    .ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            })
            .unwrap_or_default();
        format!("{} {release}", self.platform()).trim().to_string()
    }
}
