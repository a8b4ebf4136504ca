//! Where a session's changes are seen: its editor port (edit tools' change sets), its
//! execution environment (commands) and the tools that change files on their own (MCP tools,
//! code mode's Python), each wrapped to tell the session's [`Checkpoints`].
//!
//! Invariants:
//! - The wrappers change nothing about what they wrap: every call is passed on as it came, and
//!   its answer returned as it was.
//! - A change set's files are read as the agent's view holds them (open buffers first) just
//!   before it is proposed and just after its outcome; a command's (or such a tool call's)
//!   changes are found by bringing the kept tree ([`Tree`]) up to date just before and after
//!   it, off the async threads.
//! - A change is noted in the turn the calling task works for ([`Checkpoints::target`]):
//!   the input being recorded, or for a subagent the input that started it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::scan;
use super::tree::{Change, Ticket, Tree};
use super::{Checkpoints, Side, Uncovered};
use serde_json::Value;

use crate::exec::{ExecError, ExecRequest, ExecResult, ExecutionEnvironment};
use crate::tools::summary::CallArgs;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRefresh, ToolSource};
use crate::workspace::{
    ChangeOutcome, ChangeSet, EditorPort, FileOp, FileStatus, PermissionDecision, PermissionRequest,
    PortError, Workspace, WorkspaceError,
};

/// The session's editor port, telling its checkpoints what each change set did.
pub struct RecordingPort {
    inner: Arc<dyn EditorPort>,
    checkpoints: Arc<Checkpoints>,
    workspace: Arc<Workspace>,
    env: Arc<dyn ExecutionEnvironment>,
}

impl RecordingPort {
    pub fn new(
        inner: Arc<dyn EditorPort>,
        checkpoints: Arc<Checkpoints>,
        workspace: Arc<Workspace>,
        env: Arc<dyn ExecutionEnvironment>,
    ) -> Self {
        Self { inner, checkpoints, workspace, env }
    }

    async fn held(&self, path: &Path) -> Side {
        match self.workspace.read_if_exists(self.env.as_ref(), path).await {
            Ok(Some(snapshot)) => Side::Text(snapshot.text),
            Ok(None) => Side::Absent,
            Err(WorkspaceError::TooLarge { .. }) => Side::NotCovered(Uncovered::TooLarge),
            Err(WorkspaceError::Binary(_) | WorkspaceError::NotUtf8(_)) => {
                Side::NotCovered(Uncovered::Binary)
            }
            Err(_) => Side::NotCovered(Uncovered::Unreadable),
        }
    }
}

#[async_trait]
impl EditorPort for RecordingPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        let Some(turn) = self.checkpoints.target() else {
            return self.inner.propose(change).await;
        };
        // Each file's paths: its own, and for a move its target.
        let paths: Vec<Vec<PathBuf>> = change
            .files()
            .iter()
            .map(|f| match &f.op {
                FileOp::Rename { to } => vec![f.path.clone(), to.clone()],
                _ => vec![f.path.clone()],
            })
            .collect();
        let mut before = HashMap::new();
        for path in paths.iter().flatten() {
            let held = self.held(path).await;
            before.insert(path.clone(), held);
        }
        let outcome = self.inner.propose(change).await?;
        let landed: Vec<PathBuf> = outcome
            .files
            .iter()
            .filter(|f| f.status != FileStatus::Rejected)
            .map(|f| f.path.clone())
            .collect();
        // The text the commit reports is the after-text: a read could come before the editor
        // reported it (a file created through `workspace/applyEdit` opens empty, then fills).
        let committed: HashMap<&PathBuf, Arc<str>> =
            outcome.files.iter().filter_map(|f| Some((&f.path, f.final_text.clone()?))).collect();
        for file in paths.iter().filter(|p| landed.contains(&p[0])) {
            // A move's text ends at its target; anything else at its own path.
            let landed_at = file.last().expect("a file has a path");
            for path in file {
                let after = match committed.get(&file[0]) {
                    Some(text) if path == landed_at => Side::Text(text.clone()),
                    _ => self.held(path).await,
                };
                let prior = before.get(path).cloned().unwrap_or(Side::Absent);
                self.checkpoints.note(turn, path, prior, after);
            }
            if let [from, to] = file.as_slice() {
                self.checkpoints.note_move(turn, from, to);
            }
        }
        Ok(outcome)
    }

    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        self.inner.ask_permission(request).await
    }

    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        self.inner.save(paths).await
    }
}

/// The session's execution environment, scanning the workspace around each command and
/// noting the files the agent reads.
pub struct RecordingEnvironment {
    inner: Arc<dyn ExecutionEnvironment>,
    checkpoints: Arc<Checkpoints>,
}

impl RecordingEnvironment {
    pub fn new(inner: Arc<dyn ExecutionEnvironment>, checkpoints: Arc<Checkpoints>) -> Self {
        Self { inner, checkpoints }
    }
}

/// An action that may change files outside the edit tools (a command, an MCP call, code
/// mode's Python) between its start and its end: its place in the tree's log and the prior
/// texts of its candidates.
pub(crate) struct Pending {
    ticket: Ticket,
    prior: HashMap<PathBuf, Side>,
}

impl Checkpoints {
    /// Before such an action: the tree brought up to date, and the texts of the files `words`
    /// name (run in `cwd`) and of the ones the session knows. `None` when the workspace is too
    /// large to record.
    pub(crate) fn before_action(&self, words: &str, cwd: &Path) -> Option<Pending> {
        let mut kept = super::lock(&self.tree);
        let tree = kept.get_or_insert_with(|| Tree::new(&self.root, &self.data_dir));
        if !tree.complete() {
            return None;
        }
        let ticket = tree.begin();
        let mut candidates = scan::named_by(words, cwd, &*tree);
        candidates.extend(self.known());
        let prior =
            candidates.into_iter().filter_map(|path| Some((path.clone(), tree.text(&path)?))).collect();
        Some(Pending { ticket, prior })
    }

    /// Runs `action`, which may change files outside the edit tools (`words`: its command
    /// line or arguments, run in `cwd`), with the tree brought up to date before and after it,
    /// and notes what changed in the turn the current task works for. Nothing is scanned
    /// outside a turn.
    pub(crate) async fn around<T>(
        self: Arc<Self>,
        words: &str,
        cwd: &Path,
        action: impl Future<Output = T>,
    ) -> T {
        let Some(turn) = self.target() else { return action.await };
        let (me, words, cwd) = (self.clone(), words.to_string(), cwd.to_path_buf());
        let pending =
            tokio::task::spawn_blocking(move || me.before_action(&words, &cwd)).await.ok().flatten();
        let result = action.await;
        if let Some(pending) = pending {
            // Off the async threads: the listings, the reads and a late turn's blobs.
            let _ = tokio::task::spawn_blocking(move || {
                for (path, prior, now) in self.after_action(pending) {
                    self.note(turn, &path, prior, now);
                }
            })
            .await;
        }
        result
    }

    /// After it: each changed path with what it held and holds.
    pub(crate) fn after_action(&self, pending: Pending) -> Vec<(PathBuf, Side, Side)> {
        let Pending { ticket, mut prior } = pending;
        let mut kept = super::lock(&self.tree);
        let Some(tree) = kept.as_mut() else { return Vec::new() };
        let changes = tree.end(ticket);
        changes
            .into_iter()
            .map(|Change { path, before, after }| {
                let was = match before {
                    None => Side::Absent,
                    Some(stamp) => prior.remove(&path).unwrap_or(Side::NotCovered(
                        if stamp.len > super::MAX_FILE_BYTES {
                            Uncovered::TooLarge
                        } else {
                            Uncovered::PriorUnknown
                        },
                    )),
                };
                let now = match after {
                    Some(_) => tree.text(&path).unwrap_or(Side::Absent),
                    None => Side::Absent,
                };
                (path, was, now)
            })
            .collect()
    }
}

crate::exec::wrapper_impl!(RecordingEnvironment, inner, reads, {
    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        let cwd = request.working_dir.clone().unwrap_or_else(|| self.inner.working_directory().to_path_buf());
        let command = request.command.clone();
        self.checkpoints.clone().around(&command, &cwd, self.inner.exec_command(request)).await
    }

    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        self.checkpoints.know(path);
        self.inner.read_file(path, offset, limit).await
    }

    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
        self.checkpoints.know(path);
        self.inner.read_bytes(path, max_len).await
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
});

/// A tool whose calls may change files outside the session's environment and editor port (an
/// MCP server's tool, code mode's Python): the workspace is brought up to date around each
/// call as around a command, its words the string values of the arguments.
pub struct RecordingTool {
    inner: Arc<dyn Tool>,
    checkpoints: Arc<Checkpoints>,
}

impl RecordingTool {
    pub fn new(inner: Arc<dyn Tool>, checkpoints: Arc<Checkpoints>) -> Self {
        Self { inner, checkpoints }
    }

    /// Wraps the tools among `tools` that change files on their own (code mode's `python`).
    pub fn wrap_all(tools: Vec<Arc<dyn Tool>>, checkpoints: &Arc<Checkpoints>) -> Vec<Arc<dyn Tool>> {
        tools
            .into_iter()
            .map(|tool| match tool.name() {
                "python" => Arc::new(Self::new(tool, checkpoints.clone())) as Arc<dyn Tool>,
                _ => tool,
            })
            .collect()
    }
}

/// The string values of a call's arguments, space-separated: what names its files.
fn words_of(args: &Value, out: &mut String) {
    match args {
        Value::String(s) => {
            out.push(' ');
            out.push_str(s);
        }
        Value::Array(items) => items.iter().for_each(|v| words_of(v, out)),
        Value::Object(map) => map.values().for_each(|v| words_of(v, out)),
        _ => {}
    }
}

#[async_trait]
impl Tool for RecordingTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Value {
        self.inner.parameters()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut words = String::new();
        words_of(&args, &mut words);
        self.checkpoints.clone().around(&words, &ctx.cwd, self.inner.call(args, ctx)).await
    }

    fn read_only(&self) -> bool {
        self.inner.read_only()
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        self.inner.summary(call)
    }
}

/// A session's MCP tools, each a [`RecordingTool`].
pub struct RecordingToolSource {
    inner: Arc<dyn ToolSource>,
    checkpoints: Arc<Checkpoints>,
}

impl RecordingToolSource {
    pub fn new(inner: Arc<dyn ToolSource>, checkpoints: Arc<Checkpoints>) -> Self {
        Self { inner, checkpoints }
    }
}

#[async_trait]
impl ToolSource for RecordingToolSource {
    fn for_child(&self) -> Arc<dyn ToolSource> {
        Arc::new(Self::new(self.inner.for_child(), self.checkpoints.clone()))
    }

    async fn refresh(&self) -> ToolRefresh {
        let mut refresh = self.inner.refresh().await;
        refresh.tools = refresh.tools.map(|tools| {
            tools
                .into_iter()
                .map(|tool| Arc::new(RecordingTool::new(tool, self.checkpoints.clone())) as Arc<dyn Tool>)
                .collect()
        });
        refresh
    }
}
