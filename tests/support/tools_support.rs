//! Shared test setup for tool tests: a real local environment and disk workspace in a tempdir,
//! and an editor port that records what tools ask of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentls::exec::ShellLimits;
use agentls::exec::{ExecutionEnvironment, LocalExecutionEnvironment, LocalOptions};
use agentls::tools::ToolContext;
use agentls::workspace::{
    ChangeOutcome, ChangeSet, EditorPort, PermissionDecision, PermissionRequest, PortError, ReadTracker,
    Workspace,
};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// Records permission requests and saves; answers permission with `decision`.
pub struct RecordingPort {
    pub decision: PermissionDecision,
    pub permissions: Mutex<Vec<PermissionRequest>>,
    pub saves: Mutex<Vec<Vec<PathBuf>>>,
}

impl RecordingPort {
    pub fn allowing() -> Self {
        Self::with(PermissionDecision::AllowOnce)
    }
    pub fn with(decision: PermissionDecision) -> Self {
        Self { decision, permissions: Mutex::new(Vec::new()), saves: Mutex::new(Vec::new()) }
    }
}

#[async_trait]
impl EditorPort for RecordingPort {
    async fn propose(&self, _change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        Err(PortError("this test port does not take change sets".into()))
    }
    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        self.permissions.lock().unwrap().push(request);
        self.decision.clone()
    }
    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        self.saves.lock().unwrap().push(paths.to_vec());
        Ok(())
    }
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub port: Arc<RecordingPort>,
    pub ctx: ToolContext,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_port(RecordingPort::allowing(), ShellLimits::default())
    }

    pub fn with_port(port: RecordingPort, shell: ShellLimits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut options = LocalOptions::new(&root);
        options.limits = shell.clone();
        let env: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::with_options(options));
        let port = Arc::new(port);
        let ctx = ToolContext {
            env,
            workspace: Arc::new(Workspace::default()),
            editor: port.clone(),
            reads: Arc::new(ReadTracker::new()),
            cwd: root,
            call_id: "call-1".into(),
            shell,
            cancel: CancellationToken::new(),
            model: None,
            output: None,
            agents: None,
        };
        Self { dir, port, ctx }
    }

    pub fn root(&self) -> &Path {
        &self.ctx.cwd
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }
}

/// A shell result without its last line, which must report the duration (`Duration: 12 ms`).
pub fn without_duration(content: &str) -> &str {
    let (rest, last) = content.rsplit_once('\n').unwrap_or(("", content));
    let duration = regex::Regex::new(r"^Duration: (\d+ ms|\d+\.\d s)$").unwrap();
    assert!(duration.is_match(last), "the last line reports the duration: {content:?}");
    rest
}
