//! The subagent tools of spec §7.2 — `spawn_agent`, `send_input`, `wait`, `close_agent` — one file
//! each, and [`AgentControl`], the port through which they reach the session that runs the
//! children (the session implements it; tools know nothing of sessions).
//!
//! Invariants:
//! - A child's failure is a result (`success: false`), never a tool error: only a call the tool
//!   cannot carry out (an unknown agent id, a `working_dir` outside the session's root, no session
//!   to run children) is an error.
//! - Outputs are JSON objects the model reads ([`AgentReport`], [`AgentResult`]).

mod close_agent;
mod send_input;
mod spawn_agent;
mod wait;

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use close_agent::CloseAgentTool;
pub use send_input::SendInputTool;
pub use spawn_agent::SpawnAgentTool;
pub use wait::WaitTool;

use super::{ToolContext, ToolError, ToolOutput};

/// The names of the subagent tools: a session at its `max_subagent_depth` offers none of them.
pub const SUBAGENT_TOOLS: [&str; 4] = ["spawn_agent", "send_input", "wait", "close_agent"];

/// What `spawn_agent` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnRequest {
    pub task: String,
    /// The child's working directory, resolved; `None` = the parent's.
    pub working_dir: Option<PathBuf>,
    /// `None` = the parent's model.
    pub model: Option<String>,
    /// `None` = unlimited (0).
    pub max_turns: Option<u32>,
    /// The parent's `spawn_agent` call: the child's events name it.
    pub call_id: String,
}

/// Spec §7.3 `SubAgentStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Running,
    Completed,
    Failed,
}

/// An agent and its status: what `spawn_agent`, `send_input` and `close_agent` return.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    pub agent_id: String,
    pub status: AgentStatus,
}

/// Spec §7.3 `SubAgentResult`: what `wait` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentResult {
    /// The child's last answer.
    pub output: String,
    /// Whether it finished its work naturally (not failed, stopped by a limit or closed).
    pub success: bool,
    /// Model turns the child took.
    pub turns_used: u32,
}

/// Runs a session's children. Implemented by the session; `None` in a [`ToolContext`] where no
/// session runs (`agentls tool`).
#[async_trait]
pub trait AgentControl: Send + Sync {
    /// Starts a child on `request.task` and returns at once.
    async fn spawn(&self, request: SpawnRequest) -> Result<AgentReport, ToolError>;
    /// Gives a child another message: handled after its current work, or at once when idle.
    async fn send_input(&self, agent_id: &str, message: String) -> Result<AgentReport, ToolError>;
    /// Waits until the child has handled everything it was given (or `cancel` fires).
    async fn wait(&self, agent_id: &str, cancel: &CancellationToken) -> Result<AgentResult, ToolError>;
    /// Ends a child (its running commands are stopped) and reports its final status.
    async fn close(&self, agent_id: &str) -> Result<AgentReport, ToolError>;
}

/// The arguments of a tool that names one agent (`wait`, `close_agent`).
#[derive(Deserialize)]
struct AgentIdArgs {
    agent_id: String,
}

fn control(ctx: &ToolContext, tool: &str) -> Result<std::sync::Arc<dyn AgentControl>, ToolError> {
    ctx.agents.clone().ok_or_else(|| {
        ToolError::new(format!(
            "{tool} needs a running agent session to start subagents in; it cannot run on its own \
             (e.g. through `agentls tool`)"
        ))
    })
}

fn json_output(value: &impl Serialize) -> Result<ToolOutput, ToolError> {
    serde_json::to_string(value)
        .map(ToolOutput::text)
        .map_err(|e| ToolError::new(format!("cannot encode the result: {e}")))
}

/// The schema of a tool whose only argument is `agent_id`, plus `extra` properties.
fn agent_id_schema(
    extra: serde_json::Map<String, serde_json::Value>,
    required: &[&str],
) -> serde_json::Value {
    let mut properties = serde_json::Map::new();
    properties.insert(
        "agent_id".into(),
        serde_json::json!({"type": "string", "description": "The id spawn_agent returned (e.g. agent-1)."}),
    );
    properties.extend(extra);
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}
