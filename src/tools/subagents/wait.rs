//! `wait`: waits for a subagent to finish and returns its result (spec §7.3 `SubAgentResult`).

use async_trait::async_trait;
use serde_json::Value;

use super::super::paths::parse_args;
use super::super::{Tool, ToolContext, ToolError, ToolOutput};
use super::{AgentIdArgs, agent_id_schema, control, json_output};

pub struct WaitTool;

#[async_trait]
impl Tool for WaitTool {
    fn name(&self) -> &str {
        "wait"
    }

    fn description(&self) -> &str {
        "Wait for a subagent to complete and return its result: `output` (its final answer), `success` \
         (false when it failed, hit its turn limit or was closed) and `turns_used`."
    }

    fn parameters(&self) -> Value {
        agent_id_schema(serde_json::Map::new(), &["agent_id"])
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AgentIdArgs = parse_args(self.name(), args)?;
        let agents = control(ctx, self.name())?;
        json_output(&agents.wait(args.agent_id.trim(), &ctx.cancel).await?)
    }
}
