//! Undo, redo and rewind of an agent's turn through the real binary (`agentls serve`) and the
//! loopback mock provider: what the turn's edit tools and shell commands changed is reverted,
//! the user's later edits are kept, a conflict changes nothing, a file over the size cap is
//! reported as not covered, and a session resumed after the server was killed can still undo
//! its last turn.

use crate::support::lsp_client;
use crate::support::mock_provider;
use crate::support::server_env::{LspServer, ServerFolder};
use crate::support::text_edits::apply_edits;

use std::path::{Path, PathBuf};

use lsp_client::{LspClient, file_uri, plugin_capabilities};
use mock_provider::{Dialect, Turn};
use serde_json::{Value, json};

const KEY: &str = "sk-test-UNDO-4242";
const LIB: &str = "pub fn one() -> u32 {\n    1\n}\n\npub fn two() -> u32 {\n    2\n}\n";

/// A plugin client that cannot edit (no `workspace/applyEdit`): every change is written on disk
/// by the server, as for files an editor does not have open.
fn disk_client() -> Value {
    json!({"window": {"workDoneProgress": true}, "experimental": {"agentls": {"version": 1}}})
}

/// What the server of these tests keeps besides its folder: the capabilities it is initialized
/// with, again after a restart.
struct Undo {
    capabilities: Value,
}

type Server = LspServer<Undo>;

impl Server {
    async fn start(dialect: Dialect, capabilities: Value) -> Self {
        Self::start_with(dialect, capabilities, None).await
    }

    /// With `user_config` as the user's configuration file.
    async fn start_with(dialect: Dialect, capabilities: Value, user_config: Option<&str>) -> Self {
        let folder = ServerFolder::new(dialect, KEY, &[("src/lib.rs", LIB)]).await;
        if let Some(text) = user_config {
            folder.user_config(text);
        }
        let server = folder.start(Undo { capabilities });
        server.initialize(&server.client).await;
        server
    }

    /// Initializes `client`, a server in this folder, as these tests do.
    async fn initialize(&self, client: &LspClient) {
        let options = json!({"model": "test-model", "approval": "auto", "shell": {"permission": "allow"}});
        client.initialize(&self.root, self.extra.capabilities.clone(), options).await;
        client.auto_answer("agentls/saveDocuments", json!({}));
    }

    /// Another server in the same homes, initialized the same way.
    async fn another(&self) -> LspClient {
        let client = self.env.spawn(&self.root);
        self.initialize(&client).await;
        client
    }

    /// Kills the server (SIGKILL) and starts another in the same homes.
    async fn kill_and_restart(&mut self) {
        self.kill_and_respawn().await;
        self.initialize(&self.client).await;
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    fn uri(&self, rel: &str) -> String {
        file_uri(&self.path(rel))
    }

    /// A new session of `profile`.
    async fn session(&self, profile: &str) -> String {
        let created =
            self.client.command("agentls.newSession", json!({"profile": profile})).await.expect("newSession");
        created["sessionId"].as_str().expect("sessionId").to_string()
    }

    /// One input whose model makes `calls` (one step each), then answers; returns at its end.
    async fn turn(&self, id: &str, text: &str, calls: Vec<(&str, Value)>) {
        for (n, (tool, arguments)) in calls.into_iter().enumerate() {
            self.mock.push(Turn::new().tool_call(&format!("c{n}"), tool, arguments));
        }
        self.mock.push(Turn::new().text("Done."));
        self.client.command("agentls.prompt", json!({"sessionId": id, "text": text})).await.expect("prompt");
        let end = self.client.next_turn_end(id).await;
        assert_eq!(end["value"]["message"], "completed", "{end}");
    }

    async fn undo(&self, args: Value) -> Result<Value, Value> {
        self.client.command("agentls.undoTurn", args).await
    }

    async fn finish(self) {
        self.client.shutdown().await;
        let status = self.client.exit_status().await;
        assert_eq!(status.code(), Some(0), "stderr:\n{}", self.client.stderr_text());
        for message in self.client.all_messages() {
            assert!(!message.to_string().contains(KEY), "the key leaked: {message}");
        }
        drop(self.dir);
    }
}

fn edit(path: &Path, old: &str, new: &str) -> (&'static str, Value) {
    ("edit_file", json!({"file_path": path.display().to_string(), "old_string": old, "new_string": new}))
}

fn shell(command: &str) -> (&'static str, Value) {
    ("shell", json!({"command": command}))
}

#[tokio::test]
async fn undo_spares_a_line_the_user_typed_after_the_turn_and_redo_brings_the_turn_back() {
    let server = Server::start(Dialect::Anthropic, disk_client()).await;
    let id = server.session("anthropic").await;
    let lib = server.path("src/lib.rs");
    server
        .turn(
            &id,
            "make one ten",
            vec![
                ("read_file", json!({"file_path": lib.display().to_string()})),
                edit(&lib, "    1\n", "    10\n"),
            ],
        )
        .await;
    let turned = LIB.replace("    1\n", "    10\n");
    assert_eq!(server.read("src/lib.rs").as_deref(), Some(turned.as_str()));
    // The user types a line after the turn.
    std::fs::write(&lib, format!("{turned}// mine\n")).expect("user edit");

    let undone = server.undo(json!({"sessionId": id})).await.expect("undoTurn");
    assert_eq!(
        undone,
        json!({"sessionId": id, "turnIds": [1], "files": [{"uri": server.uri("src/lib.rs"), "op": "modify"}],
               "notCovered": []})
    );
    assert_eq!(
        server.read("src/lib.rs"),
        Some(format!("{LIB}// mine\n")),
        "the agent's edit is gone, the user's line kept"
    );

    let redone = server.client.command("agentls.redoTurn", json!({"sessionId": id})).await.expect("redoTurn");
    assert_eq!(redone["turnIds"], json!([1]));
    assert_eq!(server.read("src/lib.rs"), Some(format!("{turned}// mine\n")));
    let nothing =
        server.client.command("agentls.redoTurn", json!({"sessionId": id})).await.expect_err("nothing");
    assert!(nothing["message"].as_str().unwrap_or_default().contains("nothing to redo"), "{nothing}");
    server.finish().await;
}

#[tokio::test]
async fn undo_reverts_what_shell_commands_created_modified_and_deleted_and_reports_a_file_over_the_cap() {
    let server = Server::start(Dialect::Anthropic, disk_client()).await;
    std::fs::write(server.path("config.txt"), "mode = slow\n").expect("write");
    std::fs::write(server.path("old.txt"), "remove me\n").expect("write");
    std::fs::write(server.path("gen.sh"), "mkdir -p gen && printf 'generated\\n' > gen/out.rs\n")
        .expect("write");
    let big = "x".repeat(2 * 1024 * 1024);
    std::fs::write(server.path("big.log"), &big).expect("write");
    std::fs::write(server.path(".gitignore"), "ignored/\n").expect("write");
    let id = server.session("anthropic").await;
    server
        .turn(
            &id,
            "speed it up",
            vec![
                shell("sed -i 's/slow/fast/' config.txt"),
                shell("sh gen.sh && rm old.txt && echo more >> big.log && mkdir -p ignored && echo x > ignored/cache"),
            ],
        )
        .await;
    assert_eq!(server.read("config.txt").as_deref(), Some("mode = fast\n"));
    assert_eq!(server.read("gen/out.rs").as_deref(), Some("generated\n"));
    assert_eq!(server.read("old.txt"), None);

    let undone = server.undo(json!({"sessionId": id})).await.expect("undoTurn");
    let mut files: Vec<(String, String)> = undone["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| (f["uri"].as_str().unwrap().to_string(), f["op"].as_str().unwrap().to_string()))
        .collect();
    files.sort();
    let mut expected = vec![
        (server.uri("config.txt"), "modify".to_string()),
        (server.uri("gen/out.rs"), "delete".to_string()),
        (server.uri("old.txt"), "create".to_string()),
    ];
    expected.sort();
    assert_eq!(files, expected);
    assert_eq!(undone["notCovered"], json!([{"uri": server.uri("big.log"), "reason": "too_large"}]));
    assert_eq!(server.read("config.txt").as_deref(), Some("mode = slow\n"));
    assert_eq!(server.read("old.txt").as_deref(), Some("remove me\n"));
    assert_eq!(server.read("gen/out.rs"), None);
    assert_eq!(server.read("big.log"), Some(format!("{big}more\n")), "not covered: left as it is");
    assert_eq!(server.read("ignored/cache").as_deref(), Some("x\n"), "ignored paths are not tracked");
    assert!(!server.root.join(".git").exists(), "nothing is written into the workspace");
    server.finish().await;
}

#[tokio::test]
async fn undo_reverses_an_apply_patch_move_and_a_conflict_changes_nothing() {
    let server = Server::start(Dialect::OpenAiResponses, disk_client()).await;
    let id = server.session("openai").await;
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n*** Move to: src/numbers.rs\n@@ pub fn two() -> u32 {\n-    2\n+    20\n*** End Patch";
    server.turn(&id, "move it", vec![("apply_patch", json!({"patch": patch}))]).await;
    let moved = LIB.replace("    2\n", "    20\n");
    assert_eq!(server.read("src/numbers.rs").as_deref(), Some(moved.as_str()));
    assert_eq!(server.read("src/lib.rs"), None);

    // The user changes the line the turn changed: undo refuses and changes nothing.
    let clash = moved.replace("    20\n", "    200\n");
    std::fs::write(server.path("src/numbers.rs"), &clash).expect("user edit");
    let refused = server.undo(json!({"sessionId": id})).await.expect_err("conflict");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(message.contains("numbers.rs") && message.contains("nothing was changed"), "{refused}");
    assert_eq!(server.read("src/numbers.rs").as_deref(), Some(clash.as_str()));
    assert_eq!(server.read("src/lib.rs"), None);

    // A change elsewhere in the file is kept through the move back.
    std::fs::write(server.path("src/numbers.rs"), moved.replace("    1\n", "    1 // mine\n"))
        .expect("user edit");
    let undone = server.undo(json!({"sessionId": id})).await.expect("undoTurn");
    assert_eq!(
        undone["files"],
        json!([{"uri": server.uri("src/numbers.rs"), "op": "rename", "newUri": server.uri("src/lib.rs")}])
    );
    assert_eq!(server.read("src/lib.rs"), Some(LIB.replace("    1\n", "    1 // mine\n")));
    assert_eq!(server.read("src/numbers.rs"), None);
    server.finish().await;
}

/// Answers the next `workspace/applyEdit` of one open document as an editor does: applies it
/// to `buffer` and reports the change; returns the buffer's new text.
async fn apply_to_buffer(client: &LspClient, path: &Path, buffer: &str, version: i32) -> String {
    let apply = client.next_request("workspace/applyEdit").await;
    let change = &apply.params["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], file_uri(path), "{}", apply.params);
    let text = apply_edits(buffer, change["edits"].as_array().expect("edits"));
    client.respond(&apply, json!({"applied": true}));
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": file_uri(path), "version": version}, "contentChanges": [{"text": text}]}),
    );
    text
}

#[tokio::test]
async fn undo_of_an_edit_to_a_buffer_with_unsaved_changes_goes_through_apply_edit() {
    let server = Server::start(Dialect::Anthropic, plugin_capabilities()).await;
    server.client.manual("workspace/applyEdit");
    let lib = server.path("src/lib.rs");
    let unsaved = LIB.replace("pub fn two", "/// two\npub fn two");
    server.client.open(&lib, LIB, 1);
    server.client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": file_uri(&lib), "version": 2}, "contentChanges": [{"text": unsaved}]}),
    );
    let id = server.session("anthropic").await;
    server.mock.push(Turn::new().tool_call(
        "c0",
        "read_file",
        json!({"file_path": lib.display().to_string()}),
    ));
    let (tool, arguments) = edit(&lib, "    1\n", "    10\n");
    server.mock.push(Turn::new().tool_call("c1", tool, arguments));
    server.mock.push(Turn::new().text("Done."));
    server.client.command("agentls.prompt", json!({"sessionId": id, "text": "ten"})).await.expect("prompt");
    let edited = apply_to_buffer(&server.client, &lib, &unsaved, 3).await;
    assert_eq!(edited, unsaved.replace("    1\n", "    10\n"));
    server.client.next_event(&id, "processing_end").await;

    // The user types more, unsaved; the undo edits the buffer and keeps both of the user's changes.
    let typed = edited.replace("    2\n", "    2 // typed\n");
    server.client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": file_uri(&lib), "version": 4}, "contentChanges": [{"text": typed}]}),
    );
    let (undone, reverted) =
        tokio::join!(server.undo(json!({"sessionId": id})), apply_to_buffer(&server.client, &lib, &typed, 5));
    assert_eq!(reverted, typed.replace("    10\n", "    1\n"));
    let undone = undone.expect("undoTurn");
    assert_eq!(undone["files"], json!([{"uri": file_uri(&lib), "op": "modify"}]));
    assert_eq!(server.read("src/lib.rs").as_deref(), Some(LIB), "nothing written behind the editor's back");
    server.finish().await;
}

#[tokio::test]
async fn a_session_resumed_after_a_restart_undoes_its_last_turn_and_rewinds_the_conversation() {
    let mut server = Server::start(Dialect::Anthropic, disk_client()).await;
    let id = server.session("anthropic").await;
    server.turn(&id, "first", vec![shell("echo one > notes.txt")]).await;
    server.turn(&id, "second", vec![shell("echo two >> notes.txt")]).await;
    assert_eq!(server.read("notes.txt").as_deref(), Some("one\ntwo\n"));
    server.kill_and_restart().await;

    server.client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    let undone = server.undo(json!({"sessionId": id, "rewind": true})).await.expect("undoTurn");
    assert_eq!(undone["turnIds"], json!([2]));
    assert!(undone["rewound"].as_u64().is_some_and(|n| n >= 3), "{undone}");
    assert_eq!(server.read("notes.txt").as_deref(), Some("one\n"));
    let lines = server.history_lines(&id).await;
    assert!(lines.iter().any(|l| l == "user: first"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("second")), "the second input is cut: {lines:?}");

    // The transcript holds the shorter history: a session resumed again has it too.
    server.kill_and_restart().await;
    server.client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    let again = server.history_lines(&id).await;
    assert_eq!(again, lines);
    let first = server.undo(json!({"sessionId": id, "turnId": 1})).await.expect("undo the first");
    assert_eq!(first["turnIds"], json!([1]));
    assert_eq!(server.read("notes.txt"), None);
    server.finish().await;
}

/// The `data` of every `agentls/event` of `kind` the session sent so far.
fn events(server: &Server, id: &str, kind: &str) -> Vec<Value> {
    let events = server.client.notifications("agentls/event").into_iter();
    events.filter(|e| e["sessionId"] == id && e["kind"] == kind).map(|e| e["data"].clone()).collect()
}

/// `agentls.history`'s user entries as `(text, turnId)`, and its `undone` and `redoable`.
async fn history_turns(server: &Server, id: &str) -> (Vec<(String, Value)>, Value, Value) {
    let history = server.client.command("agentls.history", json!({"sessionId": id})).await.expect("history");
    let users = history["entries"].as_array().expect("entries").iter().filter(|e| e["kind"] == "user");
    let turns =
        users.map(|e| (e["text"].as_str().unwrap_or_default().to_string(), e["turnId"].clone())).collect();
    (turns, history["undone"].clone(), history["redoable"].clone())
}

#[tokio::test]
async fn the_events_and_the_history_name_each_turn_and_say_which_are_undone() {
    let mut server = Server::start(Dialect::Anthropic, disk_client()).await;
    let id = server.session("anthropic").await;
    server.turn(&id, "first", vec![shell("echo one > a.txt")]).await;
    server.turn(&id, "second", vec![shell("echo two > b.txt")]).await;
    let inputs = events(&server, &id, "user_input");
    assert_eq!(
        inputs,
        [json!({"content": "first", "turn_id": 1}), json!({"content": "second", "turn_id": 2})]
    );
    assert_eq!(events(&server, &id, "undo_state"), Vec::<Value>::new(), "nothing undone yet");

    server.undo(json!({"sessionId": id, "turnId": 1})).await.expect("undoTurn");
    let undone = server.client.next_event(&id, "undo_state").await;
    assert_eq!(
        undone["data"],
        json!({"undone": [1, 2], "redoable": [1, 2], "direction": "undo", "turn_ids": [1, 2]})
    );
    let (turns, undone, redoable) = history_turns(&server, &id).await;
    assert_eq!(turns, [("first".to_string(), json!(1)), ("second".to_string(), json!(2))]);
    assert_eq!((undone, redoable), (json!([1, 2]), json!([1, 2])));

    server.client.command("agentls.redoTurn", json!({"sessionId": id})).await.expect("redoTurn");
    let redone = server.client.next_event(&id, "undo_state").await;
    assert_eq!(
        redone["data"],
        json!({"undone": [], "redoable": [], "direction": "redo", "turn_ids": [1, 2]})
    );

    // A new turn that changes files after an undo takes the redo away, and says so.
    server.undo(json!({"sessionId": id})).await.expect("undo the second");
    server.client.next_event(&id, "undo_state").await;
    server.turn(&id, "third", vec![shell("echo three > c.txt")]).await;
    let taken = server.client.next_event(&id, "undo_state").await;
    assert_eq!(taken["data"], json!({"undone": [2], "redoable": []}));
    assert_eq!(events(&server, &id, "user_input")[2], json!({"content": "third", "turn_id": 3}));

    // A session reopened on a new server still names its turns and which are undone.
    server.kill_and_restart().await;
    server.client.command("agentls.resumeSession", json!({"sessionId": id})).await.expect("resume");
    let (turns, undone, redoable) = history_turns(&server, &id).await;
    let ids: Vec<&Value> = turns.iter().map(|(_, turn)| turn).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)]);
    assert_eq!((undone, redoable), (json!([2]), Value::Null), "no redo: the field is left out");
    server.finish().await;
}

/// A plain client (eglot answers no server request while its command waits) is answered at once;
/// the outcome comes as a message.
#[tokio::test]
async fn a_plain_client_is_answered_at_once_and_told_the_outcome() {
    let server = Server::start(Dialect::Anthropic, json!({"window": {"workDoneProgress": true}})).await;
    std::fs::write(server.path("big.log"), "x".repeat(2 * 1024 * 1024)).expect("write");
    let id = server.session("anthropic").await;
    server.turn(&id, "note", vec![shell("echo one > notes.txt && echo more >> big.log")]).await;
    let queued = server.undo(json!({"sessionId": id})).await.expect("undoTurn");
    assert_eq!(
        queued,
        json!({"sessionId": id, "turnIds": [], "files": [], "notCovered": [], "queued": true})
    );
    let told = server
        .client
        .next_notification_where("window/showMessage", |m| {
            m["message"].as_str().is_some_and(|t| t.contains("undid turn 1"))
        })
        .await;
    assert_eq!(
        told["message"], "agentls: undid turn 1 (1 file); not covered, left as they are: big.log",
        "files named as the user sees them"
    );
    assert_eq!(server.read("notes.txt"), None);
    server.undo(json!({"sessionId": id})).await.expect("queued");
    let refused = server.client.next_notification_where("window/showMessage", |m| m["type"] == 2).await;
    assert!(refused["message"].as_str().unwrap_or_default().contains("nothing to undo"), "{refused}");
    server.finish().await;
}

#[tokio::test]
async fn undo_reverts_what_an_mcp_tool_and_code_modes_python_wrote_on_their_own() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/writer.py");
    let config = format!(
        "[mcp_servers.writer]\ncommand = \"python3\"\nargs = [\"{}\"]\ntool_permissions = {{ write_file = \"allow\" }}\n",
        fixture.display()
    );
    let server = Server::start_with(Dialect::Anthropic, disk_client(), Some(&config)).await;
    let lib = server.path("src/lib.rs");
    let id = server.session("anthropic").await;
    let write = json!({"path": lib.display().to_string(), "text": "pub fn written() {}\n"});
    let made = json!({"path": server.path("made.txt").display().to_string(), "text": "made\n"});
    server
        .turn(
            &id,
            "write through the server",
            vec![("mcp__writer__write_file", write), ("mcp__writer__write_file", made)],
        )
        .await;
    assert_eq!(server.read("src/lib.rs").as_deref(), Some("pub fn written() {}\n"));
    let undone = server.undo(json!({"sessionId": id})).await.expect("undoTurn");
    assert_eq!(undone["notCovered"], json!([]), "{undone}");
    assert_eq!(server.read("src/lib.rs").as_deref(), Some(LIB), "the MCP call's write is undone");
    assert_eq!(server.read("made.txt"), None, "the file the MCP call created is removed");

    let code = server.session("code").await;
    let python = format!("open({:?}, 'a').write('// from python\\n')", lib.display().to_string());
    server.turn(&code, "append in python", vec![("python", json!({"code": python}))]).await;
    assert_eq!(server.read("src/lib.rs"), Some(format!("{LIB}// from python\n")));
    let undone = server.undo(json!({"sessionId": code})).await.expect("undoTurn");
    assert_eq!(undone["notCovered"], json!([]), "{undone}");
    assert_eq!(server.read("src/lib.rs").as_deref(), Some(LIB), "the Python call's write is undone");
    server.finish().await;
}

/// One process writes a session at a time: while one server has a session open, another server
/// cannot resume it and `agentls sessions undo` from a shell is refused with nothing changed; a
/// resume waits a few seconds for a server that is exiting; with no server, the undo works.
#[tokio::test]
async fn a_session_open_in_one_server_is_neither_resumed_nor_undone_from_another_process() {
    let server = Server::start(Dialect::Anthropic, disk_client()).await;
    let id = server.session("anthropic").await;
    server.turn(&id, "note", vec![shell("echo one > notes.txt")]).await;
    let busy =
        |text: &str| text.contains("open in another agentls process") && text.contains("close it there");

    let second = server.another().await;
    let refused = second
        .command("agentls.resumeSession", json!({"sessionId": id}))
        .await
        .expect_err("held by the first");
    assert!(busy(refused["message"].as_str().unwrap_or_default()), "{refused}");
    let undo_from_shell = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
            .args(["sessions", "undo", &id])
            .env_clear()
            .envs(server.env.pairs())
            .output()
            .expect("agentls sessions undo")
    };
    let out = undo_from_shell();
    assert!(!out.status.success() && busy(&String::from_utf8_lossy(&out.stderr)), "{out:?}");
    assert_eq!(server.read("notes.txt").as_deref(), Some("one\n"), "nothing was undone");

    // A resume that starts while the first server is still exiting (an editor restarting its
    // server) waits for it to let go, a few seconds at most.
    let (resumed, ()) =
        tokio::join!(second.command("agentls.resumeSession", json!({"sessionId": id})), async {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            server.client.shutdown().await;
            assert_eq!(server.client.exit_status().await.code(), Some(0));
        });
    assert_eq!(resumed.expect("handed over")["resumed"], true);
    let out = undo_from_shell();
    assert!(busy(&String::from_utf8_lossy(&out.stderr)), "the second server holds it now: {out:?}");
    second.shutdown().await;
    second.exit_status().await;
    let out = undo_from_shell();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.read("notes.txt"), None, "undone once no server has the session open");
}
