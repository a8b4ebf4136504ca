//! `shell`: runs a command through the execution environment after asking the editor for
//! permission and saving the files the agent changed (so the command sees the agent's edits).
//! The result is the combined output, the exit code and the duration; a non-zero exit, a timeout
//! (with the spec §5.4 message) or a cancellation is an error result.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::parse_args;
use super::summary::CallArgs;
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::exec::{ExecRequest, ExecResult};
use crate::workspace::PermissionRequest;

/// The message appended to the output of a command that ran out of time (spec §5.4).
pub fn timeout_message(timeout_ms: u64) -> String {
    format!(
        "[ERROR: Command timed out after {timeout_ms}ms. Partial output is shown above. \
         You can retry with a longer timeout by setting the timeout_ms parameter.]"
    )
}

pub struct ShellTool {
    /// Overrides the session's default timeout (the Anthropic profile uses 120 s).
    default_timeout_ms: Option<u64>,
}

impl ShellTool {
    /// A shell tool using the session's default timeout.
    pub fn new() -> Self {
        Self { default_timeout_ms: None }
    }

    /// A shell tool with its own default timeout; the session maximum still applies.
    pub fn with_default_timeout_ms(timeout_ms: u64) -> Self {
        Self { default_timeout_ms: Some(timeout_ms) }
    }
}

impl Default for ShellTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Args {
    command: String,
    timeout_ms: Option<u64>,
    workdir: Option<String>,
}

/// A command's wall-clock duration as the model reads it: milliseconds below ten seconds,
/// seconds with one decimal from there.
pub fn format_duration(ms: u64) -> String {
    if ms < 10_000 { format!("{ms} ms") } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

/// Stdout and stderr together, then the timeout message or the exit code, then how long the
/// command ran (spec §3.3: output, exit code, duration).
pub fn format_result(result: &ExecResult) -> String {
    let mut out = String::new();
    for stream in [&result.stdout, &result.stderr] {
        if stream.is_empty() {
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(stream);
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if result.timed_out {
        out.push_str(&timeout_message(result.timeout_ms));
    } else if result.cancelled {
        out.push_str("[The command was cancelled; its processes were stopped.]");
    } else {
        if out.is_empty() {
            out.push_str("(no output)\n");
        }
        out.push_str(&format!("Exit code: {}", result.exit_code));
    }
    out.push_str(&format!("\nDuration: {}", format_duration(result.duration_ms)));
    out
}

#[async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Runs a shell command with `bash -c` in the working directory and returns its combined \
         stdout and stderr followed by the exit code and how long it ran. Commands time out (the \
         default is short; set `timeout_ms` for builds and test suites); on timeout the whole process \
         group is stopped and the partial output is returned. Prefer the read_file, grep and glob \
         tools over cat, grep and find. Do not start interactive programs. The files you edited are \
         saved before the command runs."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds for this command (capped by the configured maximum)."},
                "description": {"type": "string", "description": "A short description of what the command does, shown to the user."},
                "workdir": {"type": "string", "description": "Directory to run in (default: the working directory)."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        format!("shell: {}", call.str("command").unwrap_or_default())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::new("The command is empty; give the command to run."));
        }
        let cwd = match args.workdir.as_deref() {
            Some(dir) => ctx.resolve(dir)?,
            None => ctx.cwd.clone(),
        };

        let request = PermissionRequest {
            call_id: ctx.call_id.clone(),
            tool_name: self.name().to_string(),
            command: args.command.clone(),
            cwd: cwd.clone(),
            mcp: None,
        };
        if let Some(feedback) = ctx.editor.ask_permission(request).await.denied() {
            let mut message = String::from("The user denied running this command.");
            if let Some(feedback) = feedback.filter(|f| !f.trim().is_empty()) {
                message.push_str(&format!(" Feedback: {feedback}"));
            }
            return Err(ToolError::new(message));
        }

        let mut notes = String::new();
        let changed = ctx.reads.changed_files();
        if !changed.is_empty()
            && let Err(error) = ctx.editor.save(&changed).await
        {
            tracing::warn!(%error, "could not save edited files before a shell command");
            notes.push_str(&format!(
                "[warning: the files you edited could not be saved first ({error}); the command may see older contents]\n"
            ));
        }

        let default = self.default_timeout_ms.unwrap_or(ctx.shell.default_timeout_ms);
        let timeout_ms = args.timeout_ms.unwrap_or(default).clamp(1, ctx.shell.max_timeout_ms.max(1));
        let result = ctx
            .env
            .exec_command(ExecRequest {
                command: args.command,
                timeout_ms,
                working_dir: Some(cwd),
                env_vars: Default::default(),
                cancel: ctx.cancel.clone(),
                call_id: ctx.call_id.clone(),
                output: None,
            })
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let text = format!("{notes}{}", format_result(&result));
        if result.timed_out || result.cancelled || result.exit_code != 0 {
            Err(ToolError::new(text))
        } else {
            Ok(ToolOutput::text(text))
        }
    }
}
