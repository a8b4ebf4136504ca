//! The shell tool with real processes: permission, saving edited files first, exit codes,
//! timeouts with the spec §5.4 message, truncation of large output.

use crate::support::tools_support;

use std::sync::Arc;

use agentls::exec::ShellLimits;
use agentls::tools::registry::{ToolCallOutcome, ToolRegistry};
use agentls::tools::shell::{ShellTool, timeout_message};
use agentls::workspace::PermissionDecision;
use tools_support::{Fixture, RecordingPort, without_duration};

async fn run(fx: &Fixture, tool: ShellTool, args: serde_json::Value) -> ToolCallOutcome {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(tool));
    registry.execute("shell", &args.to_string(), &fx.ctx).await
}

fn short_limits(default_timeout_ms: u64, max_timeout_ms: u64) -> ShellLimits {
    ShellLimits { default_timeout_ms, max_timeout_ms }
}

#[tokio::test]
async fn runs_the_command_and_reports_output_and_exit_code() {
    let fx = Fixture::new();
    let ok = run(&fx, ShellTool::new(), serde_json::json!({"command": "echo hello; echo oops >&2"})).await;
    assert!(!ok.is_error);
    assert_eq!(without_duration(&ok.content), "hello\noops\nExit code: 0");
    let failed = run(&fx, ShellTool::new(), serde_json::json!({"command": "exit 3"})).await;
    assert!(failed.is_error);
    assert_eq!(without_duration(&failed.content), "Tool error (shell): (no output)\nExit code: 3");
}

#[tokio::test]
async fn asks_permission_and_saves_the_agents_edits_before_running() {
    let fx = Fixture::new();
    let edited = fx.root().join("edited.rs");
    fx.ctx.reads.record_change(&edited);
    let outcome =
        run(&fx, ShellTool::new(), serde_json::json!({"command": "true", "description": "noop"})).await;
    assert!(!outcome.is_error);
    let permissions = fx.port.permissions.lock().unwrap().clone();
    assert_eq!(permissions.len(), 1);
    assert_eq!((permissions[0].command.as_str(), permissions[0].tool_name.as_str()), ("true", "shell"));
    assert_eq!(permissions[0].call_id, "call-1");
    assert_eq!(permissions[0].cwd, fx.root());
    assert_eq!(*fx.port.saves.lock().unwrap(), [vec![edited]]);
}

#[tokio::test]
async fn a_denied_command_does_not_run_and_the_feedback_reaches_the_model() {
    let fx = Fixture::with_port(
        RecordingPort::with(PermissionDecision::Deny { feedback: Some("use cargo instead".into()) }),
        ShellLimits::default(),
    );
    let outcome = run(&fx, ShellTool::new(), serde_json::json!({"command": "touch ran"})).await;
    assert!(outcome.is_error);
    assert_eq!(
        outcome.content,
        "Tool error (shell): The user denied running this command. Feedback: use cargo instead"
    );
    assert!(!fx.root().join("ran").exists());
}

#[tokio::test]
async fn the_session_default_timeout_applies_with_the_spec_message() {
    let fx = Fixture::with_port(RecordingPort::allowing(), short_limits(300, 600_000));
    let outcome = run(&fx, ShellTool::new(), serde_json::json!({"command": "echo started; sleep 30"})).await;
    assert!(outcome.is_error);
    assert_eq!(
        without_duration(&outcome.content),
        format!("Tool error (shell): started\n{}", timeout_message(300))
    );
    assert_eq!(
        timeout_message(300),
        "[ERROR: Command timed out after 300ms. Partial output is shown above. \
         You can retry with a longer timeout by setting the timeout_ms parameter.]"
    );
}

#[tokio::test]
async fn timeout_ms_overrides_the_default_but_not_the_maximum() {
    let fx = Fixture::with_port(RecordingPort::allowing(), short_limits(60_000, 400));
    let per_call =
        run(&fx, ShellTool::new(), serde_json::json!({"command": "sleep 30", "timeout_ms": 200})).await;
    assert!(per_call.content.contains("timed out after 200ms"), "{}", per_call.content);
    let capped =
        run(&fx, ShellTool::new(), serde_json::json!({"command": "sleep 30", "timeout_ms": 99_999_999}))
            .await;
    assert!(capped.content.contains("timed out after 400ms"), "{}", capped.content);
}

#[tokio::test]
async fn a_profile_default_timeout_overrides_the_session_default() {
    let fx = Fixture::with_port(RecordingPort::allowing(), short_limits(60_000, 600_000));
    let outcome =
        run(&fx, ShellTool::with_default_timeout_ms(250), serde_json::json!({"command": "sleep 30"})).await;
    assert!(outcome.content.contains("timed out after 250ms"), "{}", outcome.content);
}

#[tokio::test]
async fn workdir_runs_the_command_elsewhere_inside_the_workspace() {
    let fx = Fixture::new();
    fx.write("sub/file.txt", "x");
    let outcome = run(&fx, ShellTool::new(), serde_json::json!({"command": "ls", "workdir": "sub"})).await;
    assert_eq!(without_duration(&outcome.content), "file.txt\nExit code: 0");
    let outside = run(&fx, ShellTool::new(), serde_json::json!({"command": "ls", "workdir": "/"})).await;
    assert!(outside.is_error && outside.content.contains("outside the workspace"), "{}", outside.content);
}

#[tokio::test]
async fn large_output_is_truncated_for_the_model_with_markers() {
    let fx = Fixture::new();
    let outcome = run(&fx, ShellTool::new(), serde_json::json!({"command": "seq 1 100000"})).await;
    assert!(!outcome.is_error);
    assert!(
        outcome.content.starts_with("1\n2\n")
            && without_duration(&outcome.content).ends_with("100000\nExit code: 0")
    );
    assert!(outcome.model_content.contains("characters were removed from the middle"));
    assert!(outcome.model_content.contains("lines omitted ...]"));
    assert!(without_duration(&outcome.model_content).ends_with("Exit code: 0"));
}

#[tokio::test]
async fn empty_commands_are_refused() {
    let fx = Fixture::new();
    let outcome = run(&fx, ShellTool::new(), serde_json::json!({"command": "  "})).await;
    assert!(outcome.is_error && outcome.content.contains("empty"));
    assert!(fx.port.permissions.lock().unwrap().is_empty());
}
