//! The `python` tool's REPL on the local environment: state across calls, an interrupt that the
//! code ignores (the REPL is killed and restarted, and says so), and a REPL that ends with its tool.

use crate::support::tools_support;

use std::time::Duration;

use agentls::exec::ShellLimits;
use agentls::tools::python::PythonTool;
use agentls::tools::{TaskEnd, Tool};
use serde_json::json;
use tools_support::{Fixture, RecordingPort};

fn fixture() -> Fixture {
    Fixture::with_port(
        RecordingPort::allowing(),
        ShellLimits { default_timeout_ms: 500, max_timeout_ms: 10_000 },
    )
}

fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

#[tokio::test]
async fn code_that_ignores_the_interrupt_gets_a_fresh_repl_and_is_told_so() {
    let fx = fixture();
    let tool = PythonTool::default();
    tool.call(json!({"code": "kept = 1"}), &fx.ctx).await.expect("runs");
    let first = tool.repl_pid().await.expect("a REPL runs");
    let stubborn = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass";
    let error = tool.call(json!({"code": stubborn}), &fx.ctx).await.unwrap_err();
    assert!(
        error.0.contains("did not stop after an interrupt; the REPL was restarted and its state is lost"),
        "{error}"
    );
    assert_eq!(tool.repl_pid().await, None);
    for _ in 0..200 {
        if gone(first) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone(first), "the stubborn REPL {first} was killed");
    let after = tool.call(json!({"code": "print('kept' in globals())"}), &fx.ctx).await.expect("runs");
    assert_eq!(after.content, "[stdout]\nFalse", "a new REPL, an empty state");
    let done = tool.call(json!({"code": "return [1, 2]"}), &fx.ctx).await.expect("runs");
    assert_eq!(done.ends_task, Some(TaskEnd::Answer("[1, 2]".into())));
    let last = tool.repl_pid().await.expect("a REPL runs");
    drop(tool);
    for _ in 0..200 {
        if gone(last) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone(last), "the REPL {last} ends with its tool");
}
