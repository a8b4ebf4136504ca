//! Faults through the real server binary (`agentls serve --stdio`) against the loopback mock
//! provider: a stream cut in the middle of a tool call ends the turn cleanly and the next prompt
//! starts from a valid history; the editor disconnecting mid-turn ends the server, kills the
//! running command and leaves the transcript complete up to the cut; API keys appear in no log,
//! event, transcript, command environment or request body.

use crate::support;
use crate::support::lsp_client;
use crate::support::server_env::{LspServer, ServerEnv, ServerFolder};
use crate::support::session_harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use lsp_client::plugin_capabilities;
use serde_json::{Value, json};
use session_harness::{read_pid, wait_process_gone};
use support::exec_binary::OTHER_SECRET;
use support::mock_provider::{Dialect, Reply, StreamFailure, Turn, render_stream};

const KEY: &str = "sk-test-FAULT-SECRET-9191";

/// The server binary of these tests in a folder of its own: the workspace `ws/` (with
/// `project_file` as its `.agentls.toml`, in a folder its user trusts), the homes beside it.
struct Faults;

type Server = LspServer<Faults>;

impl Server {
    async fn start(dialect: Dialect, project_file: &str) -> Self {
        let lib = "pub fn one() -> u32 {\n    1\n}\n";
        let mut folder =
            ServerFolder::new(dialect, KEY, &[("src/lib.rs", lib), (".agentls.toml", project_file)]).await;
        // The tests' own project files are the user's: the folder is trusted (`agentls trust`).
        ServerEnv::in_dir(folder.dir.path()).trust(&folder.root);
        folder.env = folder.env.with([
            OTHER_SECRET,
            ("AGENTLS_PROVIDER", dialect.provider()),
            ("AGENTLS_LOG", "trace"),
        ]);
        let server = folder.start(Faults);
        server.client.initialize(&server.root, plugin_capabilities(), json!({"model": "mock-model"})).await;
        server
    }

    /// The records of a session's transcript.
    fn transcript(&self, session: &str) -> Vec<Value> {
        let path = self.dir.path().join("data/sessions").join(format!("{session}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.lines().skip(1).map(|line| serde_json::from_str(line).expect("a JSON record")).collect()
    }
}

/// The types of the turns a transcript stored, in order.
fn turn_types(records: &[Value]) -> Vec<String> {
    records.iter().filter_map(|r| r["turn"]["type"].as_str()).map(str::to_string).collect()
}

/// Every file under `dir`, as text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            out.push((path, text));
        }
    }
    out
}

async fn cut_mid_tool_call_then_prompt_again(dialect: Dialect) {
    let server = Server::start(dialect, "").await;
    let turn =
        Turn::new().text("Reading it.").tool_call("call_cut", "read_file", json!({"path": "src/lib.rs"}));
    // Cut right after the event that opens the tool call.
    let events = render_stream(dialect, &turn);
    let opens =
        events.iter().position(|e| String::from_utf8_lossy(e).contains("call_cut")).expect("the call");
    server.mock.push(turn.fail_after(opens + 1, StreamFailure::Cut));
    server.mock.push(Turn::new().text("Second answer."));
    let session = server.new_session().await;
    server.prompt(&session, "first prompt").await;
    let error = server.client.next_event(&session, "error").await;
    let message = error["data"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("response stream ended early"), "{dialect:?}: {message}");
    let end = server.client.next_event(&session, "processing_end").await;
    assert_eq!(end["data"]["reason"], "error", "{dialect:?}");

    server.prompt(&session, "second prompt").await;
    let end = server.client.next_event(&session, "processing_end").await;
    assert_eq!(
        (&end["data"]["reason"], &end["data"]["text"]),
        (&json!("completed"), &json!("Second answer."))
    );
    let requests = server.mock.requests();
    assert_eq!(requests.len(), 2, "{dialect:?}: a stream that handed on output is not retried");
    let next = requests[1].body.to_string();
    assert!(next.contains("first prompt") && next.contains("second prompt"), "{dialect:?}: {next}");
    assert!(
        !next.contains("call_cut") && !next.contains("Reading it."),
        "{dialect:?}: nothing of the cut answer is in the history: {next}"
    );
    assert_eq!(turn_types(&server.transcript(&session)), ["user", "user", "assistant"], "{dialect:?}");
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_ends_the_turn_and_the_history_stays_valid_anthropic() {
    cut_mid_tool_call_then_prompt_again(Dialect::Anthropic).await;
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_ends_the_turn_and_the_history_stays_valid_openai() {
    cut_mid_tool_call_then_prompt_again(Dialect::OpenAiResponses).await;
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_ends_the_turn_and_the_history_stays_valid_openai_chat() {
    cut_mid_tool_call_then_prompt_again(Dialect::OpenAiChat).await;
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_ends_the_turn_and_the_history_stays_valid_gemini() {
    cut_mid_tool_call_then_prompt_again(Dialect::Gemini).await;
}

#[tokio::test]
async fn the_editor_disconnecting_mid_turn_ends_the_server_its_commands_and_keeps_the_transcript() {
    let server = Server::start(Dialect::Anthropic, "[shell]\npermission = \"allow\"\n").await;
    let command = "echo $$ > leader.pid; sleep 60 & echo $! > child.pid; wait";
    server.mock.push(Turn::new().text("Starting it.").tool_call(
        "c1",
        "shell",
        json!({"command": command, "timeout_ms": 60000}),
    ));
    // The editor leaves while the server waits for its answer to a request.
    server.client.manual("window/workDoneProgress/create");
    let session = server.new_session().await;
    server.prompt(&session, "start the server").await;
    server.client.next_request("window/workDoneProgress/create").await;
    let leader = read_pid(&server.root.join("leader.pid")).await;
    let child = read_pid(&server.root.join("child.pid")).await;

    server.client.close_input();
    let status = tokio::time::timeout(Duration::from_secs(20), server.client.exit_status())
        .await
        .expect("the server exits when the editor goes away");
    assert_eq!(status.code(), Some(1), "no shutdown came: {}", server.client.stderr_text());
    for pid in [leader, child] {
        assert!(wait_process_gone(pid, Duration::from_secs(5)).await, "process {pid} outlived the server");
    }
    let records = server.transcript(&session);
    assert_eq!(turn_types(&records), ["user", "assistant", "tool_results"], "{records:#?}");
    assert_eq!(records[0]["turn"]["content"], "start the server");
    assert_eq!(records[1]["turn"]["tool_calls"][0]["id"], "c1");
    let result = &records[2]["turn"]["results"][0];
    assert_eq!((&result["call_id"], &result["is_error"]), (&json!("c1"), &json!(true)), "{result}");
    assert_eq!(server.mock.request_count(), 1);
}

#[tokio::test]
async fn api_keys_are_in_no_log_event_transcript_request_body_or_command_environment() {
    let server = Server::start(Dialect::OpenAiResponses, "[shell]\npermission = \"allow\"\n").await;
    server.mock.push(Turn::new().tool_call("c1", "shell", json!({"command": "env"})));
    server.mock.push(Turn::new().text("Listed the environment."));
    // A provider that echoes the key it was sent in its error.
    server.mock.push(Reply::json(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"),
        "type": "invalid_request_error", "code": "invalid_api_key"}}),
    ));
    let session = server.new_session().await;
    server.prompt(&session, "show the environment").await;
    let end = server.client.next_event(&session, "processing_end").await;
    assert_eq!(end["data"]["reason"], "completed");
    let ran = server.client.next_event(&session, "tool_call_end").await;
    let output = ran["data"]["output"].as_str().unwrap_or_default();
    assert!(output.contains("PATH="), "the command's environment was listed: {output}");
    server.prompt(&session, "again").await;
    let error = server.client.next_event(&session, "error").await;
    assert!(error["data"]["message"].as_str().unwrap_or_default().contains("[redacted]"), "{error}");
    server.client.shutdown().await;
    assert_eq!(server.client.exit_status().await.code(), Some(0));

    let mut outputs: Vec<(String, String)> = vec![("stderr".into(), server.client.stderr_text())];
    outputs.extend(
        server.client.all_messages().iter().map(|m| ("a message to the editor".into(), m.to_string())),
    );
    outputs.extend(
        files_under(server.dir.path()).into_iter().map(|(path, text)| (path.display().to_string(), text)),
    );
    outputs.extend(
        server
            .mock
            .requests()
            .iter()
            .map(|r| ("a request body".into(), String::from_utf8_lossy(&r.raw_body).into_owned())),
    );
    let logs = files_under(&server.dir.path().join("state"));
    assert!(
        logs.iter().any(|(_, text)| text.contains("model request")),
        "the trace log was written: {logs:?}"
    );
    assert!(files_under(&server.dir.path().join("data/sessions")).len() == 1, "the transcript was written");
    for (origin, text) in outputs {
        for secret in [KEY, OTHER_SECRET.1] {
            assert!(!text.contains(secret), "{secret} leaked into {origin}: {text}");
        }
    }
}
