//! Agent sessions through the language server, against the loopback mock provider: prompts,
//! streaming, unsaved buffers, permissions, cancel, several sessions, plain clients, resume.

use crate::support::lsp_client;
use crate::support::mock_provider;

use std::path::{Path, PathBuf};

use lsp_client::{LspClient, file_uri, plain_capabilities, plugin_capabilities};
use mock_provider::{Dialect, MockProvider, Turn};
use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    mock: MockProvider,
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        let data = dir.path().join("data");
        let mock = MockProvider::start(Dialect::Anthropic).await;
        Self { _dir: dir, root, data, mock }
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env = self.mock.env();
        env.push(("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()));
        env.push(("AGENTLS_DATA_DIR".into(), self.data.display().to_string()));
        env.push(("AGENTLS_CONFIG".into(), self.root.join("no-user-config.toml").display().to_string()));
        env
    }

    fn options(&self) -> agentls::lsp::ServerOptions {
        let env = agentls::config::Env::from_pairs(self.env());
        let mut options = agentls::lsp::ServerOptions::from_env(env);
        options.deadlines.request = std::time::Duration::from_secs(30);
        options
    }

    async fn client(&self, capabilities: Value) -> LspClient {
        let client = LspClient::in_process(self.options());
        client.initialize(&self.root, capabilities, json!({"model": "claude-test"})).await;
        client
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::write(&path, text).expect("write");
        path
    }
}

/// The text of every message of the `index`-th model request.
fn request_text(mock: &MockProvider, index: usize) -> String {
    mock.requests().get(index).map(|r| r.body.to_string()).unwrap_or_default()
}

async fn new_session(client: &LspClient) -> String {
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    assert_eq!(created["profile"], "anthropic");
    assert_eq!(created["model"], "claude-test");
    created["sessionId"].as_str().expect("id").to_string()
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}

#[tokio::test]
async fn prompt_streams_and_reads_the_unsaved_buffer() {
    let fx = Fixture::new().await;
    let main = fx.write("src/main.rs", "fn main() {}\n");
    let client = fx.client(plugin_capabilities()).await;
    client.open(&main, "fn main() {}\n", 1);
    client.change(&main, 2, [0, 12, 0, 12], " // unsaved edit");
    fx.mock.push(Turn::new().text("Reading.").tool_call(
        "c1",
        "read_file",
        json!({"file_path": path_text(&main)}),
    ));
    fx.mock.push(Turn::new().text("It has an unsaved comment."));

    let id = new_session(&client).await;
    let queued = client.command("agentls.prompt", json!({"sessionId": id, "text": "what is in main?"})).await;
    assert_eq!(queued.expect("prompt"), json!({"sessionId": id}));

    let start = client.next_event(&id, "tool_call_start").await;
    assert_eq!(start["data"]["tool_name"], "read_file");
    let end = client.next_event(&id, "tool_call_end").await;
    assert!(end["data"]["output"].as_str().unwrap().contains("// unsaved edit"), "{end}");
    let done = client.next_event(&id, "processing_end").await;
    assert_eq!(done["data"]["text"], "It has an unsaved comment.");
    assert!(request_text(&fx.mock, 1).contains("// unsaved edit"), "the model saw the buffer text");

    // Progress: a turn and a tool call, both begun and ended.
    let progress = client.notifications("$/progress");
    let begins: Vec<&Value> = progress.iter().filter(|p| p["value"]["kind"] == "begin").collect();
    assert!(begins.iter().any(|p| p["value"]["title"] == "agentls"), "{progress:?}");
    assert!(
        begins.iter().any(|p| p["value"]["title"].as_str().unwrap().starts_with("read_file")),
        "{progress:?}"
    );
    let ends = progress.iter().filter(|p| p["value"]["kind"] == "end").count();
    assert_eq!(ends, begins.len());
}

#[tokio::test]
async fn session_commands_validate_ids_and_two_sessions_run_at_once() {
    let fx = Fixture::new().await;
    let client = fx.client(plugin_capabilities()).await;
    let err = client.command("agentls.steer", json!({"sessionId": "nope", "text": "x"})).await.unwrap_err();
    assert!(err["message"].as_str().unwrap().starts_with("invalid argument `sessionId`"), "{err}");
    let err = client.command("agentls.prompt", json!({"text": ""})).await.unwrap_err();
    assert_eq!(err["data"], "text");
    let err = client.command("agentls.newSession", json!({"profile": "vim"})).await.unwrap_err();
    assert_eq!(err["data"], "profile");

    let a = new_session(&client).await;
    let b = new_session(&client).await;
    let err = client
        .command("agentls.configure", json!({"sessionId": a, "reasoningEffort": "max"}))
        .await
        .unwrap_err();
    assert_eq!(err["data"], "reasoningEffort");
    let configured = client
        .command("agentls.configure", json!({"sessionId": a, "model": "claude-2", "approval": "auto"}))
        .await;
    let configured = configured.expect("configure");
    assert_eq!(
        (configured["model"].clone(), configured["approval"].clone()),
        (json!("claude-2"), json!("auto"))
    );

    fx.mock.push(Turn::new().text("one"));
    fx.mock.push(Turn::new().text("two"));
    client.command("agentls.prompt", json!({"sessionId": a, "text": "first"})).await.expect("prompt a");
    client.command("agentls.prompt", json!({"sessionId": b, "text": "second"})).await.expect("prompt b");
    let ea = client.next_event(&a, "processing_end").await;
    let eb = client.next_event(&b, "processing_end").await;
    let mut texts = [ea["data"]["text"].as_str().unwrap(), eb["data"]["text"].as_str().unwrap()];
    texts.sort();
    assert_eq!(texts, ["one", "two"]);
    let models: Vec<String> =
        fx.mock.requests().iter().map(|r| r.body["model"].as_str().unwrap().to_string()).collect();
    assert!(models.contains(&"claude-2".to_string()), "configure applies to the next call: {models:?}");

    let listed = client.command("agentls.listSessions", json!({})).await.expect("list");
    let open: Vec<&Value> =
        listed["sessions"].as_array().unwrap().iter().filter(|s| s["open"] == true).collect();
    assert_eq!(open.len(), 2);
    client.command("agentls.closeSession", json!({"sessionId": a})).await.expect("close");
    client.next_event(&a, "session_end").await;
}

#[tokio::test]
async fn permission_allow_deny_and_always() {
    let fx = Fixture::new().await;
    let client = fx.client(plugin_capabilities()).await;
    let id = new_session(&client).await;
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "echo first"})));
    fx.mock.push(Turn::new().tool_call("s2", "shell", json!({"command": "echo second"})));
    fx.mock.push(Turn::new().tool_call("s3", "shell", json!({"command": "echo third"})));
    fx.mock.push(Turn::new().text("done"));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "run things"})).await.expect("prompt");

    let ask = client.next_notification("agentls/permission").await;
    assert_eq!((ask["command"].clone(), ask["callId"].clone()), (json!("echo first"), json!("s1")));
    let resolved = client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "deny", "feedback": "not now"}),
        )
        .await;
    assert_eq!(resolved.expect("resolve")["decision"], "deny");
    let end = client.next_event(&id, "tool_call_end").await;
    assert!(end["data"]["error"].as_str().unwrap().contains("not now"), "{end}");

    let ask = client.next_notification("agentls/permission").await;
    assert_eq!(ask["command"], "echo second");
    client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_always"}),
        )
        .await
        .expect("resolve");
    let end = client.next_event(&id, "tool_call_end").await;
    assert!(end["data"]["output"].as_str().unwrap().contains("second"), "{end}");
    // "echo third" matches the stored `echo third`? No: the rule is the first two words of the
    // allowed command (`echo second`), so the third asks again.
    let ask = client.next_notification("agentls/permission").await;
    assert_eq!(ask["command"], "echo third");
    client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_once"}),
        )
        .await
        .expect("resolve");
    client.next_event(&id, "processing_end").await;
    let stored = std::fs::read_to_string(fx.data.join("permissions.json")).expect("rules stored");
    assert!(stored.contains("echo second"), "{stored}");
}

#[tokio::test]
async fn cancel_mid_turn_rejects_pending_questions_and_keeps_the_session() {
    let fx = Fixture::new().await;
    let client = fx.client(plugin_capabilities()).await;
    let id = new_session(&client).await;
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "echo hi"})));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "run"})).await.expect("prompt");
    let ask = client.next_notification("agentls/permission").await;
    client.command("agentls.cancel", json!({"sessionId": id})).await.expect("cancel");
    let end = client.next_event(&id, "processing_end").await;
    assert_ne!(end["data"]["reason"], "completed", "{end}");
    let late = client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_once"}),
        )
        .await;
    assert!(late.is_err(), "a cancelled question cannot be answered");

    fx.mock.push(Turn::new().text("still here"));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "again"})).await.expect("prompt");
    let end = client.next_event(&id, "processing_end").await;
    assert_eq!(end["data"]["text"], "still here");
}

#[tokio::test]
async fn plain_client_gets_the_answer_as_a_message_and_permission_as_a_question() {
    let fx = Fixture::new().await;
    let client = fx.client(plain_capabilities()).await;
    client.manual("window/showMessageRequest");
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "echo plain"})));
    fx.mock.push(Turn::new().text("All done."));
    let queued =
        client.command("agentls.prompt", json!({"text": "go"})).await.expect("prompt creates a session");
    let id = queued["sessionId"].as_str().unwrap().to_string();
    let question = client.next_request("window/showMessageRequest").await;
    assert!(question.params["message"].as_str().unwrap().contains("echo plain"));
    let titles: Vec<&str> =
        question.params["actions"].as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Allow once", "Always allow", "Deny"]);
    client.respond(&question, json!({"title": "Allow once"}));
    let shown = client
        .next_notification_where("window/showMessage", |p| {
            p["message"].as_str().unwrap_or("").contains("All done.")
        })
        .await;
    assert_eq!(shown["type"], 3);
    client.next_turn_end(&id).await;
    assert!(request_text(&fx.mock, 1).contains("plain"), "the command ran");
    assert!(client.notifications("agentls/event").is_empty(), "a plain client gets no agentls/event");
}

#[tokio::test]
async fn resume_after_restart_carries_the_history() {
    let fx = Fixture::new().await;
    let id = {
        let client = fx.client(plugin_capabilities()).await;
        let id = new_session(&client).await;
        fx.mock.push(Turn::new().text("remembered answer"));
        client
            .command("agentls.prompt", json!({"sessionId": id, "text": "remember the word kumquat"}))
            .await
            .expect("prompt");
        client.next_event(&id, "processing_end").await;
        client.shutdown().await;
        id
    };
    let client = fx.client(plugin_capabilities()).await;
    let listed = client.command("agentls.listSessions", json!({})).await.expect("list");
    let stored =
        listed["sessions"].as_array().unwrap().iter().find(|s| s["sessionId"] == id.as_str()).cloned();
    assert_eq!(stored.expect("stored")["open"], false);
    let resumed = client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    assert_eq!((resumed["resumed"].clone(), resumed["turns"].clone()), (json!(true), json!(2)));
    fx.mock.push(Turn::new().text("kumquat"));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "which word?"})).await.expect("prompt");
    client.next_event(&id, "processing_end").await;
    let body = request_text(&fx.mock, 1);
    assert!(body.contains("remember the word kumquat") && body.contains("remembered answer"), "{body}");
    let err = client.command("agentls.resumeSession", json!({"sessionId": "missing-id"})).await.unwrap_err();
    assert_eq!(err["data"], "sessionId");
    let _ = file_uri(&fx.root);
}

/// `agentls.compact` over JSON-RPC: a `compaction` event, the context figures in
/// `agentls.listSessions`, the summary in `agentls.history`, and a resumed session that sends the
/// compacted history (the transcript stores it).
#[tokio::test]
async fn compact_command_reports_the_event_and_a_resumed_session_keeps_the_compacted_history() {
    let fx = Fixture::new().await;
    let sentinel = agentls::session::SUMMARY_SENTINEL;
    let id = {
        let client = fx.client(plugin_capabilities()).await;
        let id = new_session(&client).await;
        for n in ["first", "second", "third", "fourth"] {
            fx.mock.push(Turn::new().text(&format!("{n} answer")).usage(0, 5));
            client
                .command("agentls.prompt", json!({"sessionId": id, "text": format!("{n} question")}))
                .await
                .expect("prompt");
            client.next_event(&id, "processing_end").await;
        }
        let listed = client.command("agentls.listSessions", json!({})).await.expect("list");
        let context = listed["sessions"][0]["context"].clone();
        assert_eq!(context["calibration"], 1.0, "{context}");
        assert_eq!(context["contextWindow"], 200_000, "{context}");
        let before = context["estimateTokens"].as_u64().expect("an estimate");
        assert!(before > 0);

        fx.mock.push(Turn::new().text("SUMMARY-OF-THE-FIRST-EXCHANGE"));
        let queued = client.command("agentls.compact", json!({"sessionId": id})).await.expect("compact");
        assert_eq!(queued, json!({"sessionId": id, "queued": true}));
        let event = client.next_event(&id, "compaction").await;
        assert_eq!(event["data"]["trigger"], "manual");
        assert_eq!(event["data"]["messages_summarized"], 2);
        assert_eq!(event["data"]["tokens_before"], before);
        let listed = client.command("agentls.listSessions", json!({})).await.expect("list");
        assert_eq!(listed["sessions"][0]["context"]["estimateTokens"], event["data"]["tokens_after"]);
        let history = client.command("agentls.history", json!({"sessionId": id})).await.expect("history");
        assert_eq!(history["entries"][0]["kind"], "summary");
        assert_eq!(history["entries"][0]["text"], "SUMMARY-OF-THE-FIRST-EXCHANGE");
        assert_eq!(history["entries"][0]["turnsSummarized"], 2);
        let err = client.command("agentls.compact", json!({})).await.unwrap_err();
        assert_eq!(err["data"], "sessionId");
        client.shutdown().await;
        id
    };
    let client = fx.client(plugin_capabilities()).await;
    let resumed = client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    assert_eq!(resumed["turns"], 7, "the summary and three exchanges: {resumed}");
    fx.mock.push(Turn::new().text("fifth answer"));
    client
        .command("agentls.prompt", json!({"sessionId": id, "text": "fifth question"}))
        .await
        .expect("prompt");
    client.next_event(&id, "processing_end").await;
    let body = request_text(&fx.mock, 5);
    assert!(body.contains(&format!("{sentinel}\\n\\nSUMMARY-OF-THE-FIRST-EXCHANGE")), "{body}");
    assert!(!body.contains("first question") && body.contains("second question"), "{body}");
}

/// A plain client (no `agentls/event`) is told of a compaction with a message.
#[tokio::test]
async fn plain_client_is_told_of_a_compaction() {
    let fx = Fixture::new().await;
    let client = fx.client(plain_capabilities()).await;
    let mut id = String::new();
    for n in ["first", "second", "third", "fourth"] {
        fx.mock.push(Turn::new().text(&format!("{n} answer")).usage(0, 5));
        let queued =
            client.command("agentls.prompt", json!({"text": format!("{n} question")})).await.expect("prompt");
        id = queued["sessionId"].as_str().unwrap().to_string();
        client.next_turn_end(&id).await;
    }
    fx.mock.push(Turn::new().text("SUMMARY"));
    client.command("agentls.compact", json!({"sessionId": id})).await.expect("compact");
    let shown = client
        .next_notification_where("window/showMessage", |p| {
            p["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("agentls: compacted the conversation (manual): 2 earlier")
        })
        .await;
    assert_eq!(shown["type"], 3);
}

#[tokio::test]
async fn instruction_file_edited_on_disk_reaches_the_next_request() {
    let fx = Fixture::new().await;
    fx.write("AGENTS.md", "Always answer in French.\n");
    let client = fx.client(plugin_capabilities()).await;
    let id = new_session(&client).await;
    fx.mock.push(Turn::new().text("Bonjour"));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "hello"})).await.expect("prompt");
    client.next_event(&id, "processing_end").await;
    assert!(request_text(&fx.mock, 0).contains("Always answer in French."));

    fx.write("AGENTS.md", "Always answer in Klingon.\n");
    let reloaded = client.next_event(&id, "project_docs_reloaded").await;
    assert!(reloaded["data"]["path"].as_str().unwrap().ends_with("AGENTS.md"));
    fx.mock.push(Turn::new().text("nuqneH"));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "hello again"})).await.expect("prompt");
    client.next_event(&id, "processing_end").await;
    let second = request_text(&fx.mock, 1);
    assert!(second.contains("Always answer in Klingon.") && !second.contains("French"), "{second}");
}

#[tokio::test]
async fn code_actions_offer_fix_explain_and_comment_instructions() {
    let fx = Fixture::new().await;
    let lib = fx.write("src/lib.rs", "pub fn f() {}\n");
    let client = fx.client(plain_capabilities()).await;
    client.open(&lib, "pub fn f() {}\n", 1);
    client.change(&lib, 2, [0, 0, 0, 0], "// agent: add a doc comment\n");
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": file_uri(&lib)},
                "range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 3}},
                "context": {"diagnostics": [{
                    "range": {"start": {"line": 1, "character": 7}, "end": {"line": 1, "character": 8}},
                    "message": "function `f` is never used", "source": "rustc", "severity": 2,
                }]},
            }),
        )
        .await
        .expect("code actions");
    let titles: Vec<&str> =
        actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        ["agentls: fix this — function `f` is never used", "agentls: add a doc comment", "agentls: explain"]
    );
    let command = actions[1]["command"].clone();
    assert_eq!(command["command"], "agentls.prompt");
    fx.mock.push(Turn::new().text("Added."));
    let queued = client
        .request(
            "workspace/executeCommand",
            json!({"command": command["command"], "arguments": command["arguments"]}),
        )
        .await
        .expect("run the action");
    let id = queued["sessionId"].as_str().unwrap().to_string();
    client.next_turn_end(&id).await;
    let body = request_text(&fx.mock, 0);
    assert!(body.contains("add a doc comment") && body.contains("src/lib.rs"), "{body}");
}

/// The editor's `agentls` settings (here `initializationOptions`; the `workspace/configuration`
/// section goes through the same parser) set the loop settings of the sessions it starts.
#[tokio::test]
async fn loop_settings_from_the_editor_reach_the_session_and_the_wire() {
    let fx = Fixture::new().await;
    let lib = fx.write("src/lib.rs", &(1..=30).map(|i| format!("line {i}\n")).collect::<String>());
    let client = LspClient::in_process(fx.options());
    let settings = json!({
        "model": "claude-test",
        "one_call_per_step": true,
        "enable_loop_detection": true,
        "loop_detection_window": 2,
        "context_window_tokens": 12,
        "tool_line_limits": {"read_file": 6},
    });
    client.initialize(&fx.root, plugin_capabilities(), settings).await;
    let read = json!({"file_path": path_text(&lib)});
    fx.mock.push(Turn::new().tool_call("c1", "read_file", read.clone()).tool_call(
        "c2",
        "glob",
        json!({"pattern": "*"}),
    ));
    fx.mock.push(Turn::new().tool_call("c3", "read_file", read.clone()));
    fx.mock.push(Turn::new().tool_call("c4", "read_file", read));
    fx.mock.push(Turn::new().text("done"));
    let id = new_session(&client).await;
    client.command("agentls.prompt", json!({"sessionId": id, "text": "read it"})).await.expect("prompt");

    let warning = client.next_event(&id, "warning").await;
    assert_eq!(warning["data"]["context_window"], 12, "{warning}");
    let looped = client.next_event(&id, "loop_detection").await;
    assert!(looped["data"]["message"].as_str().unwrap().contains("last 2 tool calls"), "{looped}");
    client.next_event(&id, "processing_end").await;
    let first = &fx.mock.requests()[0].body;
    assert_eq!(first["tool_choice"]["disable_parallel_tool_use"], json!(true), "{}", first["tool_choice"]);
    let second = request_text(&fx.mock, 1);
    assert!(second.contains("was not executed") && second.contains("lines omitted"), "{second}");
}

/// The instruction file of the context file's directory reaches the model with the prompt, is
/// stored in the transcript, and is not handed over again after a resume.
#[tokio::test]
async fn a_prompts_context_brings_its_directorys_instructions_and_resume_keeps_them() {
    let fx = Fixture::new().await;
    std::fs::create_dir_all(fx.root.join("src/net")).expect("mkdir");
    fx.write("src/net/AGENTS.md", "Network code never panics.\n");
    let http = fx.write("src/net/http.rs", "pub fn get() {}\n");
    let id = {
        let client = fx.client(plugin_capabilities()).await;
        let id = new_session(&client).await;
        fx.mock.push(Turn::new().text("It gets."));
        let context = json!({"uri": file_uri(&http)});
        let prompt = json!({"sessionId": id, "text": "explain this", "context": context});
        client.command("agentls.prompt", prompt).await.expect("prompt");
        client.next_event(&id, "processing_end").await;
        client.shutdown().await;
        id
    };
    let first = request_text(&fx.mock, 0);
    assert!(first.contains("Network code never panics."), "{first}");

    let client = fx.client(plugin_capabilities()).await;
    let resumed = client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    assert_eq!(resumed["turns"], json!(3), "user, instructions, assistant: {resumed}");
    fx.mock.push(Turn::new().text("Still."));
    let context = json!({"uri": file_uri(&http)});
    client
        .command("agentls.prompt", json!({"sessionId": id, "text": "and now?", "context": context}))
        .await
        .expect("prompt");
    client.next_event(&id, "processing_end").await;
    let second = request_text(&fx.mock, 1);
    assert_eq!(second.matches("Network code never panics.").count(), 1, "{second}");
}

#[tokio::test]
async fn the_code_profile_set_in_the_editor_settings_runs_a_python_repl() {
    let fx = Fixture::new().await;
    let client = LspClient::in_process(fx.options());
    client
        .initialize(&fx.root, plugin_capabilities(), json!({"model": "claude-test", "profile": "code"}))
        .await;
    fx.mock.push(Turn::new().tool_call("c1", "python", json!({"code": "total = sum(range(10))"})));
    fx.mock.push(Turn::new().tool_call("c2", "python", json!({"code": "return total"})));
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    assert_eq!(created["profile"], "code");
    let id = created["sessionId"].as_str().expect("id").to_string();
    client.command("agentls.prompt", json!({"sessionId": id, "text": "sum 0..9"})).await.expect("prompt");
    let start = client.next_event(&id, "session_start").await;
    assert_eq!(start["data"]["tools"], json!(["python"]));
    let done = client.next_event(&id, "processing_end").await;
    assert_eq!(done["data"]["reason"], "completed", "{done}");
    assert_eq!(done["data"]["text"], "45", "the REPL kept `total` and `return` ended the task");
}

/// A subagent is stored with its parent and comes back with it: after a restart and
/// `resumeSession`, the parent's model gives the same agent more to do, and the subagent goes on
/// from its own conversation.
#[tokio::test]
async fn resume_after_restart_brings_the_subagents_back() {
    let fx = Fixture::new().await;
    let task = "CHILD-K: remember the word kumquat";
    let id = {
        let client = fx.client(plugin_capabilities()).await;
        let id = new_session(&client).await;
        fx.mock.push(Turn::new().tool_call("s1", "spawn_agent", json!({"task": task})));
        fx.mock.push(Turn::new().tool_call("w1", "wait", json!({"agent_id": "agent-1"})));
        fx.mock.push(Turn::new().text("the subagent remembers"));
        fx.mock.push_for(task, Turn::new().text("kumquat noted"));
        client
            .command("agentls.prompt", json!({"sessionId": id, "text": "delegate it"}))
            .await
            .expect("prompt");
        client
            .next_notification_where("agentls/event", |e| {
                e["sessionId"] == id.as_str() && e["kind"] == "processing_end" && e.get("agent").is_none()
            })
            .await;
        client.shutdown().await;
        id
    };
    let client = fx.client(plugin_capabilities()).await;
    client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    fx.mock.push(Turn::new().tool_call(
        "i1",
        "send_input",
        json!({"agent_id": "agent-1", "message": "which word?"}),
    ));
    fx.mock.push(Turn::new().tool_call("w2", "wait", json!({"agent_id": "agent-1"})));
    fx.mock.push(Turn::new().text("kumquat, says the subagent"));
    fx.mock.push_for(task, Turn::new().text("kumquat"));
    client.command("agentls.prompt", json!({"sessionId": id, "text": "ask it again"})).await.expect("prompt");
    let end = client
        .next_notification_where("agentls/event", |e| {
            e["sessionId"] == id.as_str() && e["kind"] == "processing_end" && e.get("agent").is_none()
        })
        .await;
    assert_eq!(end["data"]["reason"], "completed", "{end}");
    let child: Vec<String> = fx
        .mock
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains("CHILD-K") && !b.contains("delegate it"))
        .collect();
    assert_eq!(child.len(), 2, "the subagent's first and resumed requests");
    assert!(child[1].contains("kumquat noted") && child[1].contains("which word?"), "{}", child[1]);
    let restarted = client
        .notifications("agentls/event")
        .into_iter()
        .find(|e| e["kind"] == "session_start" && e["agent"]["agentId"] == "agent-1")
        .expect("the subagent started again");
    assert_eq!(restarted["data"]["resumed"], true);
}
