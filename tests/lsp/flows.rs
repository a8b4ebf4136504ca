//! Editor flows through the in-process server against the loopback mock provider: plain-client
//! review (needsConfirmation annotations, or [Apply] [Reject] [Show diff]), resource operations
//! in applyEdit and their fallback, save-before-shell for plugin and plain clients, the
//! `diagnostics` tool, a panicking session task, cancelling a `$/progress` token, and steering.

use crate::support::lsp_client;
use crate::support::mock_provider;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentls::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use lsp_client::{LspClient, file_uri, plugin_capabilities};
use mock_provider::{Dialect, MockProvider, Turn};
use serde_json::{Value, json};

/// A tool whose description panics once `armed`: the session task panics outside any tool call
/// (while it registers the session's tools), which nothing inside the session catches.
struct Tripwire {
    armed: Arc<AtomicBool>,
}

#[async_trait]
impl Tool for Tripwire {
    fn name(&self) -> &str {
        "tripwire"
    }
    fn description(&self) -> &str {
        if self.armed.load(Ordering::SeqCst) {
            panic!("tripwire: a bug inside the session task");
        }
        "Does nothing."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("nothing"))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    mock: MockProvider,
    client: LspClient,
    tripwire: Arc<AtomicBool>,
}

impl Fixture {
    async fn new(capabilities: Value) -> Self {
        Self::with_options(capabilities, json!({"model": "claude-test"})).await
    }

    async fn with_options(capabilities: Value, init_options: Value) -> Self {
        Self::build(capabilities, init_options, |_| {}).await
    }

    /// `setup` runs on the client before `initialize` (to script its answers).
    async fn build(capabilities: Value, init_options: Value, setup: impl FnOnce(&LspClient)) -> Self {
        Self::build_folders(capabilities, init_options, setup, &[]).await
    }

    /// With more workspace folders (named relative to the temporary directory) after `ws`.
    async fn build_folders(
        capabilities: Value,
        init_options: Value,
        setup: impl FnOnce(&LspClient),
        more_folders: &[&str],
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        let mut folders = vec![root.clone()];
        for folder in more_folders {
            let path = dir.path().join(folder);
            std::fs::create_dir_all(&path).expect("mkdir");
            folders.push(path);
        }
        let data = dir.path().join("data");
        let mock = MockProvider::start(Dialect::Anthropic).await;
        let mut env = mock.env();
        env.push(("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()));
        env.push(("AGENTLS_DATA_DIR".into(), data.display().to_string()));
        env.push(("AGENTLS_CONFIG".into(), root.join("no-user-config.toml").display().to_string()));
        let mut options = agentls::lsp::ServerOptions::from_env(agentls::config::Env::from_pairs(env));
        // Generous: the deadline only bounds a hang.
        options.deadlines.request = std::time::Duration::from_secs(30);
        let tripwire = Arc::new(AtomicBool::new(false));
        options.extra_tools = vec![Arc::new(Tripwire { armed: tripwire.clone() })];
        let client = LspClient::in_process(options);
        setup(&client);
        let folders: Vec<&std::path::Path> = folders.iter().map(PathBuf::as_path).collect();
        client.initialize_folders(&folders, capabilities, init_options).await;
        Self { _dir: dir, root, data, mock, client, tripwire }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::write(&path, text).expect("write");
        path
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }

    async fn session(&self, args: Value) -> String {
        let created = self.client.command("agentls.newSession", args).await.expect("newSession");
        created["sessionId"].as_str().expect("sessionId").to_string()
    }

    async fn prompt(&self, id: &str, text: &str) {
        self.client.command("agentls.prompt", json!({"sessionId": id, "text": text})).await.expect("prompt");
    }

    /// The body of the model's `index`-th request.
    fn request(&self, index: usize) -> String {
        self.mock.requests().get(index).map(|r| r.body.to_string()).unwrap_or_default()
    }
}

fn patch_call(id: &str, patch: &str) -> Turn {
    Turn::new().tool_call(id, "apply_patch", json!({"patch": patch}))
}

const LIB: &str = "pub fn f() -> u32 {\n    1\n}\n";
const BUMP: &str =
    "*** Begin Patch\n*** Update File: src/lib.rs\n@@ pub fn f() -> u32 {\n-    1\n+    2\n*** End Patch";

/// A plain client (no plugin) whose workspace edits support change annotations.
fn annotating_capabilities() -> Value {
    json!({
        "window": {"workDoneProgress": true},
        "workspace": {"applyEdit": true, "workspaceEdit": {
            "documentChanges": true, "changeAnnotationSupport": {"groupsOnLabel": true}}},
    })
}

#[tokio::test]
async fn plain_client_with_change_annotations_reviews_in_its_own_preview() {
    let fx = Fixture::new(annotating_capabilities()).await;
    fx.client.manual("workspace/applyEdit");
    let lib = fx.write("src/lib.rs", LIB);
    fx.client.open(&lib, LIB, 3);
    fx.mock.push(patch_call("p1", BUMP)).push(Turn::new().text("Proposed."));
    let bump_again = BUMP.replace("-    1\n+    2", "-    2\n+    3");
    fx.mock.push(patch_call("p2", &bump_again)).push(Turn::new().text("Declined."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.prompt(&id, "bump").await;

    let apply = fx.client.next_request("workspace/applyEdit").await;
    let annotations = &apply.params["edit"]["changeAnnotations"];
    let (annotation_id, annotation) =
        annotations.as_object().and_then(|m| m.iter().next()).expect("an annotation");
    assert_eq!(annotation["needsConfirmation"], true, "{annotations}");
    assert!(annotation["label"].as_str().unwrap_or_default().contains("src/lib.rs"), "{annotation}");
    let change = &apply.params["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"], json!({"uri": file_uri(&lib), "version": 3}));
    assert_eq!(change["edits"][0]["annotationId"], annotation_id.as_str());
    assert_eq!(change["edits"][0]["newText"], "    2\n");
    assert!(
        fx.client.notifications("agentls/review").is_empty(),
        "no plugin notification for a plain client"
    );
    fx.client.respond(&apply, json!({"applied": true}));
    fx.client.next_turn_end(&id).await;
    assert!(fx.request(1).contains("Success"), "{}", fx.request(1));
    fx.client.change(&lib, 4, [1, 4, 1, 5], "2");

    // The user declines in the client's preview: the model hears it, nothing is written.
    fx.prompt(&id, "again").await;
    let apply = fx.client.next_request("workspace/applyEdit").await;
    fx.client.respond(&apply, json!({"applied": false, "failureReason": "the user declined the change"}));
    fx.client.next_turn_end(&id).await;
    let told = fx.request(3);
    assert!(told.contains("the user declined the change") && told.contains("not applied"), "{told}");
    assert_eq!(fx.read("src/lib.rs").as_deref(), Some(LIB));
}

#[tokio::test]
async fn plain_client_review_by_question_shows_the_diff_then_asks_again() {
    let caps = json!({
        "window": {"workDoneProgress": true, "showDocument": {"support": true}},
        "workspace": {"applyEdit": true, "workspaceEdit": {}},
    });
    let fx = Fixture::new(caps).await;
    fx.client.manual("window/showMessageRequest");
    fx.client.manual("window/showDocument");
    fx.write("src/lib.rs", LIB);
    fx.mock.push(patch_call("p1", BUMP)).push(Turn::new().text("Rejected, fine."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.prompt(&id, "bump").await;

    let question = fx.client.next_request("window/showMessageRequest").await;
    let titles: Vec<&str> =
        question.params["actions"].as_array().unwrap().iter().filter_map(|a| a["title"].as_str()).collect();
    assert_eq!(titles, ["Apply", "Reject", "Show diff"]);
    assert!(question.params["message"].as_str().unwrap_or_default().contains("M src/lib.rs"));
    fx.client.respond(&question, json!({"title": "Show diff"}));

    let show = fx.client.next_request("window/showDocument").await;
    let uri = show.params["uri"].as_str().expect("uri");
    let path = url::Url::parse(uri).expect("uri").to_file_path().expect("file uri");
    let diff = std::fs::read_to_string(&path).expect("the diff file exists");
    assert!(diff.contains("-    1") && diff.contains("+    2"), "{diff}");
    fx.client.respond(&show, json!({"success": true}));

    let again = fx.client.next_request("window/showMessageRequest").await;
    assert_eq!(again.params["actions"], question.params["actions"], "the same question again");
    fx.client.respond(&again, json!({"title": "Reject"}));
    fx.client.next_turn_end(&id).await;
    let told = fx.request(1);
    assert!(told.contains("rejected"), "{told}");
    assert!(fx.client.requests("workspace/applyEdit").is_empty(), "a rejected change is never sent");
    assert_eq!(fx.read("src/lib.rs").as_deref(), Some(LIB));
}

const RESHAPE: &str = "*** Begin Patch\n*** Add File: src/new.rs\n+pub fn new() {}\n*** Delete File: src/old.rs\n*** Update File: src/lib.rs\n*** Move to: src/moved.rs\n@@ pub fn f() -> u32 {\n-    1\n+    2\n*** End Patch";

#[tokio::test]
async fn create_rename_delete_go_out_as_resource_operations() {
    let fx = Fixture::new(plugin_capabilities()).await;
    fx.client.manual("workspace/applyEdit");
    let lib = fx.write("src/lib.rs", LIB);
    let old = fx.write("src/old.rs", "old\n");
    fx.mock.push(patch_call("p1", RESHAPE)).push(Turn::new().text("Reshaped."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.prompt(&id, "reshape").await;

    let review = fx.client.next_notification("agentls/review").await;
    let ops: Vec<(String, String)> = review["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["op"].as_str().unwrap().to_string(), f["uri"].as_str().unwrap().to_string()))
        .collect();
    assert!(ops.contains(&("create".into(), file_uri(&fx.root.join("src/new.rs")))), "{ops:?}");
    assert!(ops.contains(&("delete".into(), file_uri(&old))), "{ops:?}");
    let renamed = review["files"].as_array().unwrap().iter().find(|f| f["op"] == "rename").expect("rename");
    assert_eq!(renamed["newUri"], file_uri(&fx.root.join("src/moved.rs")));
    fx.client
        .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "accept"}))
        .await
        .expect("accept");

    let apply = fx.client.next_request("workspace/applyEdit").await;
    let changes = apply.params["edit"]["documentChanges"].as_array().cloned().expect("documentChanges");
    let find = |kind: &str| changes.iter().find(|c| c["kind"] == kind).cloned();
    assert_eq!(find("create").expect("create")["uri"], file_uri(&fx.root.join("src/new.rs")));
    assert_eq!(find("delete").expect("delete")["uri"], file_uri(&old));
    let rename = find("rename").expect("rename");
    assert_eq!(
        (rename["oldUri"].clone(), rename["newUri"].clone()),
        (json!(file_uri(&lib)), json!(file_uri(&fx.root.join("src/moved.rs"))))
    );
    let edit_of = |path: &str| {
        changes.iter().find(|c| c["textDocument"]["uri"] == file_uri(&fx.root.join(path))).cloned()
    };
    assert_eq!(
        edit_of("src/new.rs").expect("content of the new file")["edits"][0]["newText"],
        "pub fn new() {}\n"
    );
    assert_eq!(edit_of("src/moved.rs").expect("edit of the moved file")["edits"][0]["newText"], "    2\n");
    fx.client.respond(&apply, json!({"applied": true}));
    fx.client.next_event(&id, "processing_end").await;
    // The editor performs the operations; the server wrote nothing itself.
    assert_eq!(fx.read("src/lib.rs").as_deref(), Some(LIB));
    assert!(fx.read("src/new.rs").is_none() && fx.read("src/old.rs").is_some());
}

#[tokio::test]
async fn without_resource_operations_files_the_editor_does_not_hold_change_on_disk() {
    let caps =
        json!({"window": {"workDoneProgress": true}, "workspace": {"applyEdit": true, "workspaceEdit": {}}});
    let fx = Fixture::new(caps).await;
    fx.write("src/lib.rs", LIB);
    fx.write("src/old.rs", "old\n");
    let open = fx.write("src/open.rs", "open\n");
    fx.client.open(&open, "open\n", 1);
    fx.mock.push(patch_call("p1", RESHAPE)).push(Turn::new().text("Reshaped."));
    let delete_open = "*** Begin Patch\n*** Delete File: src/open.rs\n*** End Patch";
    fx.mock.push(patch_call("p2", delete_open)).push(Turn::new().text("Could not."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.client.command("agentls.configure", json!({"sessionId": id, "approval": "auto"})).await.expect("auto");
    fx.prompt(&id, "reshape").await;
    fx.client.next_turn_end(&id).await;
    assert_eq!(fx.read("src/new.rs").as_deref(), Some("pub fn new() {}\n"));
    assert!(fx.read("src/old.rs").is_none() && fx.read("src/lib.rs").is_none());
    assert_eq!(fx.read("src/moved.rs").as_deref(), Some("pub fn f() -> u32 {\n    2\n}\n"));
    assert!(fx.client.requests("workspace/applyEdit").is_empty(), "nothing for the editor to edit");

    // A file the editor holds is not deleted behind its back.
    fx.prompt(&id, "delete the open one").await;
    fx.client.next_turn_end(&id).await;
    let told = fx.request(3);
    assert!(told.contains("open in the editor"), "{told}");
    assert_eq!(fx.read("src/open.rs").as_deref(), Some("open\n"));
}

#[tokio::test]
async fn before_a_shell_command_a_plugin_client_is_asked_to_save_the_changed_files() {
    let fx =
        Fixture::with_options(plugin_capabilities(), json!({"model": "m", "shell": {"permission": "allow"}}))
            .await;
    fx.client.manual("agentls/saveDocuments");
    let lib = fx.write("src/lib.rs", LIB);
    let other = fx.write("src/other.rs", "other\n");
    fx.client.open(&lib, LIB, 1);
    fx.client.open(&other, "other\n", 1);
    fx.client.change(&other, 2, [0, 0, 0, 0], "// unsaved\n");
    fx.mock.push(patch_call("p1", BUMP));
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "cat src/lib.rs"})));
    fx.mock.push(Turn::new().text("Saved and ran."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.client.command("agentls.configure", json!({"sessionId": id, "approval": "auto"})).await.expect("auto");
    fx.client.auto_answer("workspace/applyEdit", json!({"applied": true}));
    fx.prompt(&id, "bump and test").await;

    let save = fx.client.next_request("agentls/saveDocuments").await;
    assert_eq!(save.params["uris"], json!([file_uri(&lib)]), "exactly the files the agent changed");
    // The plugin saves: the editor writes its buffer.
    std::fs::write(&lib, LIB.replace("    1", "    2")).expect("save");
    fx.client.respond(&save, json!({"saved": [file_uri(&lib)]}));
    let end = fx
        .client
        .next_notification_where("agentls/event", |e| {
            e["kind"] == "tool_call_end" && e["data"]["call_id"] == "s1"
        })
        .await;
    assert!(end["data"]["output"].as_str().unwrap_or_default().contains("    2"), "{end}");
    fx.client.next_event(&id, "processing_end").await;
    assert_eq!(fx.read("src/other.rs").as_deref(), Some("other\n"), "untouched buffers are never written");
}

#[tokio::test]
async fn before_a_shell_command_the_server_writes_the_agents_changes_for_a_plain_client() {
    let caps = json!({"window": {"workDoneProgress": true}, "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}}});
    let fx = Fixture::with_options(caps, json!({"model": "m", "shell": {"permission": "allow"}})).await;
    let lib = fx.write("src/lib.rs", LIB);
    let other = fx.write("src/other.rs", "other\n");
    fx.client.open(&lib, LIB, 1);
    fx.client.open(&other, "other\n", 1);
    fx.client.change(&other, 2, [0, 0, 0, 0], "// unsaved\n");
    fx.client.manual("workspace/applyEdit");
    fx.mock.push(patch_call("p1", BUMP));
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "cat src/lib.rs"})));
    fx.mock.push(Turn::new().text("Ran."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.client.command("agentls.configure", json!({"sessionId": id, "approval": "auto"})).await.expect("auto");
    fx.prompt(&id, "bump and test").await;

    let apply = fx.client.next_request("workspace/applyEdit").await;
    // The editor applies the edit to its buffer and the user adds a line before the shell runs.
    let edited = "// user line\npub fn f() -> u32 {\n    2\n}\n";
    fx.client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": file_uri(&lib), "version": 3}, "contentChanges": [{"text": edited}]}),
    );
    fx.client.respond(&apply, json!({"applied": true}));
    fx.client.next_turn_end(&id).await;
    let ran = fx.request(2);
    assert!(
        ran.contains("    2") && !ran.contains("// user line"),
        "the command saw the agent's edit only: {ran}"
    );
    assert_eq!(
        fx.read("src/lib.rs").as_deref(),
        Some("pub fn f() -> u32 {\n    2\n}\n"),
        "the agent's change was written, the user's unsaved line was not"
    );
    assert_eq!(fx.read("src/other.rs").as_deref(), Some("other\n"), "untouched buffers are never written");
    assert!(fx.client.requests("agentls/saveDocuments").is_empty(), "a plain client gets no plugin request");
    assert!(fx.client.notifications("agentls/event").is_empty(), "a plain client gets no agentls/event");
}

#[tokio::test]
async fn the_diagnostics_tool_asks_the_plugin_for_the_editors_diagnostics() {
    let fx = Fixture::new(plugin_capabilities()).await;
    fx.client.manual("agentls/diagnostics");
    let lib = fx.write("src/lib.rs", LIB);
    fx.mock.push(Turn::new().tool_call("d1", "diagnostics", json!({"path": "src/lib.rs"})));
    fx.mock.push(Turn::new().text("One error."));
    let id = fx.session(json!({})).await;
    fx.prompt(&id, "what is wrong?").await;
    let asked = fx.client.next_request("agentls/diagnostics").await;
    assert_eq!(asked.params["uri"], file_uri(&lib));
    fx.client.respond(
        &asked,
        json!({"files": [{"uri": file_uri(&lib), "diagnostics": [{
            "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
            "severity": 1, "message": "expected `u32`, found `&str`", "source": "rustc"}]}]}),
    );
    fx.client.next_event(&id, "processing_end").await;
    let told = fx.request(1);
    assert!(told.contains("src/lib.rs:2:5: error: expected `u32`, found `&str` (rustc)"), "{told}");
}

#[tokio::test]
async fn a_panic_inside_a_session_task_is_an_error_event_and_the_server_keeps_serving() {
    let fx = Fixture::new(plugin_capabilities()).await;
    fx.tripwire.store(true, Ordering::SeqCst);
    let id = fx.session(json!({})).await;
    let error = fx.client.next_event(&id, "error").await;
    assert_eq!(error["data"]["fatal"], true, "{error}");
    assert!(
        error["data"]["message"].as_str().unwrap_or_default().contains("stopped unexpectedly"),
        "{error}"
    );
    let err = fx.client.command("agentls.prompt", json!({"sessionId": id, "text": "x"})).await.unwrap_err();
    assert_eq!(err["data"], "sessionId", "the dead session is gone");

    fx.tripwire.store(false, Ordering::SeqCst);
    fx.mock.push(Turn::new().text("alive"));
    let next = fx.session(json!({})).await;
    fx.prompt(&next, "hello").await;
    let done = fx.client.next_event(&next, "processing_end").await;
    assert_eq!(done["data"]["text"], "alive");
}

#[tokio::test]
async fn cancelling_the_turn_progress_interrupts_the_turn() {
    let fx = Fixture::new(plugin_capabilities()).await;
    let id = fx.session(json!({})).await;
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "echo waiting"})));
    fx.prompt(&id, "run").await;
    let ask = fx.client.next_notification("agentls/permission").await;
    let begin = fx
        .client
        .next_notification_where("$/progress", |p| {
            p["value"]["kind"] == "begin" && p["value"]["title"] == "agentls"
        })
        .await;
    assert_eq!(begin["value"]["cancellable"], true);
    fx.client.notify("window/workDoneProgress/cancel", json!({"token": begin["token"]}));
    let end = fx.client.next_event(&id, "processing_end").await;
    assert_ne!(end["data"]["reason"], "completed", "{end}");
    let late = fx
        .client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_once"}),
        )
        .await;
    assert!(late.is_err(), "the pending question was answered by the cancel");
    fx.client
        .next_notification_where("$/progress", |p| {
            p["token"] == begin["token"] && p["value"]["kind"] == "end"
        })
        .await;
}

#[tokio::test]
async fn steering_mid_turn_reaches_the_next_model_request() {
    let fx = Fixture::new(plugin_capabilities()).await;
    let id = fx.session(json!({})).await;
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "echo step"})));
    fx.mock.push(Turn::new().text("Steered."));
    fx.prompt(&id, "run").await;
    let ask = fx.client.next_notification("agentls/permission").await;
    fx.client
        .command("agentls.steer", json!({"sessionId": id, "text": "only touch the CLI, not the library"}))
        .await
        .expect("steer");
    fx.client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_once"}),
        )
        .await
        .expect("allow");
    let injected = fx.client.next_event(&id, "steering_injected").await;
    assert!(injected["data"].to_string().contains("only touch the CLI"), "{injected}");
    fx.client.next_event(&id, "processing_end").await;
    assert!(fx.request(1).contains("only touch the CLI, not the library"), "{}", fx.request(1));
    assert!(!fx.request(0).contains("only touch the CLI"));
    let _ = &fx.data;
}

#[tokio::test]
async fn settings_are_pulled_with_workspace_configuration_and_win_over_initialization_options() {
    let fx = Fixture::build(plugin_capabilities(), json!({"model": "from-init-options"}), |client| {
        client.auto_answer("workspace/configuration", json!([{"model": "from-the-editor"}]));
    })
    .await;
    fx.client
        .next_notification_where("window/logMessage", |p| {
            p["message"].as_str().unwrap_or_default().contains("the editor's `agentls` settings")
        })
        .await;
    let asked = fx.client.requests("workspace/configuration");
    assert_eq!(asked[0].params["items"], json!([{"section": "agentls"}]));
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("newSession");
    assert_eq!(created["model"], "from-the-editor");

    // A change notification without settings pulls again.
    fx.client.auto_answer("workspace/configuration", json!([{"model": "changed-in-the-editor"}]));
    fx.client.notify("workspace/didChangeConfiguration", json!({"settings": null}));
    fx.client
        .next_notification_where("window/logMessage", |p| {
            p["message"].as_str().unwrap_or_default().contains("the editor's `agentls` settings")
        })
        .await;
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("newSession");
    assert_eq!(created["model"], "changed-in-the-editor");

    // A setting the user cleared is gone (the section replaces the last one, it is not merged
    // into it): the initialization options apply again.
    fx.client.auto_answer("workspace/configuration", json!([{"approval": "auto"}]));
    fx.client.notify("workspace/didChangeConfiguration", json!({"settings": null}));
    let pulled = |p: &serde_json::Value| {
        p["message"].as_str().unwrap_or_default().contains("the editor's `agentls` settings")
    };
    fx.client.next_notification_where("window/logMessage", pulled).await;
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("newSession");
    assert_eq!(created["model"], "from-init-options");
}

/// A bad editor setting is left out and named once, in a warning, however many layers and
/// changes carry it; the good keys beside it apply.
#[tokio::test]
async fn a_bad_editor_setting_is_named_once_and_the_others_apply() {
    let bad = json!({"model": "from-the-editor", "loop_detection_window": 1});
    let fx = Fixture::build(plugin_capabilities(), bad.clone(), |client| {
        client.auto_answer("workspace/configuration", json!([bad]));
    })
    .await;
    let pulled = |p: &serde_json::Value| {
        p["message"].as_str().unwrap_or_default().contains("the editor's `agentls` settings")
    };
    fx.client.next_notification_where("window/logMessage", pulled).await;
    fx.client.notify("workspace/didChangeConfiguration", json!({"settings": null}));
    let pulled_again = |p: &serde_json::Value| {
        p["message"].as_str().unwrap_or_default().contains("the editor's `agentls` settings")
    };
    fx.client.next_notification_where("window/logMessage", pulled_again).await;
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("newSession");
    assert_eq!(created["model"], "from-the-editor", "the good key applies");
    let warnings: Vec<String> = fx
        .client
        .notifications("window/showMessage")
        .iter()
        .filter_map(|p| p["message"].as_str().map(str::to_string))
        .filter(|m| m.contains("loop_detection_window"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("ignores these editor settings (the others apply)"), "{warnings:?}");
}

#[tokio::test]
async fn an_instruction_file_edited_just_before_a_prompt_is_in_that_prompts_request() {
    let fx = Fixture::new(plugin_capabilities()).await;
    fx.write("AGENTS.md", "Use tabs.\n");
    let id = fx.session(json!({})).await;
    for (i, rule) in ["Use spaces.", "Use two spaces.", "Use four spaces."].iter().enumerate() {
        fx.write("AGENTS.md", &format!("{rule}\n"));
        fx.mock.push(Turn::new().text("ok"));
        fx.prompt(&id, "format it").await;
        fx.client.next_event(&id, "processing_end").await;
        let body = fx.request(i);
        assert!(body.contains(rule) && !body.contains("Use tabs."), "request {i}: {body}");
    }
}

#[tokio::test]
async fn parallel_edits_are_reviewed_each_under_its_own_call_id() {
    let fx = Fixture::new(plugin_capabilities()).await;
    fx.write("src/a.rs", "a\n");
    fx.write("src/data.rs", "data\n");
    let patch = |file: &str, old: &str| {
        format!("*** Begin Patch\n*** Update File: src/{file}\n@@\n-{old}\n+{old}2\n*** End Patch")
    };
    fx.mock.push(
        Turn::new()
            .tool_call("call_data", "apply_patch", json!({"patch": patch("data.rs", "data")}))
            .tool_call("call_a", "apply_patch", json!({"patch": patch("a.rs", "a")})),
    );
    fx.mock.push(Turn::new().text("Both."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.prompt(&id, "edit both").await;
    for _ in 0..2 {
        let review = fx.client.next_notification("agentls/review").await;
        let path = review["files"][0]["path"].as_str().unwrap_or_default().to_string();
        let expected = if path.ends_with("data.rs") { "call_data" } else { "call_a" };
        assert_eq!(review["callId"], expected, "{review}");
        fx.client
            .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "reject"}))
            .await
            .expect("reject");
    }
    fx.client.next_event(&id, "processing_end").await;
}

#[tokio::test]
async fn a_prompt_without_a_session_runs_in_the_workspace_folder_of_its_context() {
    let fx = Fixture::build_folders(plugin_capabilities(), json!({"model": "m"}), |_| {}, &["other"]).await;
    let here = fx.write("src/lib.rs", LIB);
    let other_root = fx.root.parent().expect("parent").join("other");
    let there = other_root.join("main.rs");
    std::fs::write(&there, "fn main() {}\n").expect("write");
    let prompt = |path: &std::path::Path| {
        json!({"text": "explain", "context": {"uri": file_uri(path),
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2}}}})
    };
    let mut ids = Vec::new();
    for path in [&here, &there, &here] {
        fx.mock.push(Turn::new().text("ok"));
        let queued = fx.client.command("agentls.prompt", prompt(path)).await.expect("prompt");
        let id = queued["sessionId"].as_str().expect("id").to_string();
        fx.client.next_event(&id, "processing_end").await;
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "another folder gets its own session");
    assert_eq!(ids[0], ids[2], "the folder's session is reused");
    let listed = fx.client.command("agentls.listSessions", json!({})).await.expect("list");
    let root_of = |id: &str| {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == id)
            .map(|s| s["rootUri"].clone())
    };
    assert_eq!(root_of(&ids[0]), Some(json!(file_uri(&fx.root))));
    assert_eq!(root_of(&ids[1]), Some(json!(file_uri(&other_root))));
}

#[tokio::test]
async fn a_client_without_apply_edit_gets_changes_on_disk_and_its_open_files_are_left_alone() {
    let fx = Fixture::new(json!({"window": {"workDoneProgress": true}})).await;
    fx.write("src/lib.rs", LIB);
    let open = fx.write("src/open.rs", "pub fn g() {}\n");
    fx.client.open(&open, "pub fn g() {}\n", 1);
    fx.mock.push(patch_call("p1", BUMP)).push(Turn::new().text("Bumped."));
    let edit_open =
        "*** Begin Patch\n*** Update File: src/open.rs\n@@\n-pub fn g() {}\n+pub fn h() {}\n*** End Patch";
    fx.mock.push(patch_call("p2", edit_open)).push(Turn::new().text("Could not."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.client.command("agentls.configure", json!({"sessionId": id, "approval": "auto"})).await.expect("auto");
    fx.prompt(&id, "bump").await;
    fx.client.next_turn_end(&id).await;
    assert_eq!(fx.read("src/lib.rs").as_deref(), Some("pub fn f() -> u32 {\n    2\n}\n"));
    assert!(fx.client.requests("workspace/applyEdit").is_empty(), "the client takes no workspace edits");

    fx.prompt(&id, "rename g").await;
    fx.client.next_turn_end(&id).await;
    let told = fx.request(3);
    assert!(told.contains("does not accept edits from the server"), "{told}");
    assert_eq!(fx.read("src/open.rs").as_deref(), Some("pub fn g() {}\n"));
}

const RENAME_FN: &str = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-pub fn f() -> u32 {\n+pub fn g() -> u32 {\n*** End Patch";

#[tokio::test]
async fn edits_right_after_an_applied_edit_are_computed_on_the_text_the_editor_holds() {
    // An editor that reports its applied edits late (Neovim debounces, eglot waits for idle):
    // here the first report never comes before the second edit.
    let caps = json!({"window": {"workDoneProgress": true}, "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}}});
    let fx = Fixture::new(caps).await;
    let lib = fx.write("src/lib.rs", LIB);
    fx.client.open(&lib, LIB, 1);
    fx.client.manual("workspace/applyEdit");
    fx.mock.push(
        patch_call("p1", BUMP).tool_call("p2", "apply_patch", json!({"patch": RENAME_FN})).tool_call(
            "r3",
            "read_file",
            json!({"file_path": "src/lib.rs"}),
        ),
    );
    fx.mock.push(Turn::new().text("Both done."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.client.command("agentls.configure", json!({"sessionId": id, "approval": "auto"})).await.expect("auto");
    fx.prompt(&id, "bump and rename").await;

    let first = fx.client.next_request("workspace/applyEdit").await;
    let first_edit = &first.params["edit"]["documentChanges"][0];
    assert_eq!(first_edit["textDocument"]["version"], 1);
    assert_eq!(first_edit["edits"][0]["newText"], "    2\n");
    fx.client.respond(&first, json!({"applied": true}));

    let second = fx.client.next_request("workspace/applyEdit").await;
    let second_edit = &second.params["edit"]["documentChanges"][0];
    assert_eq!(
        second_edit["textDocument"]["version"],
        Value::Null,
        "the editor's version after the unreported edit is unknown: sent unversioned"
    );
    assert_eq!(
        second_edit["edits"],
        json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "newText": "pub fn g() -> u32 {\n"}]),
        "computed on the text after the first edit"
    );
    fx.client.respond(&second, json!({"applied": true}));
    // The editor reports both edits at last.
    let both = "pub fn g() -> u32 {\n    2\n}\n";
    fx.client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": file_uri(&lib), "version": 5}, "contentChanges": [{"text": both}]}),
    );
    fx.client.next_turn_end(&id).await;
    let read = fx.request(1);
    assert!(
        read.contains("pub fn g() -> u32 {") && read.contains("    2"),
        "read_file after the edits sees both, before the editor reported them: {read}"
    );
    assert_eq!(fx.read("src/lib.rs").as_deref(), Some(LIB), "nothing was written behind the editor");
}

#[tokio::test]
async fn a_plain_client_can_cancel_a_turn_waiting_on_an_unanswered_question() {
    let caps = json!({"window": {"workDoneProgress": true}, "workspace": {"applyEdit": true}});
    let fx = Fixture::new(caps).await;
    fx.client.manual("window/showMessageRequest");
    let lib = fx.write("src/lib.rs", LIB);
    fx.client.open(&lib, LIB, 1);
    fx.mock.push(Turn::new().tool_call("s1", "shell", json!({"command": "echo hi"})));
    fx.mock.push(Turn::new().text("Stopped."));
    let id = fx.session(json!({"profile": "openai"})).await;
    let code_actions = json!({"textDocument": {"uri": file_uri(&lib)},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []}});
    let idle =
        fx.client.request("textDocument/codeAction", code_actions.clone()).await.expect("code actions");
    assert!(!idle.to_string().contains("cancel the running turn"), "nothing to cancel: {idle}");
    fx.prompt(&id, "say hi").await;
    // The user dismissed the question without an answer (C-g): it stays open in the editor.
    let question = fx.client.next_request("window/showMessageRequest").await;
    assert!(question.params["message"].as_str().unwrap_or_default().contains("echo hi"));
    let running = fx.client.request("textDocument/codeAction", code_actions).await.expect("code actions");
    let cancel = running
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "agentls: cancel the running turn")
        .cloned()
        .unwrap_or_else(|| panic!("a cancel action while the turn runs: {running}"));
    assert_eq!(cancel["command"]["command"], "agentls.cancel");
    let args = cancel["command"]["arguments"][0].clone();
    fx.client.command("agentls.cancel", args).await.expect("cancel");
    let end = fx.client.next_turn_end(&id).await;
    assert_eq!(end["value"]["message"], "cancelled", "{end}");
}

#[tokio::test]
async fn a_plain_client_sees_the_whole_answer() {
    let caps = json!({"window": {"workDoneProgress": true, "showDocument": {"support": true}}, "workspace": {"applyEdit": true}});
    let fx = Fixture::new(caps).await;
    fx.client.manual("window/showDocument");
    let short = "First line of a short answer.\nSecond line.";
    let long: String = (1..=40).map(|i| format!("Line {i} of a long answer about the code.\n")).collect();
    fx.mock.push(Turn::new().text(short));
    fx.mock.push(Turn::new().text(&long));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.prompt(&id, "short please").await;
    fx.client.next_turn_end(&id).await;
    let shown = fx.client.next_notification("window/showMessage").await;
    assert_eq!(shown["message"], format!("agentls: {short}"), "every line of a short answer");

    fx.prompt(&id, "long please").await;
    let show = fx.client.next_request("window/showDocument").await;
    let uri = show.params["uri"].as_str().expect("uri");
    let path = url::Url::parse(uri).expect("uri").to_file_path().expect("file uri");
    assert_eq!(
        std::fs::read_to_string(&path).expect("the answer file"),
        long,
        "the whole answer, as a document"
    );
    fx.client.respond(&show, json!({"success": true}));
    let told = fx.client.next_notification("window/showMessage").await;
    let told = told["message"].as_str().unwrap_or_default();
    assert!(
        told.starts_with("agentls: Line 1 of a long answer") && told.contains(&path.display().to_string()),
        "{told}"
    );
    let logged = fx.client.notifications("window/logMessage");
    assert!(
        logged.iter().any(|m| m["message"] == format!("agentls: {}", long.trim())),
        "the full text is logged too"
    );
}

#[tokio::test]
async fn a_permission_question_follows_the_events_of_its_call() {
    let fx = Fixture::new(plugin_capabilities()).await;
    fx.mock.push(Turn::new().text("Let me look for it first.").tool_call(
        "s1",
        "shell",
        json!({"command": "echo order"}),
    ));
    fx.mock.push(Turn::new().text("Done."));
    let id = fx.session(json!({"profile": "openai"})).await;
    fx.prompt(&id, "run it").await;
    let ask = fx.client.next_notification("agentls/permission").await;
    let messages = fx.client.all_messages();
    let position = |pred: &dyn Fn(&Value) -> bool| messages.iter().position(pred);
    let asked = position(&|m| m["method"] == "agentls/permission").expect("asked");
    let started = position(&|m| {
        m["method"] == "agentls/event"
            && m["params"]["kind"] == "tool_call_start"
            && m["params"]["data"]["call_id"] == "s1"
    })
    .expect("the call's tool_call_start was sent before its question");
    let text = position(&|m| m["method"] == "agentls/event" && m["params"]["kind"] == "assistant_text_delta")
        .expect("the text before the call was sent");
    assert!(text < started && started < asked, "text {text}, start {started}, question {asked}");
    fx.client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_once"}),
        )
        .await
        .expect("answer");
    fx.client.next_event(&id, "processing_end").await;
}

#[tokio::test]
async fn a_plugin_that_asks_for_a_pace_gets_fewer_longer_deltas_with_the_same_text() {
    let mut caps = plugin_capabilities();
    caps["experimental"]["agentls"]["deltaIntervalMs"] = json!(50);
    let fx = Fixture::new(caps).await;
    let text: String = (0..40).map(|i| format!("w{i} ")).collect();
    // One character per delta, a millisecond apart: about 170 deltas over 170 ms or more.
    fx.mock.push(Turn::new().text(&text).fragment(1).delay(std::time::Duration::from_millis(1)));
    let id = fx.session(json!({})).await;
    fx.prompt(&id, "talk").await;
    fx.client.next_event(&id, "processing_end").await;
    let deltas: Vec<String> = fx
        .client
        .notifications("agentls/event")
        .iter()
        .filter(|e| e["kind"] == "assistant_text_delta")
        .map(|e| e["data"]["delta"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(deltas.concat(), text, "the same text");
    assert!(deltas.len() < 20, "at most one delta per 50 ms: {} deltas", deltas.len());
}
