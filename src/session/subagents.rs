//! The children of a session (spec §7): [`Subagents`] starts them as sessions of their own,
//! passes their events on and answers the subagent tools through [`AgentControl`].
//!
//! Invariants:
//! - A child is its own session with its own history, sharing the parent's execution environment,
//!   workspace and editor port (its edits are reviewed and its commands asked like the parent's).
//!   It uses the parent's profile, tools and settings, with its own model and turn limit when asked,
//!   and the parent's MCP servers (its own view of their tools, the same permission policy).
//! - Every event of a child reaches the parent's stream, in order, marked with its [`AgentPath`];
//!   a child's state changes only after the event that changed it was passed on, so the parent's
//!   `wait` ends after the child's `processing_end` in the stream.
//! - Cancelling or closing the parent closes every child (their commands stop with their turns);
//!   the parent's `session_end` comes after every child's.
//! - A child's working directory is inside the session tree's root.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::events::{AgentPath, Emitter, EndReason, Event, EventData, WeakEmitter};
use super::turn::Turn;
use super::{SessionHandle, SessionOptions, Shared, lock};
use crate::exec::{ExecutionEnvironment, FileKind};
use crate::llm;
use crate::profiles::ProfileKind;
use crate::tools::subagents::{AgentControl, AgentReport, AgentResult, AgentStatus, SpawnRequest};
use crate::tools::{Tool, ToolError, ToolSource};
use crate::workspace::{EditorPort, Workspace};

/// Where a session stands in its tree.
#[derive(Debug, Clone)]
pub(super) struct Lineage {
    /// 0 for a session a host started, 1 for its children, …
    pub depth: u32,
    /// The top session's working directory: no child works outside it.
    pub root: PathBuf,
}

/// What a session's children are built from: the parent's own parts.
pub(super) struct ChildParts {
    pub profile: ProfileKind,
    pub client: llm::Client,
    pub env: Arc<dyn ExecutionEnvironment>,
    pub workspace: Arc<Workspace>,
    pub editor: Arc<dyn EditorPort>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// The parent's MCP servers: each child gets its own view of them.
    pub tool_source: Option<Arc<dyn ToolSource>>,
    pub cwd: PathBuf,
}

impl ChildParts {
    fn child_tool_source(&self) -> Option<Arc<dyn ToolSource>> {
        self.tool_source.as_ref().map(|source| source.for_child())
    }
}

/// A child's progress through the inputs it was given.
#[derive(Debug, Clone, Default)]
struct Progress {
    /// Inputs given (the task, then each `send_input`).
    sent: u64,
    /// Inputs it started on (`user_input` events).
    seen: u64,
    /// Its result once it handled every input; `None` while it works.
    result: Option<AgentResult>,
    /// Its session ended.
    closed: bool,
}

/// What a transcript stores of a child besides its history.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentInfo {
    pub path: AgentPath,
    pub task: String,
    pub cwd: PathBuf,
    pub model: String,
}

struct Child {
    info: AgentInfo,
    handle: SessionHandle,
    progress: watch::Sender<Progress>,
    forwarder: Mutex<Option<JoinHandle<()>>>,
}

impl Child {
    fn status(&self) -> AgentStatus {
        match &self.progress.borrow().result {
            None => AgentStatus::Running,
            Some(result) if result.success => AgentStatus::Completed,
            Some(_) => AgentStatus::Failed,
        }
    }

    fn report(&self) -> AgentReport {
        AgentReport { agent_id: self.info.path.agent_id.clone(), status: self.status() }
    }
}

/// The children of one session.
pub(super) struct Subagents {
    parent: Weak<Shared>,
    /// Weak: the parent's handle keeps this alive, and its stream must still end after
    /// `session_end` (a forwarder holds a strong one while its child runs).
    events: WeakEmitter,
    lineage: Lineage,
    parts: ChildParts,
    children: Mutex<Vec<Arc<Child>>>,
    next: AtomicU32,
}

fn model_turns(history: &[Turn]) -> u32 {
    history.iter().filter(|t| matches!(t, Turn::Assistant(_))).count() as u32
}

fn unknown(agent_id: &str) -> ToolError {
    ToolError::new(format!(
        "no subagent `{agent_id}` in this session; use an agent_id that spawn_agent returned"
    ))
}

impl Subagents {
    pub(super) fn new(parent: Weak<Shared>, events: &Emitter, lineage: Lineage, parts: ChildParts) -> Self {
        let events = events.downgrade();
        Self { parent, events, lineage, parts, children: Mutex::new(Vec::new()), next: AtomicU32::new(0) }
    }

    /// Starts a child session and passes its events on.
    fn start(
        &self,
        info: AgentInfo,
        options: SessionOptions,
        progress: Progress,
    ) -> Result<Arc<Child>, ToolError> {
        let events = self
            .events
            .upgrade()
            .ok_or_else(|| ToolError::new("the session is closing; no subagent can start"))?;
        let lineage = Lineage { depth: self.lineage.depth + 1, root: self.lineage.root.clone() };
        let (handle, child_events) = super::spawn_in_tree(options, lineage);
        let (progress, _) = watch::channel(progress);
        let child = Arc::new(Child { info, handle, progress, forwarder: Mutex::new(None) });
        let forwarder = tokio::spawn(forward(child_events, events, Arc::clone(&child)));
        *lock(&child.forwarder) = Some(forwarder);
        lock(&self.children).push(Arc::clone(&child));
        Ok(child)
    }

    /// Brings back a resumed session's children, idle, with their histories: `wait` gives their
    /// last answer, `send_input` sets them to work again.
    pub(super) fn restore(&self, stored: Vec<(AgentInfo, Vec<Turn>)>, config: &super::SessionConfig) {
        for (info, history) in stored {
            let n = info.path.agent_id.strip_prefix("agent-").and_then(|n| n.parse().ok()).unwrap_or(0);
            self.next.fetch_max(n, Ordering::SeqCst);
            let last = history.iter().rev().find_map(|t| match t {
                Turn::Assistant(a) => Some(a),
                _ => None,
            });
            let result = AgentResult {
                output: last.map(|a| a.content.clone()).unwrap_or_default(),
                // Finished naturally when its last word was an answer without tool calls.
                success: matches!(history.last(), Some(Turn::Assistant(a)) if a.tool_calls.is_empty()),
                turns_used: model_turns(&history),
            };
            let options = SessionOptions {
                id: Some(info.path.session_id.clone()),
                profile: self.parts.profile,
                client: self.parts.client.clone(),
                env: Arc::clone(&self.parts.env),
                workspace: Arc::clone(&self.parts.workspace),
                editor: Arc::clone(&self.parts.editor),
                config: super::SessionConfig { model: info.model.clone(), ..config.clone() },
                cwd: info.cwd.clone(),
                history,
                agents: Vec::new(),
                tools: self.parts.tools.clone(),
                transcript: None,
                tool_source: self.parts.child_tool_source(),
                checkpoints: None,
            };
            if let Err(e) =
                self.start(info, options, Progress { result: Some(result), ..Progress::default() })
            {
                tracing::warn!("a subagent was not restored: {e}");
            }
        }
    }

    fn child(&self, agent_id: &str) -> Result<Arc<Child>, ToolError> {
        lock(&self.children)
            .iter()
            .find(|c| c.info.path.agent_id == agent_id)
            .cloned()
            .ok_or_else(|| unknown(agent_id))
    }

    /// Closes every child at once (the parent's turn was cancelled or the parent closes).
    pub(super) fn close_all(&self) {
        for child in lock(&self.children).iter() {
            child.handle.close();
        }
    }

    /// Closes every child and waits until each one ended and its last event was passed on.
    pub(super) async fn shutdown(&self) {
        self.close_all();
        let forwarders: Vec<JoinHandle<()>> =
            lock(&self.children).iter().filter_map(|c| lock(&c.forwarder).take()).collect();
        for forwarder in forwarders {
            let _ = forwarder.await;
        }
    }

    /// Each child's description and history, in spawn order (for transcripts).
    pub(super) fn snapshot(&self) -> Vec<(AgentInfo, Vec<Turn>)> {
        lock(&self.children).iter().map(|c| (c.info.clone(), c.handle.history())).collect()
    }

    /// The child's working directory: `requested` when it is a directory inside the root.
    async fn working_dir(&self, requested: Option<PathBuf>) -> Result<PathBuf, ToolError> {
        let Some(dir) = requested else { return Ok(self.parts.cwd.clone()) };
        if !dir.starts_with(&self.lineage.root) {
            return Err(ToolError::new(format!(
                "working_dir {} is outside the session's root {}; give a directory inside it",
                dir.display(),
                self.lineage.root.display()
            )));
        }
        match self.parts.env.stat(&dir).await {
            Ok(Some(stat)) if stat.kind == FileKind::Directory => Ok(dir),
            Ok(_) => Err(ToolError::new(format!(
                "working_dir {} is not a directory; give an existing directory inside {}",
                dir.display(),
                self.lineage.root.display()
            ))),
            Err(e) => Err(ToolError::new(format!("working_dir {} cannot be used: {e}", dir.display()))),
        }
    }
}

#[async_trait]
impl AgentControl for Subagents {
    async fn spawn(&self, request: SpawnRequest) -> Result<AgentReport, ToolError> {
        let parent = self
            .parent
            .upgrade()
            .ok_or_else(|| ToolError::new("the session is closing; no subagent can start"))?;
        let cwd = self.working_dir(request.working_dir).await?;
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let path = AgentPath {
            agent_id: format!("agent-{n}"),
            session_id: format!("{}-agent-{n}", parent.id),
            parent_session_id: parent.id.to_string(),
            parent_call_id: request.call_id,
        };
        let mut config = lock(&parent.config).clone();
        drop(parent);
        if let Some(model) = request.model {
            config.model = model;
        }
        config.max_turns = request.max_turns.unwrap_or(0);
        let info = AgentInfo {
            path: path.clone(),
            task: request.task.clone(),
            cwd: cwd.clone(),
            model: config.model.clone(),
        };
        let options = SessionOptions {
            id: Some(path.session_id.clone()),
            profile: self.parts.profile,
            client: self.parts.client.clone(),
            env: Arc::clone(&self.parts.env),
            workspace: Arc::clone(&self.parts.workspace),
            editor: Arc::clone(&self.parts.editor),
            config,
            cwd,
            history: Vec::new(),
            agents: Vec::new(),
            tools: self.parts.tools.clone(),
            transcript: None,
            tool_source: self.parts.child_tool_source(),
            checkpoints: None,
        };
        let child = self.start(info, options, Progress { sent: 1, ..Progress::default() })?;
        child.handle.submit(request.task);
        Ok(child.report())
    }

    async fn send_input(&self, agent_id: &str, message: String) -> Result<AgentReport, ToolError> {
        let child = self.child(agent_id)?;
        let mut refused = false;
        child.progress.send_modify(|p| {
            if p.closed {
                refused = true;
            } else {
                p.sent += 1;
                p.result = None;
            }
        });
        if refused {
            return Err(ToolError::new(format!(
                "subagent `{agent_id}` is closed and takes no more input; spawn a new one"
            )));
        }
        child.handle.follow_up(message);
        Ok(child.report())
    }

    async fn wait(&self, agent_id: &str, cancel: &CancellationToken) -> Result<AgentResult, ToolError> {
        let child = self.child(agent_id)?;
        let mut progress = child.progress.subscribe();
        tokio::select! {
            done = progress.wait_for(|p| p.result.is_some()) => match done {
                Ok(p) => p.result.clone().ok_or_else(|| unknown(agent_id)),
                Err(_) => Err(unknown(agent_id)),
            },
            () = cancel.cancelled() => Err(ToolError::new(format!(
                "the wait for `{agent_id}` was interrupted: the turn was cancelled"
            ))),
        }
    }

    async fn close(&self, agent_id: &str) -> Result<AgentReport, ToolError> {
        let child = self.child(agent_id)?;
        child.handle.close();
        let mut progress = child.progress.subscribe();
        let _ = progress.wait_for(|p| p.closed).await;
        Ok(child.report())
    }
}

/// Passes a child's events on to its parent and tracks its progress from them.
async fn forward(mut events: mpsc::UnboundedReceiver<Event>, parent: Emitter, child: Arc<Child>) {
    let mut ended = false;
    while let Some(event) = events.recv().await {
        // Applied after the event is passed on, so a waiting parent continues after it.
        let mut started = false;
        let mut finished = None;
        if event.is_own() {
            match &event.data {
                EventData::UserInput(_) => started = true,
                EventData::ProcessingEnd(end) => {
                    finished = Some(AgentResult {
                        output: end.text.clone(),
                        success: end.reason == EndReason::Completed,
                        turns_used: model_turns(&child.handle.history()),
                    });
                }
                EventData::SessionEnd(_) => ended = true,
                _ => {}
            }
        }
        parent.forward(event, &child.info.path);
        if started {
            child.progress.send_modify(|p| p.seen += 1);
        }
        if let Some(result) = finished {
            // Done only when it started on every input it was given.
            child.progress.send_modify(|p| {
                if p.seen >= p.sent {
                    p.result = Some(result);
                }
            });
        }
    }
    // Closed, or its task died (a panic): it takes no more input, and a wait ends.
    let failure =
        (!ended).then(|| child.handle.failure().unwrap_or_else(|| "it stopped unexpectedly".into()));
    let turns_used = model_turns(&child.handle.history());
    child.progress.send_modify(|p| {
        p.closed = true;
        if p.result.is_none() {
            let output = failure.map_or_else(
                || "the subagent was closed before it finished".to_string(),
                |cause| format!("the subagent stopped: {cause}"),
            );
            p.result = Some(AgentResult { output, success: false, turns_used });
        }
    });
}
