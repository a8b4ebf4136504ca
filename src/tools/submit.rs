//! `submit`: the tool of seed 002's submit mode. The model calls it with its final answer; the
//! session ends the input with that answer (the session, not the tool, decides that: the tool
//! only accepts the answer).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, ToolOutput};

/// The tool's name, as the session recognises it.
pub const SUBMIT: &str = "submit";

/// What the model receives when its answer is accepted.
pub const SUBMITTED: &str = "Answer submitted; the task is finished.";

pub struct SubmitTool;

/// The answer of a `submit` call's arguments, when they hold one.
pub fn answer_of(arguments: &Value) -> Option<String> {
    arguments.get("answer").and_then(Value::as_str).map(str::to_string)
}

#[async_trait]
impl Tool for SubmitTool {
    fn name(&self) -> &str {
        SUBMIT
    }

    fn description(&self) -> &str {
        "Submits your final answer and ends the task. Call it once, when the task is complete: \
         `answer` is what the user receives. Until you call it, the task continues."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "answer": {"type": "string", "description": "The final answer to the task."}
            },
            "required": ["answer"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match answer_of(&args) {
            Some(_) => Ok(ToolOutput::text(SUBMITTED)),
            None => Err(ToolError::new(
                "Invalid arguments for tool submit: `answer` must be the final answer as a string",
            )),
        }
    }
}
