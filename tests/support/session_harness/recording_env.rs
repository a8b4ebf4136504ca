//! An execution environment written the way a consumer would (spec §4.1: Docker, SSH, …): it
//! records every command request and delegates the work to another environment. It can also hold
//! every grep until a number of greps run at once, which only calls made in parallel pass.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentls::exec::{
    DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, FileStat, GrepOptions, GrepResult,
};
use async_trait::async_trait;

/// What a tool asked of the environment for one command.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenCommand {
    pub command: String,
    pub timeout_ms: u64,
    pub call_id: String,
}

pub struct RecordingEnvironment {
    pub inner: Arc<dyn ExecutionEnvironment>,
    pub seen: Arc<Mutex<Vec<SeenCommand>>>,
    /// When set, a grep waits until as many greps as the barrier holds wait with it; one that
    /// waits alone for 10 seconds fails.
    pub grep_gate: Option<Arc<tokio::sync::Barrier>>,
}

#[async_trait]
impl ExecutionEnvironment for RecordingEnvironment {
    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        self.inner.read_file(path, offset, limit).await
    }
    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
        self.inner.read_bytes(path, max_len).await
    }
    async fn file_equals(&self, path: &Path, expected: &[u8]) -> Result<bool, ExecError> {
        self.inner.file_equals(path, expected).await
    }
    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        self.inner.write_file(path, content).await
    }
    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        self.inner.create_file(path, content, mode).await
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
        let seen = SeenCommand {
            command: request.command.clone(),
            timeout_ms: request.timeout_ms,
            call_id: request.call_id.clone(),
        };
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(seen);
        self.inner.exec_command(request).await
    }
    async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError> {
        if let Some(gate) = &self.grep_gate
            && tokio::time::timeout(std::time::Duration::from_secs(10), gate.wait()).await.is_err()
        {
            return Err(ExecError::InvalidInput(format!(
                "grep `{pattern}` ran alone: no other grep ran with it"
            )));
        }
        self.inner.grep(pattern, path, options).await
    }
    async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError> {
        self.inner.glob(pattern, path).await
    }
    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
        self.inner.resolve_path(path)
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

/// A `Setup::wrap_env` that records commands into the returned list.
pub fn recording() -> (super::WrapEnv, Arc<Mutex<Vec<SeenCommand>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let list = Arc::clone(&seen);
    let wrap: super::WrapEnv =
        Box::new(move |inner| Arc::new(RecordingEnvironment { inner, seen: list, grep_gate: None }));
    (wrap, seen)
}

/// A `Setup::wrap_env` whose greps each wait until `together` greps run at once.
pub fn gated_grep(together: usize) -> super::WrapEnv {
    let gate = Some(Arc::new(tokio::sync::Barrier::new(together)));
    Box::new(move |inner| Arc::new(RecordingEnvironment { inner, seen: Arc::default(), grep_gate: gate }))
}
