//! Tools the model can call: one file per tool, all behind the [`Tool`] trait and one registry.
//!
//! Invariants:
//! - A tool never panics on model input and never writes files itself: edit tools build a
//!   `workspace::ChangeSet` and hand it to the [`EditorPort`](crate::workspace::EditorPort).
//! - A tool reaches files only through the workspace (open buffers) and the execution
//!   environment (everything else, paths included): never through `std::fs` or `Path` queries.
//! - `ToolOutput::content` is the full, untruncated output; truncation for the model happens in
//!   the registry/session, so `tool_call_end` events can carry everything.
//! - Every failure the model can act on is a [`ToolError`], which becomes an `is_error` result.

pub mod aliases;
pub mod codebase_search;
pub mod glob;
pub mod grep;
pub mod list_dir;
mod paths;
pub mod profiles;
pub mod python;
pub mod read_file;
pub mod read_many_files;
pub mod registry;
pub mod shell;
pub mod subagents;
pub mod submit;
pub mod summary;
pub mod truncate;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub mod apply_patch;
pub mod edit_file;
pub mod replace;
pub mod write_file;

use crate::exec::{ExecutionEnvironment, OutputSink, ShellLimits};
use crate::llm;
use crate::workspace::{EditorPort, ReadTracker, Workspace};

/// An image a tool returns to a multimodal model (e.g. `read_file` on a PNG).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolImage {
    pub media_type: String,
    pub data: Vec<u8>,
}

/// A tool call that ends the task it runs for (code mode's top-level `return`, its
/// `AgentError`): the session stops after the round and reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    /// The task's answer.
    Answer(String),
    /// The agent found the task cannot be done, and why.
    Failed(String),
}

/// What a tool hands back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Full text output, untruncated.
    pub content: String,
    pub images: Vec<ToolImage>,
    /// Set when this call ends the task.
    pub ends_task: Option<TaskEnd>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self { content: content.into(), images: Vec::new(), ends_task: None }
    }
}

/// A failure reported to the model as an `is_error` tool result. The message says what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Everything a tool call may use. Built by the session for each call.
#[derive(Clone)]
pub struct ToolContext {
    /// Where commands run and where the disk is read.
    pub env: Arc<dyn ExecutionEnvironment>,
    /// What the agent reads: open editor buffers first, the disk otherwise.
    pub workspace: Arc<Workspace>,
    /// Where change sets, permission requests and save requests go.
    pub editor: Arc<dyn EditorPort>,
    /// Files read in this session, for the read-before-edit guard.
    pub reads: Arc<ReadTracker>,
    /// The working directory relative paths resolve against.
    pub cwd: PathBuf,
    pub call_id: String,
    pub shell: ShellLimits,
    /// Fires when the turn is interrupted; long tools stop promptly.
    pub cancel: CancellationToken,
    /// The session's model, for tools that ask a model themselves (`codebase_search`); `None`
    /// where no model is at hand (`agentls tool`).
    pub model: Option<ModelAccess>,
    /// Where a call's live output goes (the host's TOOL_CALL_OUTPUT_DELTA events), by call id;
    /// `None` outside a session.
    pub output: Option<OutputForCall>,
    /// Runs the session's subagents; `None` where no session runs or at the depth limit.
    pub agents: Option<Arc<dyn subagents::AgentControl>>,
}

/// Chooses the live-output sink of a tool call from its id.
pub type OutputForCall = Arc<dyn Fn(&str) -> Option<OutputSink> + Send + Sync>;

/// A model a tool may call: a client and the model its requests name.
#[derive(Debug, Clone)]
pub struct ModelAccess {
    pub client: llm::Client,
    pub model: String,
}

impl ToolContext {
    /// Streams `text` to the host as this call's live output, as a command's output streams
    /// (progress of a long tool); nothing happens outside a session.
    pub fn report(&self, text: &str) {
        if let Some(sink) = self.output.as_ref().and_then(|output| output(&self.call_id)) {
            sink.send(text);
        }
    }

    /// The absolute path a model-given `path` names (relative to the working directory, or
    /// absolute), resolved by the environment: symlinks followed, roots enforced.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let path = path.trim();
        if path.is_empty() {
            return Err(ToolError::new(
                "empty path: give a file path relative to the working directory or absolute",
            ));
        }
        self.env.resolve_path(&self.cwd.join(path)).map_err(|error| ToolError::new(error.to_string()))
    }
}

/// Tools that come and go while a session runs (an MCP server's): the session asks before
/// every model call.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The same tools for a subagent of the session: the same servers and permission policy,
    /// with its own view of what it has taken.
    fn for_child(&self) -> Arc<dyn ToolSource>;
    /// The source's tools when they changed since the last call, and what the user should be
    /// told (a server that failed or came back). May wait, bounded, for tools still starting.
    async fn refresh(&self) -> ToolRefresh;
}

/// What [`ToolSource::refresh`] found.
#[derive(Default)]
pub struct ToolRefresh {
    /// The whole new set of the source's tools; `None` when unchanged.
    pub tools: Option<Vec<Arc<dyn Tool>>>,
    pub warnings: Vec<String>,
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// What the model reads about the tool.
    fn description(&self) -> &str;
    /// JSON Schema (an object schema) of the arguments; arguments are validated against it
    /// before [`Tool::call`] runs.
    fn parameters(&self) -> Value;
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
    /// Whether the tool only reads (files, buffers, diagnostics). Read-only calls of one model
    /// step may run together; any other call runs alone, after every earlier call of the step.
    /// Tools that do not say so are assumed to change things.
    fn read_only(&self) -> bool {
        false
    }
    /// A one-line description of a call for people (`read_file src/main.rs`, `shell: cargo
    /// test`), shown in the editor as the call runs and in the history. By default the name the
    /// call used and the path it names; the registry keeps it to one short line.
    fn summary(&self, call: &summary::CallArgs<'_>) -> String {
        call.default_summary()
    }
}
