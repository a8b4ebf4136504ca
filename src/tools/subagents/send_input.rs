//! `send_input`: gives a subagent another message (handled after its current work).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::paths::parse_args;
use super::super::{Tool, ToolContext, ToolError, ToolOutput};
use super::{agent_id_schema, control, json_output};

pub struct SendInputTool;

#[derive(Deserialize)]
struct Args {
    agent_id: String,
    message: String,
}

#[async_trait]
impl Tool for SendInputTool {
    fn name(&self) -> &str {
        "send_input"
    }

    fn description(&self) -> &str {
        "Send a message to a subagent: a running one handles it after its current work, a finished one \
         starts again on it. Call `wait` afterwards for the new result."
    }

    fn parameters(&self) -> Value {
        let mut extra = serde_json::Map::new();
        extra.insert(
            "message".into(),
            json!({"type": "string", "description": "The message for the subagent."}),
        );
        agent_id_schema(extra, &["agent_id", "message"])
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let agents = control(ctx, self.name())?;
        if args.message.trim().is_empty() {
            return Err(ToolError::new("`message` is empty: say what the subagent should do next"));
        }
        json_output(&agents.send_input(args.agent_id.trim(), args.message).await?)
    }
}
