//! No orphaned processes at the session level (spec §9.1 abort, §9.4 timeouts, Appendix B
//! graceful shutdown): a shell call that started a background child is timed out, cancelled or
//! closed mid-command, and afterwards neither the shell nor its child may still run.

use crate::support;
use crate::support::session_harness;

use std::time::Duration;

use agentls::profiles::ProfileKind;
use agentls::session::{EventKind, SessionState};
use serde_json::json;
use session_harness::{Harness, Setup, of_kind, read_pid, reason, str_of, wait_process_gone};
use support::mock_provider::Turn as Reply;

/// A command that records its own pid and its background child's, then waits on the child.
const SPAWNS_CHILD: &str = "echo $$ > leader.pid; sleep 60 & echo $! > child.pid; wait";

/// How long a stopped process may take to disappear; a leaked `sleep 60` outlives it by far.
const GONE_WITHIN: Duration = Duration::from_secs(5);

async fn assert_stopped(h: &Harness) {
    for file in ["leader.pid", "child.pid"] {
        let pid = read_pid(&h.path(file)).await;
        assert!(wait_process_gone(pid, GONE_WITHIN).await, "{file}: process {pid} is still running");
    }
}

/// Starts a session whose first tool call runs [`SPAWNS_CHILD`] and waits until the child runs.
async fn start_command(timeout_ms: u64) -> Harness {
    let mut h = Harness::start(Setup::new(ProfileKind::OpenAi)).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "shell",
        json!({"command": SPAWNS_CHILD, "timeout_ms": timeout_ms}),
    ));
    h.handle.submit("start the server".into());
    h.until(EventKind::ToolCallStart).await;
    read_pid(&h.path("child.pid")).await;
    h
}

#[tokio::test]
async fn shell_timeout_leaves_no_process_behind() {
    let mut h = start_command(300).await;
    h.mock.push(Reply::new().text("It timed out."));
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "completed");
    let end = of_kind(&events, EventKind::ToolCallEnd)[0];
    assert!(str_of(end, "error").contains("[ERROR: Command timed out after 300ms."), "{:?}", end.data);
    assert_stopped(&h).await;
}

#[tokio::test]
async fn cancel_mid_command_leaves_no_process_behind() {
    let mut h = start_command(30_000).await;
    h.handle.cancel();
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "cancelled");
    assert_eq!(str_of(of_kind(&events, EventKind::ToolCallEnd)[0], "status"), "cancelled");
    assert_stopped(&h).await;
    assert_eq!(h.handle.state(), SessionState::Idle);
}

#[tokio::test]
async fn close_mid_command_leaves_no_process_behind() {
    let mut h = start_command(30_000).await;
    let events = h.close().await;
    assert!(events.iter().any(|e| e.kind() == EventKind::ProcessingEnd));
    assert_stopped(&h).await;
}

#[tokio::test]
async fn close_ends_background_jobs_of_finished_commands() {
    let mut h = Harness::start(Setup::new(ProfileKind::Anthropic)).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "shell",
        json!({"command": "sleep 60 >/dev/null 2>&1 & echo $! > bg.pid; echo started"}),
    ));
    h.mock.push(Reply::new().text("Started it in the background."));
    assert_eq!(reason(&h.run("start a watcher").await), "completed");
    let pid = read_pid(&h.path("bg.pid")).await;
    assert!(!session_harness::process_gone(pid), "a background job may outlive its command");
    h.close().await;
    assert!(wait_process_gone(pid, GONE_WITHIN).await, "closing the session left {pid} running");
}
