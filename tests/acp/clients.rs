//! `agentls acp` driven by real ACP clients nobody here wrote, installed from npm by
//! `scripts/install-acp-clients`: the official TypeScript SDK's client app (the scripted
//! `tests/acp/driver.mjs`) and `acpx`, against the loopback mock provider. Each journey asserts
//! what the client saw (updates, permission questions, file reads and writes, responses), what
//! reached the model and what is on disk.

use crate::support;
use crate::support::lsp_client;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::exec_binary::{USER_CONFIG, clean_command};
use support::mock_provider::{Dialect, MockProvider, Turn as Reply};
use support::server_env::ServerEnv;

const KEY: &str = "sk-test-secret-value-123";

/// The folder the clients are installed in (installed on first use, once per test run).
fn clients() -> PathBuf {
    support::installed::installed("install-acp-clients")
}

fn node() -> PathBuf {
    clients().join("node_modules/.bin/node")
}

/// A folder for one test: the workspace `ws/` and the agent's home (config, data).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("ws")).expect("ws");
        Self { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().expect("ws")
    }

    /// Writes the user's configuration file (`AGENTLS_CONFIG`).
    fn config(&self, toml: &str) {
        std::fs::write(self.dir.path().join(USER_CONFIG), toml).expect("user config");
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.ws().join(rel);
        std::fs::write(&path, text).expect("write");
        path
    }

    /// A command with a clean environment pointing at the mock: PATH, HOME, the user config
    /// and the data dir in the test's folder, the provider's key.
    fn command(&self, mock: &MockProvider, program: &Path) -> tokio::process::Command {
        let mut cmd = clean_command(program, self.dir.path(), mock, KEY);
        cmd.env("AGENTLS_DATA_DIR", self.dir.path().join("data"));
        cmd.env("AGENTLS_BIN", env!("CARGO_BIN_EXE_agentls"));
        cmd
    }

    /// `initialize` with `capabilities`, `session/new` in the workspace, then `steps`, the
    /// permission questions answered with `permissions` in order.
    async fn journey(
        &self,
        mock: &MockProvider,
        capabilities: Value,
        permissions: Value,
        steps: Value,
    ) -> Vec<Value> {
        let mut all = vec![json!({"op": "initialize"}), json!({"op": "new", "cwd": self.ws()})];
        all.extend(steps.as_array().cloned().unwrap_or_default());
        self.drive(mock, json!({"capabilities": capabilities, "permissions": permissions, "steps": all}))
            .await
    }

    /// Runs the SDK driver on `scenario` and returns the lines it printed.
    async fn drive(&self, mock: &MockProvider, scenario: Value) -> Vec<Value> {
        let file = self.dir.path().join("scenario.json");
        std::fs::write(&file, scenario.to_string()).expect("scenario");
        let mut cmd = self.command(mock, &node());
        cmd.arg(clients().join("driver.mjs")).arg(&file);
        let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
            .await
            .expect("the driver ends")
            .expect("the driver runs");
        let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert!(out.status.success(), "driver failed: {}\n{lines:#?}", String::from_utf8_lossy(&out.stderr));
        assert!(lines.iter().any(|l| l["type"] == "done"), "{lines:#?}");
        let exit = lines.iter().find(|l| l["type"] == "exit").expect("the agent exited");
        assert_eq!(exit["code"], 0, "the agent ends cleanly when the client closes its input");
        assert!(
            !lines.iter().any(|l| l["type"] == "unadvertised"),
            "an unadvertised client method was called: {lines:#?}"
        );
        lines
    }
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

fn response<'a>(lines: &'a [Value], op: &str) -> &'a Value {
    lines.iter().find(|l| l["op"] == op).unwrap_or_else(|| panic!("no answer to {op}: {lines:#?}"))
}

fn responses<'a>(lines: &'a [Value], op: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["op"] == op).collect()
}

fn updates<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "update" && l["update"]["sessionUpdate"] == kind)
        .map(|l| &l["update"])
        .collect()
}

fn message_text(lines: &[Value]) -> String {
    updates(lines, "agent_message_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

/// The model reads `rel` (call `c1`), then replaces `old` with `new` in it (call `c2`).
fn read_and_edit(mock: &MockProvider, rel: &str, old: &str, new: &str) {
    mock.push(Reply::new().tool_call("c1", "read_file", json!({"file_path": rel})));
    mock.push(Reply::new().tool_call(
        "c2",
        "edit_file",
        json!({"file_path": rel, "old_string": old, "new_string": new}),
    ));
}

/// A `session/prompt` step with one text block.
fn prompt(text: &str) -> Value {
    json!({"op": "prompt", "prompt": [{"type": "text", "text": text}]})
}

fn fs_caps(read: bool, write: bool) -> Value {
    json!({"fs": {"readTextFile": read, "writeTextFile": write}, "terminal": false})
}

/// The text of the tool results the model received in its `index`-th request (Anthropic).
fn sent_results(mock: &MockProvider, index: usize) -> String {
    let body = &mock.requests()[index].body;
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .last()
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn handshake_advertises_only_what_is_implemented_and_the_session_has_modes_and_commands() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let lines = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(false, false), "steps": [
                {"op": "initialize"},
                {"op": "new", "cwd": home.ws()},
            ]}),
        )
        .await;
    let init = &response(&lines, "initialize")["result"];
    assert_eq!(init["protocolVersion"], 1);
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true, "claude-sonnet-4-5 takes images");
    assert_ne!(caps["promptCapabilities"]["audio"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert_ne!(caps["mcpCapabilities"]["sse"], true);
    for cap in ["list", "resume", "close"] {
        assert!(caps["sessionCapabilities"][cap].is_object(), "{cap}: {caps}");
    }
    let new = &response(&lines, "new")["result"];
    assert!(new["sessionId"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(new["modes"]["currentModeId"], "ask");
    let modes: Vec<&str> = new["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["ask", "accept-edits", "read-only"]);
    let options: Vec<&str> =
        new["configOptions"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(options, ["mode", "model", "effort"], "claude-sonnet-4-5 takes a reasoning effort");
    let commands = updates(&lines, "available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compact", "model", "undo", "rewind", "redo"]);
    assert_eq!(mock.request_count(), 0, "nothing was asked of the model");
}

#[tokio::test]
async fn a_prompt_edits_an_unsaved_buffer_through_fs_methods_after_permission() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("notes.txt", "on disk\n");
    mock.push(Reply::new().thinking("Reading it first.", "sig").tool_call(
        "c1",
        "read_file",
        json!({"file_path": "notes.txt"}),
    ));
    mock.push(Reply::new().tool_call(
        "c2",
        "edit_file",
        json!({"file_path": "notes.txt", "old_string": "unsaved line", "new_string": "edited line"}),
    ));
    mock.push(Reply::new().text("Edited the buffer."));
    let lines = home
        .drive(
            &mock,
            json!({
                "capabilities": fs_caps(true, true),
                "buffers": {file.display().to_string(): "unsaved line\n"},
                "permissions": ["allow_once"],
                "steps": [
                    {"op": "initialize"},
                    {"op": "new", "cwd": home.ws()},
                    {"op": "prompt", "prompt": [{"type": "text", "text": "Fix "}, {"type": "resource_link", "name": "notes.txt", "uri": format!("file://{}", file.display())}]},
                ]
            }),
        )
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
    assert!(
        sent_results(&mock, 1).contains("unsaved line"),
        "the model read the editor's buffer, not the disk"
    );
    let first = mock.requests()[0].body.to_string();
    assert!(first.contains(&format!("@{}", file.display())), "the resource link is in the prompt: {first}");
    // The question came with the diff, after the call's tool_call, and before any write.
    let position = |pred: &dyn Fn(&Value) -> bool| lines.iter().position(pred).expect("present");
    let asked = position(&|l| l["type"] == "permission");
    let announced = position(&|l| {
        l["type"] == "update"
            && l["update"]["sessionUpdate"] == "tool_call"
            && l["update"]["toolCallId"] == "c2"
    });
    let written = position(&|l| l["type"] == "write");
    assert!(announced < asked && asked < written, "tool_call, then the question, then the write: {lines:#?}");
    assert_eq!(of_type(&lines, "permission")[0]["meta"], Value::Null, "no review extension unless asked for");
    let question = &of_type(&lines, "permission")[0]["toolCall"];
    assert_eq!(question["toolCallId"], "c2");
    let diff = &question["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["path"], file.display().to_string());
    assert_eq!(diff["oldText"], "unsaved line\n");
    assert_eq!(diff["newText"], "edited line\n");
    let kinds: Vec<&str> = of_type(&lines, "permission")[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"allow_once") && kinds.contains(&"reject_once"), "{kinds:?}");
    let writes = of_type(&lines, "write");
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0]["content"], "edited line\n");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "on disk\n", "the client wrote it, not the disk");
    // Streamed updates: the thought, the tool calls with kind, locations and rawInput, the answer.
    let thoughts: String =
        updates(&lines, "agent_thought_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect();
    assert_eq!(thoughts, "Reading it first.", "{lines:#?}");
    let calls = updates(&lines, "tool_call");
    assert_eq!(calls[0]["kind"], "read");
    assert_eq!(calls[1]["kind"], "edit");
    assert_eq!(calls[1]["rawInput"]["new_string"], "edited line");
    assert_eq!(calls[1]["locations"][0]["path"], file.display().to_string());
    let ends = updates(&lines, "tool_call_update").iter().filter(|u| u["status"] == "completed").count();
    assert_eq!(ends, 2, "{lines:#?}");
    assert_eq!(message_text(&lines), "Edited the buffer.");
    let titles = updates(&lines, "session_info_update");
    assert!(titles[0]["title"].as_str().unwrap().starts_with("Fix @"), "{titles:?}");
    assert!(!updates(&lines, "usage_update").is_empty());
}

#[tokio::test]
async fn a_rejected_edit_reaches_the_model_as_an_error_and_nothing_is_written() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("a.txt", "one\n");
    read_and_edit(&mock, "a.txt", "one", "two");
    mock.push(Reply::new().text("Understood, I left it."));
    let lines = home
        .journey(&mock, fs_caps(false, false), json!(["reject_once"]), json!([prompt("change one to two")]))
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    let result = sent_results(&mock, 2);
    assert!(result.contains("rejected") && result.contains("a.txt"), "{result}");
    assert!(result.contains("\"is_error\":true"), "an error result: {result}");
    assert_eq!(message_text(&lines), "Understood, I left it.");
    let failed = updates(&lines, "tool_call_update").iter().filter(|u| u["status"] == "failed").count();
    assert_eq!(failed, 1);
}

#[tokio::test]
async fn a_denied_command_is_not_run_and_always_reject_is_kept_for_the_session() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "mkdir -p made-1"})));
    mock.push(Reply::new().tool_call("c2", "shell", json!({"command": "mkdir -p made-2"})));
    mock.push(Reply::new().text("I could not run it."));
    let lines = home
        .journey(&mock, fs_caps(false, false), json!(["reject_always"]), json!([prompt("make files")]))
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    assert!(!home.ws().join("made-1").exists() && !home.ws().join("made-2").exists());
    let asked = of_type(&lines, "permission");
    assert_eq!(asked.len(), 1, "the second command was refused without asking: {lines:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "c1");
    assert_eq!(asked[0]["toolCall"]["kind"], "execute");
    let kinds: Vec<&str> =
        asked[0]["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert!(sent_results(&mock, 1).contains("denied"), "{}", sent_results(&mock, 1));
    assert!(sent_results(&mock, 2).contains("for the rest of this session"), "{}", sent_results(&mock, 2));
}

#[tokio::test]
async fn an_allowed_command_streams_its_output_and_later_reads_see_the_disk_not_a_stale_buffer() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("f.txt", "old\n");
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "echo marker-out; echo new > f.txt"})));
    mock.push(Reply::new().tool_call("c2", "read_file", json!({"file_path": "f.txt"})));
    mock.push(Reply::new().tool_call("c3", "read_file", json!({"file_path": "f.txt"})));
    mock.push(Reply::new().text("done"));
    let lines = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(true, true), "buffers": {file.display().to_string(): "old\n"},
                "permissions": ["allow_once"], "steps": [
                {"op": "initialize"}, {"op": "new", "cwd": home.ws()},
                {"op": "prompt", "prompt": [{"type": "text", "text": "run it"}]},
            ]}),
        )
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    let shown: String = updates(&lines, "tool_call_update")
        .iter()
        .filter(|u| u["toolCallId"] == "c1")
        .map(|u| u["content"].to_string())
        .collect();
    assert!(shown.contains("marker-out"), "the command's output is in the tool call: {lines:#?}");
    // The editor's buffer still says `old`: the disk changed behind it, the disk wins.
    assert!(sent_results(&mock, 2).contains("new"), "{}", sent_results(&mock, 2));
    assert!(!sent_results(&mock, 2).contains("old"), "{}", sent_results(&mock, 2));
}

#[tokio::test]
async fn cancel_with_a_pending_permission_ends_the_turn_cancelled() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "touch never"})));
    mock.push(Reply::new().text("after cancel"));
    let lines = home.journey(&mock, fs_caps(false, false), json!(["cancel"]), json!([prompt("run")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "cancelled", "{lines:#?}");
    assert!(!home.ws().join("never").exists());
    assert_eq!(mock.request_count(), 1, "the model was not asked again after the cancel");
}

#[tokio::test]
async fn without_fs_capabilities_the_disk_is_read_and_written_and_no_fs_method_is_called() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("d.txt", "alpha\n");
    read_and_edit(&mock, "d.txt", "alpha", "beta");
    mock.push(Reply::new().text("ok"));
    let lines =
        home.journey(&mock, fs_caps(false, false), json!(["allow_once"]), json!([prompt("edit")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    assert!(of_type(&lines, "read").is_empty() && of_type(&lines, "write").is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "beta\n", "the shared disk writer wrote it");
}

#[tokio::test]
async fn modes_switch_edits_between_asking_accepting_and_read_only() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("m.txt", "a\n");
    // read-only: the edit is refused without a question.
    read_and_edit(&mock, "m.txt", "a", "b");
    mock.push(Reply::new().text("planned"));
    // accept edits: written without a question.
    mock.push(Reply::new().tool_call(
        "c3",
        "edit_file",
        json!({"file_path": "m.txt", "old_string": "a", "new_string": "c"}),
    ));
    mock.push(Reply::new().text("edited"));
    let lines = home
        .journey(
            &mock,
            fs_caps(false, false),
            json!([]),
            json!([
                {"op": "set_mode", "mode": "read-only"},
                {"op": "prompt", "prompt": [{"type": "text", "text": "plan"}]},
                {"op": "set_config", "configId": "mode", "value": "accept-edits"},
                {"op": "prompt", "prompt": [{"type": "text", "text": "do it"}]},
                {"op": "set_mode", "mode": "no-such-mode"},
            ]),
        )
        .await;
    assert!(of_type(&lines, "permission").is_empty(), "{lines:#?}");
    assert!(sent_results(&mock, 2).contains("read-only"), "{}", sent_results(&mock, 2));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "c\n");
    let modes: Vec<&str> =
        updates(&lines, "current_mode_update").iter().map(|u| u["currentModeId"].as_str().unwrap()).collect();
    assert_eq!(modes, ["read-only", "accept-edits"]);
    let set = &response(&lines, "set_config")["result"]["configOptions"][0];
    assert_eq!(set["currentValue"], "accept-edits");
    let errors = responses(&lines, "set_mode").into_iter().filter(|l| l["type"] == "error").count();
    assert_eq!(errors, 1, "an unknown mode is refused");
}

#[tokio::test]
async fn slash_commands_typed_by_the_user_work() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let lines = home
        .journey(
            &mock,
            fs_caps(false, false),
            json!([]),
            json!([
                {"op": "prompt", "prompt": [{"type": "text", "text": "/model other-model-1"}]},
                {"op": "prompt", "prompt": [{"type": "text", "text": "/compact"}]},
            ]),
        )
        .await;
    let answers = responses(&lines, "prompt");
    assert!(answers.iter().all(|a| a["result"]["stopReason"] == "end_turn"), "{lines:#?}");
    let text = message_text(&lines);
    assert!(text.contains("Model: other-model-1"), "{text}");
    assert!(text.to_lowercase().contains("nothing to"), "compacting an empty conversation says so: {text}");
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test]
async fn load_replays_the_history_and_resume_goes_on_with_it() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    home.write("r.txt", "hello\n");
    mock.push(Reply::new().tool_call("c1", "read_file", json!({"file_path": "r.txt"})));
    mock.push(Reply::new().text("It says hello."));
    let first =
        home.journey(&mock, fs_caps(false, false), json!([]), json!([prompt("what does r.txt say?")])).await;
    let id = response(&first, "new")["result"]["sessionId"].as_str().unwrap().to_string();
    mock.push(Reply::new().text("Still hello."));
    let second = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(false, false), "steps": [
                {"op": "initialize"},
                {"op": "list"},
                {"op": "load", "sessionId": id, "cwd": home.ws()},
                {"op": "prompt", "sessionId": id, "prompt": [{"type": "text", "text": "and now?"}]},
            ]}),
        )
        .await;
    let listed = &response(&second, "list")["result"]["sessions"];
    let entry = listed.as_array().unwrap().iter().find(|s| s["sessionId"] == id.as_str()).expect("listed");
    assert_eq!(entry["title"], "what does r.txt say?");
    assert_eq!(entry["cwd"], home.ws().display().to_string());
    let load_at = second.iter().position(|l| l["op"] == "load").unwrap();
    let replayed: Vec<&Value> =
        second[..load_at].iter().filter(|l| l["type"] == "update").map(|l| &l["update"]).collect();
    let kinds: Vec<&str> = replayed.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"],
        "{replayed:#?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "what does r.txt say?");
    assert!(replayed[2]["content"].to_string().contains("hello"));
    assert_eq!(response(&second, "prompt")["result"]["stopReason"], "end_turn");
    let last = mock.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("what does r.txt say?") && last.contains("and now?"),
        "the model got the whole conversation"
    );
    // resume: no replay, the conversation goes on.
    mock.push(Reply::new().text("Resumed."));
    let third = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(false, false), "steps": [
                {"op": "initialize"},
                {"op": "resume", "sessionId": id, "cwd": home.ws()},
                {"op": "prompt", "sessionId": id, "prompt": [{"type": "text", "text": "third"}]},
                {"op": "close", "sessionId": id},
            ]}),
        )
        .await;
    let resume_at = third.iter().position(|l| l["op"] == "resume").unwrap();
    assert!(!third[..resume_at].iter().any(|l| l["type"] == "update"), "resume replays nothing");
    assert_eq!(response(&third, "close")["type"], "response");
    let last = mock.requests().last().unwrap().body.to_string();
    assert!(last.contains("and now?") && last.contains("third"));
}

#[tokio::test]
async fn mcp_servers_from_session_new_over_stdio_and_http_are_offered_and_their_calls_asked_about() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let everything = support::installed::everything();
    // The same server over Streamable HTTP.
    let (mut web, url) = support::installed::everything_http().await;
    mock.push(Reply::new().tool_call("c1", "mcp__everything__echo", json!({"message": "via-acp"})));
    mock.push(Reply::new().tool_call("c2", "mcp__web__get-sum", json!({"a": 2, "b": 40})));
    mock.push(Reply::new().text("echoed and added"));
    let lines = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(false, false), "permissions": ["allow_once", "allow_once"], "steps": [
                {"op": "initialize"},
                {"op": "new", "cwd": home.ws(), "mcpServers": [
                    {"name": "everything", "command": everything, "args": ["stdio"], "env": []},
                    {"type": "http", "name": "web", "url": url, "headers": []},
                ]},
                prompt("echo, then add"),
            ]}),
        )
        .await;
    let _ = web.kill().await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
    let tools = mock.requests()[0].body["tools"].to_string();
    assert!(tools.contains("mcp__everything__echo") && tools.contains("mcp__web__get-sum"), "{tools}");
    let asked = of_type(&lines, "permission");
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["toolCall"]["rawInput"]["tool"], "echo");
    assert_eq!(asked[1]["toolCall"]["rawInput"]["server"], "web");
    assert!(sent_results(&mock, 1).contains("via-acp"), "{}", sent_results(&mock, 1));
    assert!(sent_results(&mock, 2).contains("42"), "{}", sent_results(&mock, 2));
}

/// `acpx --agent 'agentls acp' --format json <flags> exec PROMPT` in the workspace: the JSON-RPC
/// lines acpx printed, and its exit status.
async fn acpx(home: &Home, mock: &MockProvider, flags: &[&str], prompt: &str) -> (Vec<Value>, bool) {
    let mut cmd = home.command(mock, &node());
    cmd.arg(clients().join("node_modules/acpx/dist/cli.js"))
        .arg("--agent")
        .arg(format!("{} acp", env!("CARGO_BIN_EXE_agentls")))
        .arg("--cwd")
        .arg(home.ws())
        .args(["--format", "json"])
        .args(flags)
        .args(["exec", prompt]);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("acpx ends")
        .expect("acpx runs");
    let lines =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    (lines, out.status.success())
}

fn methods(lines: &[Value]) -> Vec<&str> {
    lines.iter().filter_map(|l| l["method"].as_str()).collect()
}

#[tokio::test]
async fn acpx_runs_a_prompt_that_edits_through_its_fs_methods_after_approval() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("x.txt", "before\n");
    read_and_edit(&mock, "x.txt", "before", "after");
    mock.push(Reply::new().text("Changed it."));
    let (lines, ok) = acpx(&home, &mock, &["--approve-all"], "change x").await;
    assert!(ok, "{lines:#?}");
    let called = methods(&lines);
    for method in [
        "initialize",
        "session/new",
        "session/prompt",
        "fs/read_text_file",
        "session/request_permission",
        "fs/write_text_file",
    ] {
        assert!(called.contains(&method), "{method} in {called:?}");
    }
    let asked = called.iter().position(|m| *m == "session/request_permission").unwrap();
    let wrote = called.iter().position(|m| *m == "fs/write_text_file").unwrap();
    assert!(asked < wrote, "asked before writing: {called:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "after\n");
    let stop = lines.iter().find_map(|l| l["result"]["stopReason"].as_str());
    assert_eq!(stop, Some("end_turn"));
    assert!(!called.iter().any(|m| m.starts_with("terminal/")), "the terminal was never used: {called:?}");
}

#[tokio::test]
async fn acpx_denying_everything_keeps_a_command_from_running() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "touch acpx-made"})));
    mock.push(Reply::new().text("Not run."));
    let (lines, _) = acpx(&home, &mock, &["--deny-all"], "make a file").await;
    assert!(methods(&lines).contains(&"session/request_permission"), "{lines:#?}");
    assert!(!home.ws().join("acpx-made").exists());
    let body = mock.requests()[1].body.to_string();
    assert!(body.contains("denied"), "the model was told: {body}");
}

#[tokio::test]
async fn acpx_runs_an_allowed_command_in_its_terminal_without_the_provider_key() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "env; echo acpx-ran > ran.txt"})));
    mock.push(Reply::new().text("Ran it."));
    let (lines, ok) = acpx(&home, &mock, &["--approve-all"], "run env").await;
    assert!(ok, "{lines:#?}");
    let called = methods(&lines);
    let asked = called.iter().position(|m| *m == "session/request_permission").expect("asked");
    let created = called
        .iter()
        .position(|m| *m == "terminal/create")
        .unwrap_or_else(|| panic!("no terminal: {called:?}"));
    assert!(asked < created, "{called:?}");
    assert!(called.contains(&"terminal/release"), "{called:?}");
    assert_eq!(std::fs::read_to_string(home.ws().join("ran.txt")).unwrap(), "acpx-ran\n");
    // acpx's terminal inherits its environment, which holds the provider's key.
    let result = mock.requests()[1].body.to_string();
    assert!(result.contains("PATH="), "the model got the terminal's output: {result}");
    assert!(!result.contains(KEY) && !result.contains("ANTHROPIC_API_KEY"), "{result}");
}

/// The language server of the same user (same data dir) as `home`'s ACP agent.
async fn lsp(home: &Home, mock: &MockProvider) -> lsp_client::LspClient {
    let client = ServerEnv::for_mock(home.dir.path(), mock, KEY).in_process();
    client.initialize(&home.ws(), lsp_client::plugin_capabilities(), json!({})).await;
    client
}

#[tokio::test]
async fn a_session_created_over_acp_is_resumed_by_the_language_server_and_the_other_way_round() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    // ACP → LSP.
    mock.push(Reply::new().text("noted: kumquat"));
    let lines =
        home.journey(&mock, fs_caps(false, false), json!([]), json!([prompt("remember kumquat")])).await;
    let acp_id = response(&lines, "new")["result"]["sessionId"].as_str().unwrap().to_string();
    let client = lsp(&home, &mock).await;
    let listed = client.command("agentls.listSessions", json!({})).await.expect("list");
    assert!(
        listed["sessions"].as_array().unwrap().iter().any(|s| s["sessionId"] == acp_id.as_str()),
        "{listed}"
    );
    let resumed =
        client.command("agentls.resumeSession", json!({"sessionId": acp_id})).await.expect("resume");
    assert_eq!(resumed["resumed"], true);
    assert_eq!(resumed["turns"], 2, "{resumed}");
    mock.push(Reply::new().text("kumquat"));
    client
        .command("agentls.prompt", json!({"sessionId": acp_id, "text": "which word?"}))
        .await
        .expect("prompt");
    client.next_turn_end(&acp_id).await;
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("remember kumquat") && body.contains("which word?"), "{body}");
    // LSP → ACP.
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let lsp_id = created["sessionId"].as_str().unwrap().to_string();
    mock.push(Reply::new().text("from the editor"));
    client
        .command("agentls.prompt", json!({"sessionId": lsp_id, "text": "hello from lsp"}))
        .await
        .expect("prompt");
    client.next_turn_end(&lsp_id).await;
    client.shutdown().await;
    mock.push(Reply::new().text("over acp now"));
    let lines = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(false, false), "steps": [
                {"op": "initialize"},
                {"op": "list", "cwd": home.ws()},
                {"op": "load", "sessionId": lsp_id, "cwd": home.ws()},
                {"op": "prompt", "sessionId": lsp_id, "prompt": [{"type": "text", "text": "and over acp"}]},
            ]}),
        )
        .await;
    let listed = &response(&lines, "list")["result"]["sessions"];
    let ids: Vec<&str> =
        listed.as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
    assert!(ids.contains(&lsp_id.as_str()) && ids.contains(&acp_id.as_str()), "{ids:?}");
    let replayed: String =
        updates(&lines, "user_message_chunk").iter().map(|u| u["content"]["text"].to_string()).collect();
    assert!(replayed.contains("hello from lsp"), "{replayed}");
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("hello from lsp") && body.contains("and over acp"), "{body}");
}

#[tokio::test]
async fn a_client_that_opts_in_reviews_hunk_by_hunk_with_a_reason() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("h.txt", "a\nb\nc\nd\ne\n");
    mock.push(Reply::new().tool_call("c1", "read_file", json!({"file_path": "h.txt"})));
    mock.push(Reply::new().tool_call(
        "c2",
        "write_file",
        json!({"file_path": "h.txt", "content": "A\nb\nc\nd\nE\n"}),
    ));
    mock.push(Reply::new().text("kept e"));
    let mut caps = fs_caps(false, false);
    caps["_meta"] = json!({"dev.agentls/review": {"hunks": true}});
    let answer = json!({"kind": "allow_once", "meta": {"dev.agentls/review": {
        "files": [{"path": file.display().to_string(), "hunks": [0]}],
        "feedback": "keep e lowercase",
    }}});
    let lines = home.journey(&mock, caps, json!([answer]), json!([prompt("capitalise a and e")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    let asked = &of_type(&lines, "permission")[0]["meta"]["dev.agentls/review"]["files"][0];
    assert_eq!(asked["path"], file.display().to_string());
    let hunks = asked["hunks"].as_array().expect("hunks");
    assert_eq!(hunks.len(), 2, "{asked}");
    assert_eq!((hunks[1]["oldStart"].clone(), hunks[1]["newText"].clone()), (json!(4), json!("E\n")));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "A\nb\nc\nd\ne\n", "only the first hunk");
    let told = sent_results(&mock, 2);
    assert!(told.contains("keep e lowercase") && told.contains("rejected hunks [1]"), "{told}");
}

#[tokio::test]
async fn an_untrusted_folders_ignored_keys_are_told_as_a_notice_or_a_message() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    home.write(".agentls.toml", "[shell]\npermission = \"allow\"\n");
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "touch untrusted-ran"})));
    mock.push(Reply::new().text("asked first"));
    let mut caps = fs_caps(false, false);
    caps["session"] = json!({"notices": {}});
    let lines = home.journey(&mock, caps, json!(["reject_once"]), json!([prompt("run it")])).await;
    let notices = updates(&lines, "notice");
    assert!(notices.iter().any(|n| n["title"].as_str().unwrap().contains("shell.permission")), "{lines:#?}");
    assert_eq!(
        of_type(&lines, "permission").len(),
        1,
        "the untrusted `allow` did not apply: the command was asked"
    );
    assert!(!home.ws().join("untrusted-ran").exists());
    // A client without notices gets the same report in the agent's message.
    mock.push(Reply::new().text("hello"));
    let lines = home.journey(&mock, fs_caps(false, false), json!([]), json!([prompt("hi")])).await;
    assert!(updates(&lines, "notice").is_empty());
    assert!(message_text(&lines).contains("shell.permission"), "{}", message_text(&lines));
}

#[tokio::test]
async fn stop_reasons_say_output_limit_refusal_and_round_limit() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    home.config("max_tool_rounds_per_input = 1\n");
    home.write("s.txt", "x\n");
    mock.push(Reply::new().text("The answer was cut here").finish_reason("max_tokens"));
    mock.push(Reply::new().text("I can't help with that.").finish_reason("refusal"));
    mock.push(Reply::new().tool_call("c1", "read_file", json!({"file_path": "s.txt"})));
    mock.push(Reply::new().text("fine"));
    let lines = home
        .journey(
            &mock,
            fs_caps(false, false),
            json!([]),
            json!([prompt("write a lot"), prompt("something refused"), prompt("read s"), prompt("and now")]),
        )
        .await;
    let stops: Vec<&Value> = responses(&lines, "prompt").iter().map(|r| &r["result"]["stopReason"]).collect();
    assert_eq!(stops, ["max_tokens", "refusal", "max_turn_requests", "end_turn"], "{lines:#?}");
    assert_eq!(mock.request_count(), 4, "the round limit stopped the loop after one tool round");
    let after = mock.requests()[2].body.to_string();
    assert!(after.contains("write a lot") && after.contains("read s"), "{after}");
    assert!(!after.contains("something refused"), "a refused prompt is not part of the next one: {after}");
}

#[tokio::test]
async fn reasoning_effort_is_a_config_option_the_next_request_carries_and_set_mode_still_works() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().text("default effort"));
    mock.push(Reply::new().text("thought hard"));
    let lines = home
        .journey(
            &mock,
            fs_caps(false, false),
            json!([]),
            json!([
                prompt("first"),
                {"op": "set_config", "configId": "effort", "value": "high"},
                {"op": "set_mode", "mode": "accept-edits"},
                prompt("second"),
                {"op": "set_config", "configId": "effort", "value": "extreme"},
                {"op": "set_config", "configId": "model", "value": "claude-3-5-haiku-latest"},
                {"op": "set_config", "configId": "effort", "value": "low"},
            ]),
        )
        .await;
    let new = &response(&lines, "new")["result"]["configOptions"];
    let effort = new.as_array().unwrap().iter().find(|o| o["id"] == "effort").expect("an effort option");
    assert_eq!(effort["currentValue"], "default");
    assert_eq!(effort["category"], "thought_level");
    let values: Vec<&str> =
        effort["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["default", "minimal", "low", "medium", "high"]);
    let set = responses(&lines, "set_config");
    let set_effort =
        set[0]["result"]["configOptions"].as_array().unwrap().iter().find(|o| o["id"] == "effort");
    assert_eq!(set_effort.unwrap()["currentValue"], "high", "{:#?}", set[0]);
    let requests = mock.requests();
    assert!(requests[0].body.get("thinking").is_none(), "no effort asked at first: {}", requests[0].body);
    assert_eq!(
        requests[1].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384}),
        "the next request carries the effort"
    );
    let modes: Vec<&str> =
        updates(&lines, "current_mode_update").iter().map(|u| u["currentModeId"].as_str().unwrap()).collect();
    assert_eq!(modes, ["accept-edits"], "the legacy session/set_mode still sets the mode");
    assert_eq!(set[1]["type"], "error", "an unknown effort is refused: {:#?}", set[1]);
    let old = set[2]["result"]["configOptions"].as_array().unwrap();
    assert!(!old.iter().any(|o| o["id"] == "effort"), "claude-3-5 takes no effort: {old:#?}");
    assert_eq!(set[3]["type"], "error", "no effort for a model without one: {:#?}", set[3]);
    let last = updates(&lines, "config_option_update").last().cloned().expect("config_option_update");
    assert!(!last["configOptions"].as_array().unwrap().iter().any(|o| o["id"] == "effort"), "{last:#?}");
}

const SUMMARY: &str = "The user had four files read; nothing was changed.";

/// Four tool rounds, then the provider's real context-length error: the session compacts
/// (`overflow`), then retries.
fn overflow_turn(mock: &MockProvider, home: &Home) {
    home.write("o.txt", "contents\n");
    for i in 0..4 {
        mock.push(Reply::new().tool_call(&format!("c{i}"), "read_file", json!({"file_path": "o.txt"})));
    }
    mock.push_wire("anthropic/error_400_prompt_too_long.http");
    mock.push(Reply::new().text(SUMMARY));
    mock.push(Reply::new().text("done after compacting"));
}

#[tokio::test]
async fn compaction_is_told_as_compaction_update_or_as_a_thought() {
    // A client that shows compactions gets compaction_update with the summary and the counts.
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    overflow_turn(&mock, &home);
    let mut caps = fs_caps(false, false);
    caps["session"] = json!({"compaction": {}});
    let lines = home.journey(&mock, caps, json!([]), json!([prompt("read it four times")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
    let compactions = updates(&lines, "compaction_update");
    assert_eq!(compactions.len(), 1, "{lines:#?}");
    assert_eq!(compactions[0]["status"], "completed");
    assert_eq!(compactions[0]["summary"][0]["text"], SUMMARY);
    let counts = &compactions[0]["_meta"]["dev.agentls/compaction"];
    assert_eq!(counts["trigger"], "overflow");
    assert!(counts["messagesSummarized"].as_u64().unwrap() > 0, "{counts}");
    assert!(
        counts["tokensBefore"].as_u64().unwrap() > 0 && counts["tokensAfter"].as_u64().unwrap() > 0,
        "{counts}"
    );
    assert!(counts["message"].as_str().unwrap().contains("Compacted the conversation"), "{counts}");
    assert_eq!(message_text(&lines), "done after compacting", "the compaction is not part of the answer");
    // Loading the session shows the summary the same way.
    let id = response(&lines, "new")["result"]["sessionId"].as_str().unwrap().to_string();
    let mut caps = fs_caps(false, false);
    caps["session"] = json!({"compaction": {}});
    let loaded = home
        .drive(
            &mock,
            json!({"capabilities": caps, "steps": [
                {"op": "initialize"}, {"op": "load", "sessionId": id, "cwd": home.ws()},
            ]}),
        )
        .await;
    let replayed = updates(&loaded, "compaction_update");
    assert_eq!(replayed.len(), 1, "{loaded:#?}");
    assert_eq!(
        (&replayed[0]["status"], &replayed[0]["summary"][0]["text"]),
        (&json!("completed"), &json!(SUMMARY))
    );
    // A client that does not: one line of the agent's thoughts, never the answer.
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    overflow_turn(&mock, &home);
    let lines =
        home.journey(&mock, fs_caps(false, false), json!([]), json!([prompt("read it four times")])).await;
    assert!(updates(&lines, "compaction_update").is_empty());
    let thoughts: String =
        updates(&lines, "agent_thought_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect();
    assert!(thoughts.contains("Compacted the conversation:") && thoughts.contains("tokens"), "{thoughts}");
    assert_eq!(message_text(&lines), "done after compacting");
}

#[tokio::test]
async fn subagents_are_subagent_updates_for_a_client_that_understands_them() {
    let task = "CHILD-K: read k.txt";
    let script = |mock: &MockProvider| {
        mock.push(Reply::new().tool_call("s1", "spawn_agent", json!({"task": task})));
        mock.push(Reply::new().tool_call("w1", "wait", json!({"agent_id": "agent-1"})));
        mock.push(Reply::new().text("the subagent read it"));
        mock.push_for(task, Reply::new().tool_call("k1", "read_file", json!({"file_path": "k.txt"})));
        mock.push_for(task, Reply::new().text("k says kumquat"));
    };
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    home.write("k.txt", "kumquat\n");
    script(&mock);
    let mut caps = fs_caps(false, false);
    caps["subagents"] = json!({});
    let lines = home
        .drive(
            &mock,
            json!({"sdk": "unstable", "capabilities": caps, "steps": [
                {"op": "initialize"}, {"op": "new", "cwd": home.ws()}, prompt("delegate it"),
            ]}),
        )
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
    let parent = response(&lines, "new")["result"]["sessionId"].as_str().unwrap().to_string();
    let announced: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "update" && l["update"]["sessionUpdate"] == "subagent_update")
        .collect();
    assert!(
        announced.iter().all(|l| l["sessionId"] == parent.as_str()),
        "on the parent session: {announced:#?}"
    );
    let child = announced[0]["update"]["sessionId"].as_str().expect("the child's session id").to_string();
    assert_ne!(child, parent);
    assert_eq!(announced[0]["update"]["title"], "agent-1");
    assert_eq!(announced[0]["update"]["state"]["state"], "running");
    assert!(announced.iter().any(|l| l["update"]["description"] == task), "{announced:#?}");
    let last = &announced.last().unwrap()["update"]["state"];
    assert_eq!((&last["state"], &last["stopReason"]), (&json!("idle"), &json!("end_turn")), "{announced:#?}");
    let first_child = lines.iter().position(|l| l["type"] == "update" && l["sessionId"] == child.as_str());
    let first_announce = lines.iter().position(|l| l["update"]["sessionUpdate"] == "subagent_update");
    assert!(first_announce < first_child, "announced before its own updates");
    let own: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "update" && l["sessionId"] == child.as_str())
        .map(|l| &l["update"])
        .collect();
    let kinds: Vec<&str> = own.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"user_message_chunk") && kinds.contains(&"tool_call"), "{kinds:?}");
    let call = own.iter().find(|u| u["sessionUpdate"] == "tool_call").unwrap();
    assert_eq!((&call["toolCallId"], &call["kind"]), (&json!("k1"), &json!("read")));
    let said: String = own
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(said, "k says kumquat");
    let answer: String = lines
        .iter()
        .filter(|l| {
            l["sessionId"] == parent.as_str() && l["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .filter_map(|l| l["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(answer, "the subagent read it", "the parent's answer is its own");
    // A client without `subagents` sees only the parent's calls.
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    home.write("k.txt", "kumquat\n");
    script(&mock);
    let lines = home.journey(&mock, fs_caps(false, false), json!([]), json!([prompt("delegate it")])).await;
    let parent = response(&lines, "new")["result"]["sessionId"].clone();
    assert!(updates(&lines, "subagent_update").is_empty());
    assert!(lines.iter().filter(|l| l["type"] == "update").all(|l| l["sessionId"] == parent), "{lines:#?}");
    let calls: Vec<&Value> = updates(&lines, "tool_call").iter().map(|u| &u["toolCallId"]).collect();
    assert_eq!(calls, ["s1", "w1"]);
}

/// A PNG's first eight bytes, base64.
const PNG: &str = "iVBORw0KGgo=";

/// Whether `value` or anything inside it equals `wanted`.
fn holds(value: &Value, wanted: &Value) -> bool {
    value == wanted
        || match value {
            Value::Array(items) => items.iter().any(|v| holds(v, wanted)),
            Value::Object(map) => map.values().any(|v| holds(v, wanted)),
            _ => false,
        }
}

#[tokio::test]
async fn an_image_in_a_prompt_reaches_each_dialect_in_its_shape_and_is_replayed_on_load() {
    let data_url = format!("data:image/png;base64,{PNG}");
    for (dialect, model, shape) in [
        (
            Dialect::Anthropic,
            None,
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}),
        ),
        (Dialect::OpenAiResponses, None, json!({"type": "input_image", "image_url": data_url})),
        (Dialect::OpenAiChat, Some("gpt-4o"), json!({"type": "image_url", "image_url": {"url": data_url}})),
        (Dialect::Gemini, None, json!({"inlineData": {"mimeType": "image/png", "data": PNG}})),
    ] {
        let mock = MockProvider::start(dialect).await;
        let home = Home::new();
        let model = model.map(|m| format!("model = \"{m}\"\n")).unwrap_or_default();
        home.config(&format!("provider = \"{}\"\n{model}", dialect.provider()));
        mock.push(Reply::new().text("a PNG header"));
        let image = json!({"op": "prompt", "prompt": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "mimeType": "image/png", "data": PNG},
        ]});
        let lines = home.journey(&mock, fs_caps(false, false), json!([]), json!([image])).await;
        assert_eq!(
            response(&lines, "initialize")["result"]["agentCapabilities"]["promptCapabilities"]["image"],
            true
        );
        assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{dialect:?}: {lines:#?}");
        let body = &mock.requests()[0].body;
        assert!(holds(body, &shape), "{dialect:?}: {shape} in {body}");
        if dialect != Dialect::Anthropic {
            continue;
        }
        // The image is stored with the message: load replays it, and the model gets it again.
        let id = response(&lines, "new")["result"]["sessionId"].as_str().unwrap().to_string();
        mock.push(Reply::new().text("still a PNG"));
        let again = home
            .drive(
                &mock,
                json!({"capabilities": fs_caps(false, false), "steps": [
                    {"op": "initialize"},
                    {"op": "load", "sessionId": id, "cwd": home.ws()},
                    {"op": "prompt", "sessionId": id, "prompt": [{"type": "text", "text": "and again?"}]},
                ]}),
            )
            .await;
        let replayed = updates(&again, "user_message_chunk");
        assert!(
            replayed
                .iter()
                .any(|u| u["content"] == json!({"type": "image", "mimeType": "image/png", "data": PNG})),
            "{replayed:#?}"
        );
        assert!(holds(&mock.requests()[1].body, &shape), "the resumed conversation still has the image");
    }
}

#[tokio::test]
async fn a_model_without_images_is_not_offered_them_and_refuses_an_image_block() {
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    let home = Home::new();
    home.config("provider = \"openai-chat\"\nmodel = \"qwen3-coder\"\n");
    let lines = home
        .journey(
            &mock,
            fs_caps(false, false),
            json!([]),
            json!([{"op": "prompt", "prompt": [
                {"type": "text", "text": "look"},
                {"type": "image", "mimeType": "image/png", "data": PNG},
            ]}]),
        )
        .await;
    let init = &response(&lines, "initialize")["result"]["agentCapabilities"];
    assert_ne!(init["promptCapabilities"]["image"], true, "{init}");
    let refused = response(&lines, "prompt");
    assert_eq!(refused["type"], "error", "{refused}");
    assert!(refused["error"]["data"].as_str().unwrap().contains("qwen3-coder"), "{refused}");
    let options = &response(&lines, "new")["result"]["configOptions"];
    assert!(!options.as_array().unwrap().iter().any(|o| o["id"] == "effort"), "{options}");
    assert_eq!(mock.request_count(), 0);
}

fn terminal_caps() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": true})
}

#[tokio::test]
async fn a_command_runs_in_the_clients_terminal_without_secrets_and_its_changes_can_be_undone() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("t.txt", "old\n");
    mock.push(Reply::new().tool_call("c1", "read_file", json!({"file_path": "t.txt"})));
    mock.push(Reply::new().tool_call("c2", "shell", json!({"command": "env; echo new > t.txt"})));
    mock.push(Reply::new().text("ran it"));
    let lines = home
        .drive(
            &mock,
            json!({
                "capabilities": terminal_caps(),
                // The editor's environment: secrets the command must not see, and a plain variable.
                "terminalEnv": {
                    "ANTHROPIC_API_KEY": "sk-ant-in-the-editor",
                    "OPENAI_API_KEY": "sk-openai-in-the-editor",
                    "GITHUB_TOKEN": "ghp-in-the-editor",
                    "db_password": "lowercase-secret",
                    "PLAIN_SETTING": "visible-value",
                },
                "permissions": ["allow_once"],
                "steps": [
                    {"op": "initialize"}, {"op": "new", "cwd": home.ws()},
                    prompt("run env"),
                    {"op": "prompt", "prompt": [{"type": "text", "text": "/undo"}]},
                ],
            }),
        )
        .await;
    let answers = responses(&lines, "prompt");
    assert!(answers.iter().all(|a| a["result"]["stopReason"] == "end_turn"), "{lines:#?}");
    // Asked first, then run in a terminal: created, waited for, read, released.
    let asked = lines.iter().position(|l| l["type"] == "permission").expect("asked");
    let calls: Vec<&str> =
        of_type(&lines, "terminal").iter().map(|l| l["method"].as_str().unwrap()).collect();
    assert_eq!(calls, ["create", "wait_for_exit", "output", "release"], "{lines:#?}");
    let created = lines.iter().position(|l| l["type"] == "terminal").unwrap();
    assert!(asked < created, "the policy decided before the terminal was created");
    let create = &of_type(&lines, "terminal")[0];
    assert_eq!(create["params"]["cwd"], home.ws().display().to_string());
    assert_eq!(create["params"]["args"].as_array().unwrap().last().unwrap(), "env; echo new > t.txt");
    let id = create["terminalId"].as_str().unwrap();
    let shown = updates(&lines, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == "c2")
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .collect::<Vec<_>>();
    assert!(
        shown.iter().any(|c| c["type"] == "terminal" && c["terminalId"] == id),
        "the call shows the terminal: {shown:#?}"
    );
    // The model got the terminal's output, without the editor's secrets.
    let result = sent_results(&mock, 2);
    assert!(result.contains("PLAIN_SETTING=visible-value"), "{result}");
    for secret in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "db_password", "in-the-editor", KEY]
    {
        assert!(!result.contains(secret), "{secret} reached the command: {result}");
    }
    // The command's change was recorded around it, and /undo took it back on disk.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n", "{lines:#?}");
    assert_eq!(mock.request_count(), 3, "/undo did not reach the model");
}

#[tokio::test]
async fn a_command_in_the_clients_terminal_is_killed_at_its_timeout() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().tool_call(
        "c1",
        "shell",
        json!({"command": "echo started; sleep 30", "timeout_ms": 500}),
    ));
    mock.push(Reply::new().text("too slow"));
    let lines = home.journey(&mock, terminal_caps(), json!(["allow_once"]), json!([prompt("wait")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
    let calls: Vec<&str> =
        of_type(&lines, "terminal").iter().map(|l| l["method"].as_str().unwrap()).collect();
    assert_eq!(calls, ["create", "wait_for_exit", "kill", "output", "release"], "{lines:#?}");
    let result = sent_results(&mock, 1);
    assert!(result.contains("started") && result.contains("timed out after 500ms"), "{result}");
}

#[tokio::test]
async fn cancelling_the_turn_kills_the_command_in_the_clients_terminal() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "sleep 30; touch late.txt"})));
    mock.push(Reply::new().text("never asked"));
    let lines = home
        .drive(
            &mock,
            json!({"capabilities": terminal_caps(), "permissions": ["allow_once"], "cancelOnWait": true,
                "steps": [{"op": "initialize"}, {"op": "new", "cwd": home.ws()}, prompt("wait")]}),
        )
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "cancelled", "{lines:#?}");
    let calls: Vec<&str> =
        of_type(&lines, "terminal").iter().map(|l| l["method"].as_str().unwrap()).collect();
    assert_eq!(calls, ["create", "wait_for_exit", "kill", "output", "release"], "{lines:#?}");
    assert!(!home.ws().join("late.txt").exists());
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn undo_reverts_the_last_turn_through_the_clients_fs_and_redo_reapplies_it() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("u.txt", "on disk\n");
    let path = file.display().to_string();
    read_and_edit(&mock, "u.txt", "first", "FIRST");
    mock.push(Reply::new().text("edited"));
    let lines = home
        .drive(
            &mock,
            json!({
                "capabilities": fs_caps(true, true),
                "buffers": {path.clone(): "first\nsecond\n"},
                "permissions": ["allow_once"],
                "steps": [
                    {"op": "initialize"}, {"op": "new", "cwd": home.ws()},
                    prompt("capitalise first"),
                    {"op": "prompt", "prompt": [{"type": "text", "text": "/undo"}]},
                    {"op": "prompt", "prompt": [{"type": "text", "text": "/redo"}]},
                    // The user changes the line the turn changed: the undo would clobber it.
                    {"op": "edit_buffer", "path": path, "content": "MINE\nsecond\n"},
                    {"op": "prompt", "prompt": [{"type": "text", "text": "/undo"}]},
                ],
            }),
        )
        .await;
    let answers = responses(&lines, "prompt");
    assert_eq!(answers.len(), 4);
    assert!(answers.iter().all(|a| a["result"]["stopReason"] == "end_turn"), "{lines:#?}");
    let names: Vec<&str> = updates(&lines, "available_commands_update")[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"undo") && names.contains(&"redo"), "{names:?}");
    // The turn's write, the undo's, the redo's; none for the refused undo.
    let writes: Vec<&str> = of_type(&lines, "write").iter().map(|w| w["content"].as_str().unwrap()).collect();
    assert_eq!(writes, ["FIRST\nsecond\n", "first\nsecond\n", "FIRST\nsecond\n"], "{lines:#?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "on disk\n", "the client wrote, not the disk");
    // Each is shown as a tool call with its diff.
    let calls: Vec<&Value> = updates(&lines, "tool_call")
        .into_iter()
        .filter(|c| c["kind"] == "edit" && c["toolCallId"] != "c2")
        .collect();
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!(calls[0]["status"], "completed");
    assert_eq!(calls[0]["content"][0]["type"], "diff");
    assert_eq!(calls[0]["content"][0]["path"], path);
    assert_eq!(calls[0]["content"][0]["oldText"], "FIRST\nsecond\n");
    assert_eq!(calls[0]["content"][0]["newText"], "first\nsecond\n");
    assert_eq!(calls[1]["content"][0]["newText"], "FIRST\nsecond\n");
    assert_eq!(calls[2]["status"], "failed", "the conflict is reported");
    let text = message_text(&lines);
    assert!(text.contains("Cannot undo") && text.contains("changed since"), "{text}");
    assert_eq!(mock.request_count(), 3, "no command reached the model");
}

#[tokio::test]
async fn mcp_prompts_are_commands_and_a_typed_one_is_the_users_turn() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let everything = support::installed::everything();
    mock.push(Reply::new().text("sunny"));
    mock.push(Reply::new().text("hot"));
    let lines = home
        .drive(
            &mock,
            json!({"capabilities": fs_caps(false, false), "steps": [
                {"op": "initialize"},
                {"op": "new", "cwd": home.ws(), "mcpServers": [
                    {"name": "everything", "command": everything, "args": ["stdio"], "env": []},
                ]},
                {"op": "prompt", "prompt": [{"type": "text", "text": "/args-prompt"}]},
                {"op": "prompt", "prompt": [{"type": "text", "text": "/args-prompt Paris France"}]},
                {"op": "prompt", "prompt": [{"type": "text", "text": "/args-prompt state=Texas Austin"}]},
            ]}),
        )
        .await;
    let answers = responses(&lines, "prompt");
    assert!(answers.iter().all(|a| a["result"]["stopReason"] == "end_turn"), "{lines:#?}");
    let announced = updates(&lines, "available_commands_update");
    let last = announced.last().unwrap()["availableCommands"].as_array().unwrap();
    let args = last.iter().find(|c| c["name"] == "args-prompt").expect("the prompt is a command");
    assert_eq!(args["input"]["hint"], "city [state]");
    assert!(last.iter().any(|c| c["name"] == "simple-prompt"), "{last:#?}");
    assert!(message_text(&lines).contains("needs `city`"), "{}", message_text(&lines));
    assert_eq!(mock.request_count(), 2, "a prompt missing its argument was not sent");
    let first = mock.requests()[0].body.to_string();
    assert!(first.contains("What's weather in Paris, France?"), "{first}");
    let second = mock.requests()[1].body.to_string();
    assert!(second.contains("What's weather in Austin, Texas?"), "{second}");
}

#[tokio::test]
async fn rewind_reverts_the_last_turn_and_takes_it_out_of_the_conversation() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let home = Home::new();
    let file = home.write("r.txt", "first\nsecond\n");
    mock.push(Reply::new().text("noted"));
    read_and_edit(&mock, "r.txt", "first", "FIRST");
    mock.push(Reply::new().text("edited"));
    mock.push(Reply::new().text("fresh start"));
    let lines = home
        .drive(
            &mock,
            json!({
                "capabilities": fs_caps(false, false),
                "permissions": ["allow_once"],
                "steps": [
                    {"op": "initialize"}, {"op": "new", "cwd": home.ws()},
                    prompt("the kept question"),
                    prompt("capitalise first"),
                    prompt("/rewind"),
                    prompt("what now"),
                ],
            }),
        )
        .await;
    let answers = responses(&lines, "prompt");
    assert!(answers.iter().all(|a| a["result"]["stopReason"] == "end_turn"), "{lines:#?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "first\nsecond\n", "the turn's edit is reverted");
    let text = message_text(&lines);
    assert!(text.contains("Undo turn 2: 1 file changed."), "{text}");
    assert!(text.contains("The conversation is back to before turn 2 ("), "{text}");
    // The model's next request holds the turn before, not the rewound one nor its tool calls.
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "the first turn, the edit's three requests, the last turn");
    let messages = requests[4].body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{messages:#?}");
    let said = serde_json::to_string(messages).unwrap();
    assert!(
        said.contains("the kept question") && said.contains("noted") && said.contains("what now"),
        "{said}"
    );
    assert!(!said.contains("capitalise first") && !said.contains("tool_use"), "{said}");
}

#[tokio::test]
async fn a_subagents_permission_question_is_asked_on_its_own_session_for_a_client_that_shows_it() {
    let task = "CHILD-P: make the folder";
    let script = |mock: &MockProvider| {
        mock.push(Reply::new().tool_call("s1", "spawn_agent", json!({"task": task})));
        mock.push(Reply::new().tool_call("w1", "wait", json!({"agent_id": "agent-1"})));
        mock.push(Reply::new().text("the subagent made it"));
        mock.push_for(task, Reply::new().tool_call("m1", "shell", json!({"command": "mkdir -p child-made"})));
        mock.push_for(task, Reply::new().text("made"));
    };
    for shows in [true, false] {
        let mock = MockProvider::start(Dialect::Anthropic).await;
        let home = Home::new();
        script(&mock);
        let mut caps = fs_caps(false, false);
        if shows {
            // With the client's terminal too: the command's terminal is shown in the child's thread.
            caps["subagents"] = json!({});
            caps["terminal"] = json!(true);
        }
        let lines = home
            .drive(
                &mock,
                json!({"sdk": "unstable", "capabilities": caps, "permissions": ["allow_once"], "steps": [
                    {"op": "initialize"}, {"op": "new", "cwd": home.ws()}, prompt("delegate it"),
                ]}),
            )
            .await;
        assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
        assert!(home.ws().join("child-made").is_dir(), "the allowed command ran");
        let parent = response(&lines, "new")["result"]["sessionId"].as_str().unwrap().to_string();
        let asked = of_type(&lines, "permission");
        assert_eq!(asked.len(), 1, "{lines:#?}");
        assert_eq!(asked[0]["toolCall"]["toolCallId"], "m1");
        let on = asked[0]["sessionId"].as_str().unwrap();
        if shows {
            let child = updates(&lines, "subagent_update")[0]["sessionId"].as_str().unwrap();
            assert_eq!(on, child, "asked in the child's thread");
            // After the child's call was shown there.
            let shown =
                lines.iter().position(|l| l["sessionId"] == child && l["update"]["toolCallId"] == "m1");
            let question = lines.iter().position(|l| l["type"] == "permission");
            assert!(shown.is_some() && shown < question, "{lines:#?}");
            let in_terminal: Vec<&Value> = lines
                .iter()
                .filter(|l| l["update"]["toolCallId"] == "m1")
                .filter(|l| {
                    l["update"]["content"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "terminal"))
                })
                .collect();
            assert!(!in_terminal.is_empty(), "the command ran in the client's terminal: {lines:#?}");
            assert!(in_terminal.iter().all(|l| l["sessionId"] == child), "{in_terminal:#?}");
            let last = lines.iter().rev().find(|l| l["update"]["toolCallId"] == "m1").unwrap();
            assert_eq!(last["update"]["status"], "completed", "{last:#?}");
            assert!(in_terminal.contains(&last), "the terminal stays in the ended call: {last:#?}");
        } else {
            assert_eq!(on, parent, "a client without subagents is asked on the parent session");
        }
    }
}
