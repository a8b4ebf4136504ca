//! The local machine as an execution environment: direct file access inside the workspace roots,
//! commands through `/bin/bash -c` in their own process group, search with the ripgrep crates.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;

use super::ShellLimits;
use super::paths::PathPolicy;
use super::process::{self, LiveGroups, Spawn};
use super::{
    DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, GrepOptions, GrepResult,
    env_filter::filter_environment, search,
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

#[async_trait]
impl ExecutionEnvironment for LocalExecutionEnvironment {
    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        let path = self.resolve_path(path)?;
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

    async fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, ExecError> {
        let path = self.resolve_path(path)?;
        tokio::fs::read(&path).await.map_err(|e| ExecError::io(&path, e))
    }

    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        let path = self.resolve_path(path)?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(|e| ExecError::io(parent, e))?;
        }
        tokio::fs::write(&path, content).await.map_err(|e| ExecError::io(&path, e))
    }

    async fn file_exists(&self, path: &Path) -> bool {
        match self.resolve_path(path) {
            Ok(path) => tokio::fs::try_exists(path).await.unwrap_or(false),
            Err(_) => false,
        }
    }

    async fn list_directory(&self, path: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError> {
        let path = self.resolve_path(path)?;
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

    async fn grep(&self, pattern: &str, path: &Path, options: GrepOptions) -> Result<GrepResult, ExecError> {
        let path = self.resolve_path(path)?;
        let pattern = pattern.to_string();
        blocking(move || search::grep(&pattern, &path, &options)).await
    }

    async fn glob(&self, pattern: &str, path: &Path) -> Result<Vec<PathBuf>, ExecError> {
        let path = self.resolve_path(path)?;
        let pattern = pattern.to_string();
        blocking(move || search::glob(&pattern, &path)).await
    }

    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
        self.paths.resolve(path)
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
