//! `spawn_agent`: starts a child agent on a scoped task and returns its id at once.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::paths::parse_args;
use super::super::summary::CallArgs;
use super::super::{Tool, ToolContext, ToolError, ToolOutput};
use super::{SpawnRequest, control, json_output};

pub struct SpawnAgentTool;

#[derive(Deserialize)]
struct Args {
    task: String,
    working_dir: Option<String>,
    model: Option<String>,
    max_turns: Option<u32>,
}

#[async_trait]
impl Tool for SpawnAgentTool {
    fn name(&self) -> &str {
        "spawn_agent"
    }

    fn description(&self) -> &str {
        "Spawn a subagent to handle a scoped task autonomously. It works in the same files with its own \
         conversation (it does not see yours: give it everything it needs in `task`), its edits are \
         reviewed like yours, and it runs while you continue. Returns its id and status at once; call \
         `wait` with that id for its result. Several subagents can run at the same time."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "What the subagent should do, with all the context it needs."},
                "working_dir": {"type": "string", "description": "A directory inside the workspace to scope the subagent to (default: your working directory)."},
                "model": {"type": "string", "description": "Model for the subagent (default: your model)."},
                "max_turns": {"type": "integer", "minimum": 0, "description": "The subagent's model-turn limit (default: 0, unlimited)."}
            },
            "required": ["task"],
            "additionalProperties": false
        })
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        format!("spawn_agent: {}", call.str("task").unwrap_or_default())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let agents = control(ctx, self.name())?;
        if args.task.trim().is_empty() {
            return Err(ToolError::new("`task` is empty: say what the subagent should do"));
        }
        let working_dir = match args.working_dir.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(dir) => Some(
                ctx.resolve(dir)
                    .map_err(|e| ToolError::new(format!("working_dir `{dir}` cannot be used: {e}")))?,
            ),
            None => None,
        };
        let model = args.model.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
        let request = SpawnRequest {
            task: args.task,
            working_dir,
            model,
            max_turns: args.max_turns.filter(|&n| n > 0),
            call_id: ctx.call_id.clone(),
        };
        json_output(&agents.spawn(request).await?)
    }
}
