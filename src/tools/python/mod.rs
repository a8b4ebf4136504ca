//! `python` (code mode, seed 003): runs code in the session's persistent Python REPL. State is
//! kept between calls; stdout and stderr come back bounded; a top-level `return` ends the task
//! with its value and an `AgentError` ends it as failed; a call that outlives its timeout is
//! interrupted and the REPL keeps its state.
//!
//! Invariant: one REPL per tool instance, and a session builds its own tools, so one per
//! session; it is started on the first call and dies with the tool (or the environment's cleanup).

pub mod repl;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::{TaskEnd, Tool, ToolContext, ToolError, ToolOutput};
use crate::workspace::PermissionRequest;
use repl::{Repl, ReplError, Reply};

/// Modules the driver imports before the first call (the prompt lists them).
pub const PRELOADED_MODULES: &[&str] = &[
    "asyncio",
    "collections",
    "datetime",
    "functools",
    "itertools",
    "json",
    "math",
    "os",
    "pathlib",
    "re",
    "subprocess",
    "sys",
];

/// Characters kept of each of stdout and stderr per call (head and tail).
pub const OUTPUT_LIMIT: usize = 50_000;

/// The first line of the message that hands a code block's result back (code-block variant).
pub const EXECUTION_HEADER: &str = "Execution result:";

pub struct PythonTool {
    python: String,
    repl: Mutex<Option<Repl>>,
}

impl Default for PythonTool {
    fn default() -> Self {
        Self::new("python3")
    }
}

impl PythonTool {
    /// A tool whose REPL runs `python` (a program name looked up in PATH, or a path).
    pub fn new(python: impl Into<String>) -> Self {
        Self { python: python.into(), repl: Mutex::new(None) }
    }

    /// The running REPL's process id, if one runs.
    pub async fn repl_pid(&self) -> Option<u32> {
        self.repl.lock().await.as_ref().map(Repl::pid)
    }

    /// Runs `code` in the REPL (started on first use) with the call's timeout.
    pub async fn run(
        &self,
        code: &str,
        timeout: Duration,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // Code runs only where the permission policy lets commands run at all.
        let request = PermissionRequest {
            call_id: ctx.call_id.clone(),
            tool_name: "python".into(),
            command: code.to_string(),
            cwd: ctx.cwd.clone(),
            mcp: None,
        };
        if let Some(feedback) = ctx.editor.ask_permission(request).await.denied() {
            return Err(ToolError::new(
                feedback.unwrap_or_else(|| "The user denied running this code.".into()),
            ));
        }
        let mut slot = self.repl.lock().await;
        if slot.is_none() {
            let started = Repl::start(ctx.env.as_ref(), &self.python).await;
            *slot = Some(started.map_err(|e| ToolError::new(e.to_string()))?);
        }
        let Some(repl) = slot.as_mut() else { return Err(ToolError::new("the Python REPL is not running")) };
        match repl.run(code, OUTPUT_LIMIT, timeout, &ctx.cancel).await {
            Ok(reply) => Ok(output_of(reply, timeout)),
            Err(error @ (ReplError::Killed | ReplError::Died(_) | ReplError::Start(_))) => {
                if let Some(repl) = slot.take() {
                    repl.shutdown().await;
                }
                Err(ToolError::new(error.to_string()))
            }
        }
    }
}

/// What the model receives for one reply, and whether it ends the task.
fn output_of(reply: Reply, timeout: Duration) -> ToolOutput {
    let mut parts = Vec::new();
    if !reply.stdout.is_empty() {
        parts.push(format!("[stdout]\n{}", reply.stdout.trim_end_matches('\n')));
    }
    if !reply.stderr.is_empty() {
        parts.push(format!("[stderr]\n{}", reply.stderr.trim_end_matches('\n')));
    }
    if let Some(error) = &reply.error {
        parts.push(format!("[error]\n{error}"));
    }
    if reply.interrupted {
        parts.push(format!(
            "[interrupted]\nThe code ran longer than {} ms and was interrupted (KeyboardInterrupt); the REPL \
             and its variables are kept. Make it faster or pass a larger `timeout_ms`.",
            timeout.as_millis()
        ));
    }
    let mut ends_task = None;
    if reply.returned {
        let value = reply.value.unwrap_or_default();
        parts.push(format!("[returned]\n{value}"));
        ends_task = Some(TaskEnd::Answer(value));
    } else if let Some(reason) = reply.agent_error {
        ends_task = Some(TaskEnd::Failed(reason));
    }
    if parts.is_empty() {
        parts.push("[no output]".into());
    }
    ToolOutput { content: parts.join("\n"), images: Vec::new(), ends_task }
}

/// The first ```python (or ```py, or bare ```) block of a reply, for the code-block variant.
pub fn code_block(reply: &str) -> Option<String> {
    let mut lines = reply.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else { continue };
        if !matches!(info.trim(), "python" | "py" | "python3" | "") {
            // Another language's block: skip to its closing fence.
            lines.by_ref().find(|l| l.trim_start().starts_with("```"));
            continue;
        }
        let mut code = Vec::new();
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                return Some(code.join("\n"));
            }
            code.push(line);
        }
        return Some(code.join("\n"));
    }
    None
}

#[async_trait]
impl Tool for PythonTool {
    fn name(&self) -> &str {
        "python"
    }

    fn description(&self) -> &str {
        "Runs Python code in a persistent REPL: variables, imports and functions stay defined between calls. \
         Returns what the code printed (`[stdout]`, `[stderr]`), the traceback of an exception (`[error]`), \
         and the value of the last expression when it is not None. A top-level `return value` ends the task \
         with that value; `await` works at the top level. Code running longer than `timeout_ms` is \
         interrupted and the REPL keeps its state."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Python source to run in the REPL."},
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Interrupt the code after this many milliseconds (default: the session's command timeout)."
                }
            },
            "required": ["code"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let code = args.get("code").and_then(Value::as_str).unwrap_or_default();
        let timeout_ms = args
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(ctx.shell.default_timeout_ms)
            .min(ctx.shell.max_timeout_ms)
            .max(1);
        self.run(code, Duration::from_millis(timeout_ms), ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_lists_the_modules_the_driver_imports() {
        let driver = include_str!("driver.py");
        let line = driver.lines().find(|l| l.starts_with("PRELOADED = ")).expect("PRELOADED line");
        let listed: Vec<String> = PRELOADED_MODULES.iter().map(|m| format!("\"{m}\"")).collect();
        assert_eq!(line, format!("PRELOADED = [{}]", listed.join(", ")));
    }

    #[test]
    fn finds_the_first_python_block() {
        let reply = "Let me look.\n```python\nx = 1\nprint(x)\n```\nThen:\n```python\ny\n```";
        assert_eq!(code_block(reply).as_deref(), Some("x = 1\nprint(x)"));
        assert_eq!(code_block("The answer is 4."), None);
        assert_eq!(code_block("```rust\nfn main() {}\n```"), None);
    }

    #[test]
    fn a_return_ends_the_task_and_an_agent_error_fails_it() {
        let returned = Reply { returned: true, value: Some("42".into()), ..Reply::default() };
        let output = output_of(returned, Duration::from_secs(1));
        assert_eq!(output.content, "[returned]\n42");
        assert_eq!(output.ends_task, Some(TaskEnd::Answer("42".into())));
        let failed = Reply {
            error: Some("Traceback …\nAgentError: no data".into()),
            agent_error: Some("AgentError: no data".into()),
            ..Reply::default()
        };
        let output = output_of(failed, Duration::from_secs(1));
        assert_eq!(output.ends_task, Some(TaskEnd::Failed("AgentError: no data".into())));
        assert_eq!(output_of(Reply::default(), Duration::from_secs(1)).content, "[no output]");
    }
}
