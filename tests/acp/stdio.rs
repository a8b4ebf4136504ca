//! `agentls acp` on its raw wire: malformed and out-of-order messages are answered (or ignored,
//! for notifications and stray responses) and the agent goes on serving; stdout carries nothing
//! but JSON-RPC.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::exec_binary::clean_command;
use support::mock_provider::{Dialect, MockProvider, Turn as Reply};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Agent {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Agent {
    fn start(mock: &MockProvider, home: &std::path::Path) -> Self {
        let mut cmd =
            clean_command(std::path::Path::new(env!("CARGO_BIN_EXE_agentls")), home, mock, "sk-test-key");
        cmd.arg("acp").env("AGENTLS_DATA_DIR", home.join("data"));
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
        let mut child = cmd.spawn().expect("agentls acp starts");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self { child, stdin, lines }
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.expect("write");
    }

    /// The next message from the agent; every line must be a JSON-RPC 2.0 message.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("the agent answers")
            .expect("read")
            .expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// The response to request `id` (notifications before it are skipped).
    async fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self.next().await;
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
        }
    }
}

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn malformed_and_out_of_order_messages_are_answered_and_the_agent_goes_on() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().text("still here"));
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().canonicalize().unwrap();
    let mut agent = Agent::start(&mock, &ws);

    agent.send("this is not json").await;
    let parse = agent.next().await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);

    agent.send(&request(1, "session/new", json!({"cwd": ws, "mcpServers": []}))).await;
    let early = agent.response(1).await;
    assert_eq!(early["error"]["code"], -32600, "before initialize: {early}");

    agent.send(&request(2, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))).await;
    assert_eq!(agent.response(2).await["result"]["protocolVersion"], 1);

    agent.send(&request(3, "no/such_method", json!({}))).await;
    assert_eq!(agent.response(3).await["error"]["code"], -32601);

    agent.send(&request(4, "session/new", json!({"cwd": 42}))).await;
    assert_eq!(agent.response(4).await["error"]["code"], -32602);

    agent.send(&request(5, "session/new", json!({"cwd": "relative/dir", "mcpServers": []}))).await;
    let relative = agent.response(5).await;
    assert_eq!(relative["error"]["code"], -32602);
    assert!(relative["error"]["data"].as_str().unwrap().contains("absolute"), "{relative}");

    agent
        .send(&request(
            6,
            "session/prompt",
            json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
        ))
        .await;
    assert_eq!(agent.response(6).await["error"]["code"], -32002, "an unknown session");

    // A stray response and unknown notifications are ignored.
    agent.send(&json!({"jsonrpc": "2.0", "id": 999, "result": {}}).to_string()).await;
    agent
        .send(
            &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}})
                .to_string(),
        )
        .await;
    agent.send(&json!({"jsonrpc": "2.0", "method": "_vendor/thing", "params": {}}).to_string()).await;
    agent.send("[1, 2]").await;
    assert_eq!(agent.next().await["error"]["code"], -32600, "a batch is no message here");

    agent.send(&request(7, "session/new", json!({"cwd": ws, "mcpServers": []}))).await;
    let created = agent.response(7).await;
    let id = created["result"]["sessionId"].as_str().expect("a session").to_string();
    agent
        .send(&request(
            8,
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}),
        ))
        .await;
    assert_eq!(agent.response(8).await["error"]["code"], -32602, "audio is not advertised");
    agent
        .send(&request(
            80,
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "text/plain"}]}),
        ))
        .await;
    assert_eq!(agent.response(80).await["error"]["code"], -32602, "an image block that is no image");
    agent
        .send(&request(
            9,
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}),
        ))
        .await;
    assert_eq!(agent.response(9).await["result"]["stopReason"], "end_turn");

    drop(agent.stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), agent.child.wait())
        .await
        .expect("exits")
        .expect("wait");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_second_prompt_while_one_runs_is_refused_and_cancel_ends_the_first() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().text("slow answer").delay(Duration::from_secs(30)));
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().canonicalize().unwrap();
    let mut agent = Agent::start(&mock, &ws);
    agent.send(&request(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))).await;
    agent.response(1).await;
    agent.send(&request(2, "session/new", json!({"cwd": ws, "mcpServers": []}))).await;
    let id = agent.response(2).await["result"]["sessionId"].as_str().unwrap().to_string();
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    agent.send(&request(3, "session/prompt", json!({"sessionId": id, "prompt": text("first")}))).await;
    // The first input has started once its title is announced.
    loop {
        let message = agent.next().await;
        if message["params"]["update"]["sessionUpdate"] == "session_info_update" {
            break;
        }
    }
    agent.send(&request(4, "session/prompt", json!({"sessionId": id, "prompt": text("second")}))).await;
    let refused = agent.response(4).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    agent
        .send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}}).to_string())
        .await;
    assert_eq!(agent.response(3).await["result"]["stopReason"], "cancelled");
}
