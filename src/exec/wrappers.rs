//! Environments that wrap another one for a cross-cutting concern (spec §4.4): logging every
//! operation, refusing writes, or streaming command output to whoever watches a tool call.

use std::path::Path;
use std::sync::Arc;

use super::{ExecError, ExecRequest, ExecResult, ExecutionEnvironment, OutputSink};

/// Implements the trait for `$ty`: the given methods (commands and the operations that change
/// files, and with `reads` also `read_file` and `read_bytes`), everything else delegated to
/// `$inner`. Other modules' wrappers use it too (`checkpoint`).
macro_rules! wrapper_impl {
    ($ty:ty, $inner:ident, { $($own:item)* }) => {
        $crate::exec::wrapper_impl!(@impl $ty, $inner, {
            $($own)*
            async fn read_file(&self, path: &::std::path::Path, offset: Option<usize>, limit: Option<usize>)
            -> Result<String, $crate::exec::ExecError> {
                self.$inner.read_file(path, offset, limit).await
            }
            async fn read_bytes(&self, path: &::std::path::Path, max_len: u64)
            -> Result<::std::sync::Arc<[u8]>, $crate::exec::ExecError> {
                self.$inner.read_bytes(path, max_len).await
            }
        });
    };
    ($ty:ty, $inner:ident, reads, { $($own:item)* }) => {
        $crate::exec::wrapper_impl!(@impl $ty, $inner, { $($own)* });
    };
    (@impl $ty:ty, $inner:ident, { $($own:item)* }) => {
        #[::async_trait::async_trait]
        impl $crate::exec::ExecutionEnvironment for $ty {
        $($own)*
        async fn file_equals(&self, path: &::std::path::Path, expected: &[u8])
        -> Result<bool, $crate::exec::ExecError> {
            self.$inner.file_equals(path, expected).await
        }
        async fn stat(&self, path: &::std::path::Path)
        -> Result<Option<$crate::exec::FileStat>, $crate::exec::ExecError> {
            self.$inner.stat(path).await
        }
        async fn file_exists(&self, path: &::std::path::Path) -> bool {
            self.$inner.file_exists(path).await
        }
        async fn list_directory(&self, path: &::std::path::Path, depth: usize)
        -> Result<Vec<$crate::exec::DirEntry>, $crate::exec::ExecError> {
            self.$inner.list_directory(path, depth).await
        }
        async fn grep(&self, pattern: &str, path: &::std::path::Path, options: $crate::exec::GrepOptions)
        -> Result<$crate::exec::GrepResult, $crate::exec::ExecError> {
            self.$inner.grep(pattern, path, options).await
        }
        async fn glob(&self, pattern: &str, path: &::std::path::Path)
        -> Result<Vec<::std::path::PathBuf>, $crate::exec::ExecError> {
            self.$inner.glob(pattern, path).await
        }
        fn resolve_path(&self, path: &::std::path::Path)
        -> Result<::std::path::PathBuf, $crate::exec::ExecError> {
            self.$inner.resolve_path(path)
        }
        fn resolve_paths(&self, paths: &[&::std::path::Path])
        -> Vec<Result<::std::path::PathBuf, $crate::exec::ExecError>> {
            self.$inner.resolve_paths(paths)
        }
        async fn initialize(&self) -> Result<(), $crate::exec::ExecError> {
            self.$inner.initialize().await
        }
        async fn spawn_process(&self, request: $crate::exec::ProcessRequest)
        -> Result<$crate::exec::ChildProcess, $crate::exec::ExecError> {
            self.$inner.spawn_process(request).await
        }
        async fn cleanup(&self) {
            self.$inner.cleanup().await
        }
        fn working_directory(&self) -> &::std::path::Path {
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
pub(crate) use wrapper_impl;

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
