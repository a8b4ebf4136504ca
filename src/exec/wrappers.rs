//! Environments that wrap another one for a cross-cutting concern (spec §4.4): logging every
//! operation, refusing writes, or streaming command output to whoever watches a tool call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::{
    ChildProcess, DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, FileStat, GrepOptions,
    GrepResult, OutputSink, ProcessRequest,
};

/// Implements the trait for `$ty`: the given methods (commands and the operations that change
/// files), everything else delegated to `$inner`.
macro_rules! wrapper_impl {
    ($ty:ty, $inner:ident, { $($own:item)* }) => {
        #[async_trait]
        impl ExecutionEnvironment for $ty {
        $($own)*
        async fn read_file(&self, path: &Path, offset: Option<usize>, limit: Option<usize>)
        -> Result<String, ExecError> {
            self.$inner.read_file(path, offset, limit).await
        }
        async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
            self.$inner.read_bytes(path, max_len).await
        }
        async fn file_equals(&self, path: &Path, expected: &[u8]) -> Result<bool, ExecError> {
            self.$inner.file_equals(path, expected).await
        }
        async fn stat(&self, path: &Path) -> Result<Option<FileStat>, ExecError> {
            self.$inner.stat(path).await
        }
        async fn file_exists(&self, path: &Path) -> bool {
            self.$inner.file_exists(path).await
        }
        async fn list_directory(&self, path: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError> {
            self.$inner.list_directory(path, depth).await
        }
        async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError> {
            self.$inner.grep(pattern, path, options).await
        }
        async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError> {
            self.$inner.glob(pattern, path).await
        }
        fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
            self.$inner.resolve_path(path)
        }
        fn resolve_paths(&self, paths: &[&Path]) -> Vec<Result<PathBuf, ExecError>> {
            self.$inner.resolve_paths(paths)
        }
        async fn initialize(&self) -> Result<(), ExecError> {
            self.$inner.initialize().await
        }
        async fn spawn_process(&self, request: ProcessRequest) -> Result<ChildProcess, ExecError> {
            self.$inner.spawn_process(request).await
        }
        async fn cleanup(&self) {
            self.$inner.cleanup().await
        }
        fn working_directory(&self) -> &Path {
            self.$inner.working_directory()
        }
        fn platform(&self) -> String {
            self.$inner.platform()
        }
        fn os_version(&self) -> String {
            self.$inner.os_version()
        }
        }
    };
}

/// Logs each command and its outcome, and each file written, created or removed, through `tracing`.
pub struct LoggingExecutionEnvironment {
    inner: Arc<dyn ExecutionEnvironment>,
}

impl LoggingExecutionEnvironment {
    pub fn new(inner: Arc<dyn ExecutionEnvironment>) -> Self {
        Self { inner }
    }
}

wrapper_impl!(LoggingExecutionEnvironment, inner, {
    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        tracing::info!(path = %path.display(), bytes = content.len(), "write_file");
        self.inner.write_file(path, content).await
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        tracing::info!(path = %path.display(), bytes = content.len(), "create_file");
        self.inner.create_file(path, content, mode).await
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        tracing::info!(path = %path.display(), "remove_file");
        self.inner.remove_file(path).await
    }

    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        tracing::info!(command = %request.command, "exec");
        let result = self.inner.exec_command(request).await;
        match &result {
            Ok(r) => tracing::info!(
                exit_code = r.exit_code,
                duration_ms = r.duration_ms,
                timed_out = r.timed_out,
                "exit"
            ),
            Err(e) => tracing::info!(error = %e, "exec failed"),
        }
        result
    }
});

/// Refuses every file write, create and removal; commands still run (they are not analysed for
/// write intent).
pub struct ReadOnlyExecutionEnvironment {
    inner: Arc<dyn ExecutionEnvironment>,
}

impl ReadOnlyExecutionEnvironment {
    pub fn new(inner: Arc<dyn ExecutionEnvironment>) -> Self {
        Self { inner }
    }
}

wrapper_impl!(ReadOnlyExecutionEnvironment, inner, {
    async fn write_file(&self, _path: &Path, _content: &str) -> Result<(), ExecError> {
        Err(ExecError::ReadOnly)
    }

    async fn create_file(&self, _path: &Path, _content: &str, _mode: Option<u32>) -> Result<(), ExecError> {
        Err(ExecError::ReadOnly)
    }

    async fn remove_file(&self, _path: &Path) -> Result<(), ExecError> {
        Err(ExecError::ReadOnly)
    }

    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        self.inner.exec_command(request).await
    }
});

/// Chooses the output sink of a command from the tool call it runs for.
pub type SinkForCall = dyn Fn(&str) -> Option<OutputSink> + Send + Sync;

/// Gives every command that has no output sink of its own the one chosen for its tool call, so a
/// host sees output while the command runs.
pub struct OutputExecutionEnvironment {
    inner: Arc<dyn ExecutionEnvironment>,
    sink_for: Box<SinkForCall>,
}

impl OutputExecutionEnvironment {
    pub fn new(
        inner: Arc<dyn ExecutionEnvironment>,
        sink_for: impl Fn(&str) -> Option<OutputSink> + Send + Sync + 'static,
    ) -> Self {
        Self { inner, sink_for: Box::new(sink_for) }
    }
}

wrapper_impl!(OutputExecutionEnvironment, inner, {
    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        self.inner.write_file(path, content).await
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        self.inner.create_file(path, content, mode).await
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        self.inner.remove_file(path).await
    }

    async fn exec_command(&self, mut request: ExecRequest) -> Result<ExecResult, ExecError> {
        if request.output.is_none() {
            request.output = (self.sink_for)(&request.call_id);
        }
        self.inner.exec_command(request).await
    }
});
