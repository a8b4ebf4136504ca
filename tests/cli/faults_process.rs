//! Command faults through `agentls exec` against the loopback mock provider: a command that
//! prints 100 MB leaves the server's memory bounded and the model a truncated result; a command
//! whose processes fork and ignore SIGTERM is ended with its whole process group when it times out.

use crate::support;
use crate::support::session_harness;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use session_harness::calls::sent_result;
use session_harness::{read_pid, wait_process_gone};
use support::exec_binary::exec_command;
use support::mock_provider::{Dialect, MockProvider, Turn};

const KEY: &str = "sk-test-process-5151";

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event per line"))
        .collect()
}

/// The peak resident memory of process `pid` in bytes (`VmHWM`).
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process runs");
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM");
    kb * 1024
}

#[tokio::test]
async fn a_command_printing_100_mb_is_truncated_and_memory_stays_bounded() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    let command = "head -c 100000000 /dev/zero | tr '\\0' 'x'; echo; echo the-end";
    mock.push(Turn::new().tool_call("c1", "shell", json!({"command": command, "timeout_ms": 60000})));
    // The answer comes slowly: the server is still running when its memory is read.
    mock.push(Turn::new().text("It printed a lot.").delay(Duration::from_millis(500)));
    let dir = tempfile::tempdir().expect("tempdir");
    let child = exec_command(
        &mock,
        dir.path(),
        KEY,
        &["--provider", "openai", "--json", "--shell", "allow", "print a lot"],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("agentls starts");
    let pid = child.id().expect("running");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while mock.request_count() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "the command's result never reached the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let peak = peak_rss(pid);
    let out = child.wait_with_output().await.expect("agentls exits");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // The capture keeps 8 MB from each end of a stream; the result and its event copy it.
    assert!(peak < 128 << 20, "peak memory {} MB for 100 MB of output", peak >> 20);

    let sent = sent_result(agentls::profiles::ProfileKind::OpenAi, &mock.requests()[1].body, "c1").content;
    assert!(sent.len() < 64 * 1024, "the model gets a truncated result: {} bytes", sent.len());
    assert!(sent.contains("the-end"), "the end of the output is kept");
    let events = events(&out);
    let end = events.iter().find(|e| e["kind"] == "tool_call_end").expect("tool_call_end");
    let output = end["data"]["output"].as_str().expect("output");
    assert!(output.len() < 20 << 20, "the event carries a bounded output: {} bytes", output.len());
    assert!(
        output.contains("bytes of output were not captured") && output.contains("the-end"),
        "{}",
        &output[output.len() - 200..]
    );
    assert_eq!(end["data"]["truncated"], true);
}

#[tokio::test]
async fn a_command_that_forks_and_ignores_sigterm_dies_with_its_whole_group() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    // The shell and its child both ignore SIGTERM (an ignored signal stays ignored across exec).
    let command = "trap '' TERM; echo $$ > leader.pid; (trap '' TERM; sleep 60) & echo $! > child.pid; \
                   (trap '' TERM; exec sleep 61) & echo $! > grandchild.pid; while :; do sleep 1; done";
    mock.push(Turn::new().tool_call("c1", "shell", json!({"command": command, "timeout_ms": 500})));
    mock.push(Turn::new().text("It had to be killed."));
    let dir = tempfile::tempdir().expect("tempdir");
    let out =
        exec_command(&mock, dir.path(), KEY, &["--provider", "anthropic", "--shell", "allow", "run it"])
            .output()
            .await
            .expect("agentls runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for file in ["leader.pid", "child.pid", "grandchild.pid"] {
        let pid = read_pid(&dir.path().join(file)).await;
        assert!(wait_process_gone(pid, Duration::from_secs(1)).await, "{file}: process {pid} survived");
    }
    let sent = sent_result(agentls::profiles::ProfileKind::Anthropic, &mock.requests()[1].body, "c1").content;
    assert!(sent.contains("timed out after 500ms"), "{sent}");
    assert!(!Path::new(&dir.path().join("never")).exists());
}
