//! Files through the client (`fs/read_text_file`, `fs/write_text_file`): an execution
//! environment in front of the local one, so the tools read what the editor shows (unsaved
//! buffers) and the committer writes where the editor holds the file.
//!
//! Invariants:
//! - A client method is called only when the client advertised it in `initialize`; otherwise,
//!   and for everything else (commands, search, listing, removal), the local environment works
//!   on the disk.
//! - After a command ran, a file the disk changed since (its modification time is not older than
//!   the command's start) is read from the disk, not from the client, unless the agent wrote it
//!   through the client since; a file whose disk text changed behind the agent's back since it
//!   last looked is read from the disk until the client's copy holds that text again. A client
//!   buffer that may be stale is never trusted over the disk.
//! - A create never overwrites: a path that holds anything on disk is refused before the client
//!   is asked to write.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    ReadTextFileRequest, ReadTextFileResponse, SessionId, WriteTextFileRequest, WriteTextFileResponse,
};
use async_trait::async_trait;

use super::wire::Wire;
use crate::exec::{
    ChildProcess, DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, FileStat, GrepOptions,
    GrepResult, ProcessRequest,
};
use crate::workspace::content_hash;

/// The client's file methods, as it advertised them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsAccess {
    pub read: bool,
    pub write: bool,
}

/// What the agent last saw of a file on disk.
#[derive(Debug, Default)]
struct Seen {
    /// The hash of the disk's text when the agent last read or wrote it (`None`: no file).
    disk: Option<Option<u64>>,
    /// The disk changed behind the agent's back and the client's copy has not caught up.
    disk_wins: bool,
    /// The agent wrote it through the client since the last command started.
    written: bool,
}

pub struct ClientFs {
    inner: Arc<dyn ExecutionEnvironment>,
    wire: Arc<Wire>,
    session: SessionId,
    access: FsAccess,
    seen: Mutex<HashMap<PathBuf, Seen>>,
    /// When the last command started.
    last_command: Mutex<Option<std::time::SystemTime>>,
}

impl ClientFs {
    pub fn new(
        inner: Arc<dyn ExecutionEnvironment>,
        wire: Arc<Wire>,
        session: &str,
        access: FsAccess,
    ) -> Self {
        Self {
            inner,
            wire,
            session: SessionId::new(session),
            access,
            seen: Mutex::default(),
            last_command: Mutex::default(),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Seen>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The disk's text of `path` as the agent now knows it (`None`: no file).
    async fn disk_hash(&self, path: &Path) -> Option<u64> {
        self.inner.read_bytes(path, crate::workspace::MAX_FILE_BYTES).await.ok().map(|b| content_hash(&b))
    }

    /// Whether the file on disk was modified after the last command started.
    fn changed_since_command(&self, path: &Path) -> bool {
        let Some(started) = *self.last_command.lock().unwrap_or_else(|p| p.into_inner()) else {
            return false;
        };
        // The local environment's file (this layer is only ever put in front of it).
        std::fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|modified| modified >= started)
    }

    async fn client_write(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        let request =
            WriteTextFileRequest::new(self.session.clone(), path.to_path_buf(), content.to_string());
        self.wire.request::<WriteTextFileResponse>("fs/write_text_file", request).await.map_err(|e| {
            ExecError::Io {
                path: path.display().to_string(),
                message: format!("the editor did not write it: {}", e.message),
            }
        })?;
        let disk = self.disk_hash(path).await;
        let mut seen = self.seen();
        let entry = seen.entry(path.to_path_buf()).or_default();
        entry.disk = Some(disk);
        entry.disk_wins = false;
        entry.written = true;
        Ok(())
    }
}

#[async_trait]
impl ExecutionEnvironment for ClientFs {
    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        self.inner.read_file(path, offset, limit).await
    }

    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
        let disk = self.inner.read_bytes(path, max_len).await;
        match &disk {
            Err(
                ExecError::IsDirectory { .. }
                | ExecError::TooLarge { .. }
                | ExecError::OutsideWorkspace { .. },
            ) => {
                return disk;
            }
            _ if !self.access.read => return disk,
            _ => {}
        }
        let request = ReadTextFileRequest::new(self.session.clone(), path.to_path_buf());
        let client = match self.wire.request::<ReadTextFileResponse>("fs/read_text_file", request).await {
            Ok(response) => response.content,
            // The client has no such file (or cannot read it): the disk answers.
            Err(_) => return disk,
        };
        let disk_hash = disk.as_ref().ok().map(|b| content_hash(b));
        let disk_text_matches = disk.as_ref().is_ok_and(|b| **b == *client.as_bytes());
        let command_changed_it = self.changed_since_command(path);
        let use_disk = {
            let mut seen = self.seen();
            let entry = seen.entry(path.to_path_buf()).or_default();
            if entry.disk.is_some_and(|before| before != disk_hash) {
                entry.disk_wins = true;
            }
            if disk_text_matches {
                entry.disk_wins = false;
            }
            entry.disk = Some(disk_hash);
            !disk_text_matches && !entry.written && (entry.disk_wins || command_changed_it)
        };
        if use_disk {
            tracing::info!(
                "{} changed on disk since the agent last saw it; reading the disk, not the editor's copy",
                path.display()
            );
            return disk;
        }
        if client.len() as u64 > max_len {
            return Err(ExecError::TooLarge {
                path: path.display().to_string(),
                size: client.len() as u64,
                limit: max_len,
            });
        }
        Ok(Arc::from(client.into_bytes()))
    }

    async fn file_equals(&self, path: &Path, expected: &[u8]) -> Result<bool, ExecError> {
        if !self.access.read {
            return self.inner.file_equals(path, expected).await;
        }
        let limit = (expected.len() as u64).max(crate::workspace::MAX_FILE_BYTES);
        Ok(*self.read_bytes(path, limit).await? == *expected)
    }

    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        if !self.access.write {
            return self.inner.write_file(path, content).await;
        }
        self.client_write(path, content).await
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        if !self.access.write {
            return self.inner.create_file(path, content, mode).await;
        }
        if self.inner.stat(path).await?.is_some() {
            return Err(ExecError::AlreadyExists { path: path.display().to_string() });
        }
        self.client_write(path, content).await
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        self.inner.remove_file(path).await
    }

    async fn stat(&self, path: &Path) -> Result<Option<FileStat>, ExecError> {
        self.inner.stat(path).await
    }

    async fn file_exists(&self, path: &Path) -> bool {
        self.inner.file_exists(path).await
    }

    async fn list_directory(&self, path: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError> {
        self.inner.list_directory(path, depth).await
    }

    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        // File times come from the kernel's coarse clock (a tick behind a precise reading): a
        // second's margin keeps a fast command's writes from looking older than its start.
        let started = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
        *self.last_command.lock().unwrap_or_else(|p| p.into_inner()) = Some(started);
        self.seen().values_mut().for_each(|seen| seen.written = false);
        self.inner.exec_command(request).await
    }

    async fn spawn_process(&self, request: ProcessRequest) -> Result<ChildProcess, ExecError> {
        self.inner.spawn_process(request).await
    }

    async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError> {
        self.inner.grep(pattern, path, options).await
    }

    async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError> {
        self.inner.glob(pattern, path).await
    }

    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
        self.inner.resolve_path(path)
    }

    fn resolve_paths(&self, paths: &[&Path]) -> Vec<Result<PathBuf, ExecError>> {
        self.inner.resolve_paths(paths)
    }

    async fn initialize(&self) -> Result<(), ExecError> {
        self.inner.initialize().await
    }

    async fn cleanup(&self) {
        self.inner.cleanup().await
    }

    fn working_directory(&self) -> &Path {
        self.inner.working_directory()
    }

    fn platform(&self) -> String {
        self.inner.platform()
    }

    fn os_version(&self) -> String {
        self.inner.os_version()
    }
}
