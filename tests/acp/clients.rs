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

    /// A `session/new` step in the workspace with the MCP servers `servers`.
    fn new_with_mcp(&self, servers: Value) -> Value {
        json!({"op": "new", "cwd": self.ws(), "mcpServers": servers})
    }

    /// A `session/load` step of the session `id` in the workspace.
    fn load(&self, id: &str) -> Value {
        json!({"op": "load", "sessionId": id, "cwd": self.ws()})
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

    /// `initialize` as `client`, `session/new` in the workspace, then `steps`.
    async fn journey(&self, mock: &MockProvider, client: Client, steps: Value) -> Vec<Value> {
        let mut all = vec![json!({"op": "new", "cwd": self.ws()})];
        all.extend(steps.as_array().cloned().unwrap_or_default());
        self.reopen(mock, client, Value::Array(all)).await
    }

    /// `initialize` as `client`, then `steps` (which load, resume or list sessions of earlier runs).
    async fn reopen(&self, mock: &MockProvider, client: Client, steps: Value) -> Vec<Value> {
        let mut scenario = client.0;
        let mut all = vec![json!({"op": "initialize"})];
        all.extend(steps.as_array().cloned().unwrap_or_default());
        scenario["steps"] = Value::Array(all);
        self.drive(mock, scenario).await
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

/// The string `key` of each item of the array `list`.
fn each<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array().expect("an array").iter().map(|item| item[key].as_str().expect("a string")).collect()
}

fn message_text(lines: &[Value]) -> String {
    updates(lines, "agent_message_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

/// A test's folder and the mock Anthropic provider with the model's `turns` queued in order.
async fn scripted(turns: &[Reply]) -> (MockProvider, Home) {
    scripted_as(Dialect::Anthropic, turns).await
}

/// [`scripted`] with a mock provider of `dialect`.
async fn scripted_as(dialect: Dialect, turns: &[Reply]) -> (MockProvider, Home) {
    let mock = MockProvider::start(dialect).await;
    for turn in turns {
        mock.push(turn.clone());
    }
    (mock, Home::new())
}

/// A model turn that calls `tool` with `arguments` (call `id`).
fn call(id: &str, tool: &str, arguments: Value) -> Reply {
    Reply::new().tool_call(id, tool, arguments)
}

/// A model turn that reads `rel`.
fn read(id: &str, rel: &str) -> Reply {
    call(id, "read_file", json!({"file_path": rel}))
}

/// A model turn that replaces `old` with `new` in `rel`.
fn edit(id: &str, rel: &str, old: &str, new: &str) -> Reply {
    call(id, "edit_file", json!({"file_path": rel, "old_string": old, "new_string": new}))
}

/// A model turn that runs `command`.
fn shell(id: &str, command: &str) -> Reply {
    call(id, "shell", json!({"command": command}))
}

/// A model turn that answers `text`.
fn answer(text: &str) -> Reply {
    Reply::new().text(text)
}

/// The scripted client of a run of the driver: what it advertises (`capabilities`) and the rest
/// of the scenario but its steps (how it answers permission questions, its unsaved buffers, ...).
struct Client(Value);

impl Client {
    fn new(capabilities: Value) -> Self {
        Self(json!({"capabilities": capabilities}))
    }

    /// A client without fs methods or a terminal.
    fn plain() -> Self {
        Self::new(fs_caps(false, false))
    }

    /// With the scenario's `key` set to `value`.
    fn with(mut self, key: &str, value: Value) -> Self {
        self.0[key] = value;
        self
    }

    /// Advertising `value` as its capability `key` besides.
    fn capability(mut self, key: &str, value: Value) -> Self {
        self.0["capabilities"][key] = value;
        self
    }

    /// Answering the permission questions with `answers`, in order.
    fn answers(self, answers: Value) -> Self {
        self.with("permissions", answers)
    }

    /// Holding `text` unsaved for `path` (what `fs/read_text_file` answers).
    fn buffer(self, path: &Path, text: &str) -> Self {
        self.with("buffers", json!({path.display().to_string(): text}))
    }
}

/// A `session/prompt` step with one text block.
fn prompt(text: &str) -> Value {
    json!({"op": "prompt", "prompt": [{"type": "text", "text": text}]})
}

/// A `session/prompt` step with one text block to the session `id`.
fn prompt_to(id: &str, text: &str) -> Value {
    json!({"op": "prompt", "sessionId": id, "prompt": [{"type": "text", "text": text}]})
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
    let (mock, home) = scripted(&[]).await;
    let lines = home.journey(&mock, Client::plain(), json!([])).await;
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
    assert_eq!(each(&new["modes"]["availableModes"], "id"), ["ask", "accept-edits", "read-only"]);
    let options = each(&new["configOptions"], "id");
    assert_eq!(options, ["mode", "model", "effort"], "claude-sonnet-4-5 takes a reasoning effort");
    let commands = updates(&lines, "available_commands_update");
    assert_eq!(
        each(&commands[0]["availableCommands"], "name"),
        ["compact", "model", "undo", "rewind", "redo"]
    );
    assert_eq!(mock.request_count(), 0, "nothing was asked of the model");
}

#[tokio::test]
async fn a_prompt_edits_an_unsaved_buffer_through_fs_methods_after_permission() {
    let (mock, home) = scripted(&[
        Reply::new().thinking("Reading it first.", "sig").tool_call(
            "c1",
            "read_file",
            json!({"file_path": "notes.txt"}),
        ),
        edit("c2", "notes.txt", "unsaved line", "edited line"),
        answer("Edited the buffer."),
    ])
    .await;
    let file = home.write("notes.txt", "on disk\n");
    let client =
        Client::new(fs_caps(true, true)).buffer(&file, "unsaved line\n").answers(json!(["allow_once"]));
    let link =
        json!({"type": "resource_link", "name": "notes.txt", "uri": format!("file://{}", file.display())});
    let steps = json!([{"op": "prompt", "prompt": [{"type": "text", "text": "Fix "}, link]}]);
    let lines = home.journey(&mock, client, steps).await;
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
    let (mock, home) =
        scripted(&[read("c1", "a.txt"), edit("c2", "a.txt", "one", "two"), answer("Understood, I left it.")])
            .await;
    let file = home.write("a.txt", "one\n");
    let client = Client::plain().answers(json!(["reject_once"]));
    let lines = home.journey(&mock, client, json!([prompt("change one to two")])).await;
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
    let (mock, home) = scripted(&[
        shell("c1", "mkdir -p made-1"),
        shell("c2", "mkdir -p made-2"),
        answer("I could not run it."),
    ])
    .await;
    let lines = home
        .journey(&mock, Client::plain().answers(json!(["reject_always"])), json!([prompt("make files")]))
        .await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    assert!(!home.ws().join("made-1").exists() && !home.ws().join("made-2").exists());
    let asked = of_type(&lines, "permission");
    assert_eq!(asked.len(), 1, "the second command was refused without asking: {lines:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "c1");
    assert_eq!(asked[0]["toolCall"]["kind"], "execute");
    let kinds = each(&asked[0]["options"], "kind");
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert!(sent_results(&mock, 1).contains("denied"), "{}", sent_results(&mock, 1));
    assert!(sent_results(&mock, 2).contains("for the rest of this session"), "{}", sent_results(&mock, 2));
}

#[tokio::test]
async fn an_allowed_command_streams_its_output_and_later_reads_see_the_disk_not_a_stale_buffer() {
    let (mock, home) = scripted(&[
        shell("c1", "echo marker-out; echo new > f.txt"),
        read("c2", "f.txt"),
        read("c3", "f.txt"),
        answer("done"),
    ])
    .await;
    let file = home.write("f.txt", "old\n");
    let client = Client::new(fs_caps(true, true)).buffer(&file, "old\n").answers(json!(["allow_once"]));
    let lines = home.journey(&mock, client, json!([prompt("run it")])).await;
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
    let (mock, home) = scripted(&[shell("c1", "touch never"), answer("after cancel")]).await;
    let lines = home.journey(&mock, Client::plain().answers(json!(["cancel"])), json!([prompt("run")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "cancelled", "{lines:#?}");
    assert!(!home.ws().join("never").exists());
    assert_eq!(mock.request_count(), 1, "the model was not asked again after the cancel");
}

#[tokio::test]
async fn without_fs_capabilities_the_disk_is_read_and_written_and_no_fs_method_is_called() {
    let (mock, home) =
        scripted(&[read("c1", "d.txt"), edit("c2", "d.txt", "alpha", "beta"), answer("ok")]).await;
    let file = home.write("d.txt", "alpha\n");
    let lines =
        home.journey(&mock, Client::plain().answers(json!(["allow_once"])), json!([prompt("edit")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn");
    assert!(of_type(&lines, "read").is_empty() && of_type(&lines, "write").is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "beta\n", "the shared disk writer wrote it");
}

#[tokio::test]
async fn modes_switch_edits_between_asking_accepting_and_read_only() {
    let (mock, home) = scripted(&[
        // read-only: the edit is refused without a question.
        read("c1", "m.txt"),
        edit("c2", "m.txt", "a", "b"),
        answer("planned"),
        // accept edits: written without a question.
        edit("c3", "m.txt", "a", "c"),
        answer("edited"),
    ])
    .await;
    let file = home.write("m.txt", "a\n");
    let lines = home
        .journey(
            &mock,
            Client::plain(),
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
    let (mock, home) = scripted(&[]).await;
    let lines = home
        .journey(&mock, Client::plain(), json!([prompt("/model other-model-1"), prompt("/compact")]))
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
    let (mock, home) = scripted(&[read("c1", "r.txt"), answer("It says hello.")]).await;
    home.write("r.txt", "hello\n");
    let first = home.journey(&mock, Client::plain(), json!([prompt("what does r.txt say?")])).await;
    let id = response(&first, "new")["result"]["sessionId"].as_str().unwrap().to_string();
    mock.push(answer("Still hello."));
    let steps = json!([{"op": "list"}, home.load(&id), prompt_to(&id, "and now?")]);
    let second = home.reopen(&mock, Client::plain(), steps).await;
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
    mock.push(answer("Resumed."));
    let resume = json!({"op": "resume", "sessionId": id, "cwd": home.ws()});
    let close = json!({"op": "close", "sessionId": id});
    let third = home.reopen(&mock, Client::plain(), json!([resume, prompt_to(&id, "third"), close])).await;
    let resume_at = third.iter().position(|l| l["op"] == "resume").unwrap();
    assert!(!third[..resume_at].iter().any(|l| l["type"] == "update"), "resume replays nothing");
    assert_eq!(response(&third, "close")["type"], "response");
    let last = mock.requests().last().unwrap().body.to_string();
    assert!(last.contains("and now?") && last.contains("third"));
}

#[tokio::test]
async fn mcp_servers_from_session_new_over_stdio_and_http_are_offered_and_their_calls_asked_about() {
    let (mock, home) = scripted(&[
        call("c1", "mcp__everything__echo", json!({"message": "via-acp"})),
        call("c2", "mcp__web__get-sum", json!({"a": 2, "b": 40})),
        answer("echoed and added"),
    ])
    .await;
    // The same server over Streamable HTTP.
    let (mut web, url) = support::installed::everything_http().await;
    let new = home.new_with_mcp(json!([
        everything_over_stdio(),
        {"type": "http", "name": "web", "url": url, "headers": []},
    ]));
    let client = Client::plain().answers(json!(["allow_once", "allow_once"]));
    let lines = home.reopen(&mock, client, json!([new, prompt("echo, then add")])).await;
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

/// `@modelcontextprotocol/server-everything` over stdio, as `session/new` names an MCP server.
fn everything_over_stdio() -> Value {
    json!({"name": "everything", "command": support::installed::everything(), "args": ["stdio"], "env": []})
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
    let (mock, home) =
        scripted(&[read("c1", "x.txt"), edit("c2", "x.txt", "before", "after"), answer("Changed it.")]).await;
    let file = home.write("x.txt", "before\n");
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
    let (mock, home) = scripted(&[shell("c1", "touch acpx-made"), answer("Not run.")]).await;
    let (lines, _) = acpx(&home, &mock, &["--deny-all"], "make a file").await;
    assert!(methods(&lines).contains(&"session/request_permission"), "{lines:#?}");
    assert!(!home.ws().join("acpx-made").exists());
    let body = mock.requests()[1].body.to_string();
    assert!(body.contains("denied"), "the model was told: {body}");
}

#[tokio::test]
async fn acpx_runs_an_allowed_command_in_its_terminal_without_the_provider_key() {
    let (mock, home) = scripted(&[shell("c1", "env; echo acpx-ran > ran.txt"), answer("Ran it.")]).await;
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

/// Prompts the language server's session `id` with `text`; returns at the turn's end.
async fn lsp_turn(client: &lsp_client::LspClient, id: &str, text: &str) {
    client.command("agentls.prompt", json!({"sessionId": id, "text": text})).await.expect("prompt");
    client.next_turn_end(id).await;
}

#[tokio::test]
async fn a_session_created_over_acp_is_resumed_by_the_language_server_and_the_other_way_round() {
    // ACP → LSP.
    let (mock, home) = scripted(&[answer("noted: kumquat")]).await;
    let lines = home.journey(&mock, Client::plain(), json!([prompt("remember kumquat")])).await;
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
    mock.push(answer("kumquat"));
    lsp_turn(&client, &acp_id, "which word?").await;
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("remember kumquat") && body.contains("which word?"), "{body}");
    // LSP → ACP.
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let lsp_id = created["sessionId"].as_str().unwrap().to_string();
    mock.push(answer("from the editor"));
    lsp_turn(&client, &lsp_id, "hello from lsp").await;
    client.shutdown().await;
    mock.push(answer("over acp now"));
    let steps =
        json!([{"op": "list", "cwd": home.ws()}, home.load(&lsp_id), prompt_to(&lsp_id, "and over acp")]);
    let lines = home.reopen(&mock, Client::plain(), steps).await;
    let listed = &response(&lines, "list")["result"]["sessions"];
    let ids = each(listed, "sessionId");
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
    let (mock, home) = scripted(&[
        read("c1", "h.txt"),
        call("c2", "write_file", json!({"file_path": "h.txt", "content": "A\nb\nc\nd\nE\n"})),
        answer("kept e"),
    ])
    .await;
    let file = home.write("h.txt", "a\nb\nc\nd\ne\n");
    let review = json!({"kind": "allow_once", "meta": {"dev.agentls/review": {
        "files": [{"path": file.display().to_string(), "hunks": [0]}],
        "feedback": "keep e lowercase",
    }}});
    let client = Client::plain()
        .capability("_meta", json!({"dev.agentls/review": {"hunks": true}}))
        .answers(json!([review]));
    let lines = home.journey(&mock, client, json!([prompt("capitalise a and e")])).await;
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
    let (mock, home) = scripted(&[shell("c1", "touch untrusted-ran"), answer("asked first")]).await;
    home.write(".agentls.toml", "[shell]\npermission = \"allow\"\n");
    let client =
        Client::plain().capability("session", json!({"notices": {}})).answers(json!(["reject_once"]));
    let lines = home.journey(&mock, client, json!([prompt("run it")])).await;
    let notices = updates(&lines, "notice");
    assert!(notices.iter().any(|n| n["title"].as_str().unwrap().contains("shell.permission")), "{lines:#?}");
    assert_eq!(
        of_type(&lines, "permission").len(),
        1,
        "the untrusted `allow` did not apply: the command was asked"
    );
    assert!(!home.ws().join("untrusted-ran").exists());
    // A client without notices gets the same report in the agent's message.
    mock.push(answer("hello"));
    let lines = home.journey(&mock, Client::plain(), json!([prompt("hi")])).await;
    assert!(updates(&lines, "notice").is_empty());
    assert!(message_text(&lines).contains("shell.permission"), "{}", message_text(&lines));
}

#[tokio::test]
async fn stop_reasons_say_output_limit_refusal_and_round_limit() {
    let (mock, home) = scripted(&[
        answer("The answer was cut here").finish_reason("max_tokens"),
        answer("I can't help with that.").finish_reason("refusal"),
        read("c1", "s.txt"),
        answer("fine"),
    ])
    .await;
    home.config("max_tool_rounds_per_input = 1\n");
    home.write("s.txt", "x\n");
    let steps =
        json!([prompt("write a lot"), prompt("something refused"), prompt("read s"), prompt("and now")]);
    let lines = home.journey(&mock, Client::plain(), steps).await;
    let stops: Vec<&Value> = responses(&lines, "prompt").iter().map(|r| &r["result"]["stopReason"]).collect();
    assert_eq!(stops, ["max_tokens", "refusal", "max_turn_requests", "end_turn"], "{lines:#?}");
    assert_eq!(mock.request_count(), 4, "the round limit stopped the loop after one tool round");
    let after = mock.requests()[2].body.to_string();
    assert!(after.contains("write a lot") && after.contains("read s"), "{after}");
    assert!(!after.contains("something refused"), "a refused prompt is not part of the next one: {after}");
}

#[tokio::test]
async fn reasoning_effort_is_a_config_option_the_next_request_carries_and_set_mode_still_works() {
    let (mock, home) = scripted(&[answer("default effort"), answer("thought hard")]).await;
    let lines = home
        .journey(
            &mock,
            Client::plain(),
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
    let values = each(&effort["options"], "value");
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
async fn overflowing() -> (MockProvider, Home) {
    let reads: Vec<Reply> = (0..4).map(|i| read(&format!("c{i}"), "o.txt")).collect();
    let (mock, home) = scripted(&reads).await;
    home.write("o.txt", "contents\n");
    mock.push_wire("anthropic/error_400_prompt_too_long.http");
    mock.push(answer(SUMMARY));
    mock.push(answer("done after compacting"));
    (mock, home)
}

#[tokio::test]
async fn compaction_is_told_as_compaction_update_or_as_a_thought() {
    // A client that shows compactions gets compaction_update with the summary and the counts.
    let (mock, home) = overflowing().await;
    let compacting = || Client::plain().capability("session", json!({"compaction": {}}));
    let lines = home.journey(&mock, compacting(), json!([prompt("read it four times")])).await;
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
    let loaded = home.reopen(&mock, compacting(), json!([home.load(&id)])).await;
    let replayed = updates(&loaded, "compaction_update");
    assert_eq!(replayed.len(), 1, "{loaded:#?}");
    assert_eq!(
        (&replayed[0]["status"], &replayed[0]["summary"][0]["text"]),
        (&json!("completed"), &json!(SUMMARY))
    );
    // A client that does not: one line of the agent's thoughts, never the answer.
    let (mock, home) = overflowing().await;
    let lines = home.journey(&mock, Client::plain(), json!([prompt("read it four times")])).await;
    assert!(updates(&lines, "compaction_update").is_empty());
    let thoughts: String =
        updates(&lines, "agent_thought_chunk").iter().filter_map(|u| u["content"]["text"].as_str()).collect();
    assert!(thoughts.contains("Compacted the conversation:") && thoughts.contains("tokens"), "{thoughts}");
    assert_eq!(message_text(&lines), "done after compacting");
}

/// A test's folder and the mock: the model spawns a subagent on `task` (call `s1`), waits for it
/// (`w1`) and answers `then`; the subagent's turns are `child`.
async fn delegating(task: &str, child: &[Reply], then: &str) -> (MockProvider, Home) {
    let (mock, home) = scripted(&[
        call("s1", "spawn_agent", json!({"task": task})),
        call("w1", "wait", json!({"agent_id": "agent-1"})),
        answer(then),
    ])
    .await;
    for turn in child {
        mock.push_for(task, turn.clone());
    }
    (mock, home)
}

#[tokio::test]
async fn subagents_are_subagent_updates_for_a_client_that_understands_them() {
    let task = "CHILD-K: read k.txt";
    let reading = || async {
        let (mock, home) =
            delegating(task, &[read("k1", "k.txt"), answer("k says kumquat")], "the subagent read it").await;
        home.write("k.txt", "kumquat\n");
        (mock, home)
    };
    let (mock, home) = reading().await;
    let client = Client::plain().capability("subagents", json!({})).with("sdk", json!("unstable"));
    let lines = home.journey(&mock, client, json!([prompt("delegate it")])).await;
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
    let (mock, home) = reading().await;
    let lines = home.journey(&mock, Client::plain(), json!([prompt("delegate it")])).await;
    let parent = response(&lines, "new")["result"]["sessionId"].clone();
    assert!(updates(&lines, "subagent_update").is_empty());
    assert!(lines.iter().filter(|l| l["type"] == "update").all(|l| l["sessionId"] == parent), "{lines:#?}");
    let calls: Vec<&Value> = updates(&lines, "tool_call").iter().map(|u| &u["toolCallId"]).collect();
    assert_eq!(calls, ["s1", "w1"]);
}

/// A PNG's first eight bytes, base64.
const PNG: &str = "iVBORw0KGgo=";

/// A `session/prompt` step with `text` and the PNG.
fn prompt_with_image(text: &str) -> Value {
    json!({"op": "prompt", "prompt": [
        {"type": "text", "text": text},
        {"type": "image", "mimeType": "image/png", "data": PNG},
    ]})
}

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
        let (mock, home) = scripted_as(dialect, &[answer("a PNG header")]).await;
        let model = model.map(|m| format!("model = \"{m}\"\n")).unwrap_or_default();
        home.config(&format!("provider = \"{}\"\n{model}", dialect.provider()));
        let lines = home.journey(&mock, Client::plain(), json!([prompt_with_image("what is this?")])).await;
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
        mock.push(answer("still a PNG"));
        let again =
            home.reopen(&mock, Client::plain(), json!([home.load(&id), prompt_to(&id, "and again?")])).await;
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
    let (mock, home) = scripted_as(Dialect::OpenAiChat, &[]).await;
    home.config("provider = \"openai-chat\"\nmodel = \"qwen3-coder\"\n");
    let lines = home.journey(&mock, Client::plain(), json!([prompt_with_image("look")])).await;
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
    let (mock, home) =
        scripted(&[read("c1", "t.txt"), shell("c2", "env; echo new > t.txt"), answer("ran it")]).await;
    let file = home.write("t.txt", "old\n");
    // The editor's environment: secrets the command must not see, and a plain variable.
    let editor_env = json!({
        "ANTHROPIC_API_KEY": "sk-ant-in-the-editor",
        "OPENAI_API_KEY": "sk-openai-in-the-editor",
        "GITHUB_TOKEN": "ghp-in-the-editor",
        "db_password": "lowercase-secret",
        "PLAIN_SETTING": "visible-value",
    });
    let client = Client::new(terminal_caps()).with("terminalEnv", editor_env).answers(json!(["allow_once"]));
    let lines = home.journey(&mock, client, json!([prompt("run env"), prompt("/undo")])).await;
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
    let (mock, home) = scripted(&[
        call("c1", "shell", json!({"command": "echo started; sleep 30", "timeout_ms": 500})),
        answer("too slow"),
    ])
    .await;
    let client = Client::new(terminal_caps()).answers(json!(["allow_once"]));
    let lines = home.journey(&mock, client, json!([prompt("wait")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "end_turn", "{lines:#?}");
    let calls: Vec<&str> =
        of_type(&lines, "terminal").iter().map(|l| l["method"].as_str().unwrap()).collect();
    assert_eq!(calls, ["create", "wait_for_exit", "kill", "output", "release"], "{lines:#?}");
    let result = sent_results(&mock, 1);
    assert!(result.contains("started") && result.contains("timed out after 500ms"), "{result}");
}

#[tokio::test]
async fn cancelling_the_turn_kills_the_command_in_the_clients_terminal() {
    let (mock, home) = scripted(&[shell("c1", "sleep 30; touch late.txt"), answer("never asked")]).await;
    let client =
        Client::new(terminal_caps()).answers(json!(["allow_once"])).with("cancelOnWait", json!(true));
    let lines = home.journey(&mock, client, json!([prompt("wait")])).await;
    assert_eq!(response(&lines, "prompt")["result"]["stopReason"], "cancelled", "{lines:#?}");
    let calls: Vec<&str> =
        of_type(&lines, "terminal").iter().map(|l| l["method"].as_str().unwrap()).collect();
    assert_eq!(calls, ["create", "wait_for_exit", "kill", "output", "release"], "{lines:#?}");
    assert!(!home.ws().join("late.txt").exists());
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn undo_reverts_the_last_turn_through_the_clients_fs_and_redo_reapplies_it() {
    let (mock, home) =
        scripted(&[read("c1", "u.txt"), edit("c2", "u.txt", "first", "FIRST"), answer("edited")]).await;
    let file = home.write("u.txt", "on disk\n");
    let path = file.display().to_string();
    let client =
        Client::new(fs_caps(true, true)).buffer(&file, "first\nsecond\n").answers(json!(["allow_once"]));
    let steps = json!([
        prompt("capitalise first"),
        prompt("/undo"),
        prompt("/redo"),
        // The user changes the line the turn changed: the undo would clobber it.
        {"op": "edit_buffer", "path": path, "content": "MINE\nsecond\n"},
        prompt("/undo"),
    ]);
    let lines = home.journey(&mock, client, steps).await;
    let answers = responses(&lines, "prompt");
    assert_eq!(answers.len(), 4);
    assert!(answers.iter().all(|a| a["result"]["stopReason"] == "end_turn"), "{lines:#?}");
    let names = each(&updates(&lines, "available_commands_update")[0]["availableCommands"], "name");
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
    let (mock, home) = scripted(&[answer("sunny"), answer("hot")]).await;
    let steps = json!([
        home.new_with_mcp(json!([everything_over_stdio()])),
        prompt("/args-prompt"),
        prompt("/args-prompt Paris France"),
        prompt("/args-prompt state=Texas Austin"),
    ]);
    let lines = home.reopen(&mock, Client::plain(), steps).await;
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
    let (mock, home) = scripted(&[
        answer("noted"),
        read("c1", "r.txt"),
        edit("c2", "r.txt", "first", "FIRST"),
        answer("edited"),
        answer("fresh start"),
    ])
    .await;
    let file = home.write("r.txt", "first\nsecond\n");
    let client = Client::plain().answers(json!(["allow_once"]));
    let steps = json!([
        prompt("the kept question"),
        prompt("capitalise first"),
        prompt("/rewind"),
        prompt("what now")
    ]);
    let lines = home.journey(&mock, client, steps).await;
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
    for shows in [true, false] {
        let child = [shell("m1", "mkdir -p child-made"), answer("made")];
        let (mock, home) = delegating(task, &child, "the subagent made it").await;
        let mut client = Client::plain().with("sdk", json!("unstable")).answers(json!(["allow_once"]));
        if shows {
            // With the client's terminal too: the command's terminal is shown in the child's thread.
            client = client.capability("subagents", json!({})).capability("terminal", json!(true));
        }
        let lines = home.journey(&mock, client, json!([prompt("delegate it")])).await;
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
