//! `close_agent`: ends a subagent (its running commands are stopped) and returns its final status.

use async_trait::async_trait;
use serde_json::Value;

use super::super::paths::parse_args;
use super::super::{Tool, ToolContext, ToolError, ToolOutput};
use super::{AgentIdArgs, agent_id_schema, control, json_output};

pub struct CloseAgentTool;

#[async_trait]
impl Tool for CloseAgentTool {
    fn name(&self) -> &str {
        "close_agent"
    }

    fn description(&self) -> &str {
        "Terminate a subagent: its current work is interrupted and its running commands are stopped. \
         Returns its final status."
    }

    fn parameters(&self) -> Value {
        agent_id_schema(serde_json::Map::new(), &["agent_id"])
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AgentIdArgs = parse_args(self.name(), args)?;
        let agents = control(ctx, self.name())?;
        json_output(&agents.close(args.agent_id.trim()).await?)
    }
}
