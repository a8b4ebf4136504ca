//! Review and apply through the editor: `agentls/review` → partial accept → `workspace/applyEdit`
//! on an unsaved buffer with its version → the model is told what was rejected and why; the
//! user typing during the review (rebase); `applied: false`; plain clients without
//! `documentChanges`; cancel rejects a pending review; a path the change vacates (a delete, or
//! a move's source) filled again by a create or a move, through resource operations and on disk.
//!
//! The edits come from a small test tool that proposes any change set (a whole new text per
//! file), so these tests pin the server's side of the editor port independently of the edit tools.

use crate::support::lsp_client;
use crate::support::mock_provider;

use std::path::PathBuf;
use std::sync::Arc;

use agentls::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentls::workspace::{ChangeSet, FileChange, Snapshot};
use async_trait::async_trait;
use lsp_client::{LspClient, file_uri, plain_capabilities, plugin_capabilities};
use mock_provider::{Dialect, MockProvider, Turn};
use serde_json::{Value, json};

/// `path` as the agent sees it.
async fn read(ctx: &ToolContext, path: &str) -> Result<Snapshot, ToolError> {
    let resolved = ctx.resolve(path)?;
    ctx.workspace.read(&*ctx.env, &resolved).await.map_err(|e| ToolError::new(e.to_string()))
}

/// `propose_changes {changes: [{op: modify|create|delete|move, path, to?, text?}]}`: proposes
/// one change set with these operations, in this order (a whole new text for a modified or
/// moved file), and reports the outcome. The edit tools never build some of these sets: a patch
/// that deletes a file and adds it again proposes a modification.
struct ProposeChanges;

#[async_trait]
impl Tool for ProposeChanges {
    fn name(&self) -> &str {
        "propose_changes"
    }
    fn description(&self) -> &str {
        "Propose a change set."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"changes": {"type": "array"}}, "required": ["changes"]})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut files = Vec::new();
        for change in args["changes"].as_array().into_iter().flatten() {
            let path = change["path"].as_str().unwrap_or_default();
            let text = change["text"].as_str().unwrap_or_default();
            files.push(match change["op"].as_str() {
                Some("modify") => FileChange::modify(read(ctx, path).await?, path, text),
                Some("create") => FileChange::create(ctx.resolve(path)?, path, text),
                Some("delete") => FileChange::delete(read(ctx, path).await?, path),
                Some("move") => FileChange::modify(read(ctx, path).await?, path, text)
                    .moved_to(ctx.resolve(change["to"].as_str().unwrap_or_default())?),
                op => return Err(ToolError::new(format!("unknown op {op:?}"))),
            });
        }
        let set = ChangeSet::new(files).map_err(|e| ToolError::new(e.to_string()))?;
        let outcome = ctx.editor.propose(set).await.map_err(|e| ToolError::new(e.to_string()))?;
        match outcome.refusal_message() {
            Some(message) => Err(ToolError::new(message)),
            None => Ok(ToolOutput::text(format!("Applied.{}", outcome.notes()))),
        }
    }
}

/// The arguments of `propose_changes` for a whole new text of `path`.
fn modify(path: &str, text: &str) -> Value {
    json!({"changes": [{"op": "modify", "path": path, "text": text}]})
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    mock: MockProvider,
    client: LspClient,
}

const DISK: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

async fn fixture(capabilities: Value) -> Fixture {
    // Generous: the deadline only bounds a hang here.
    fixture_with_deadline(capabilities, std::time::Duration::from_secs(30)).await
}

async fn fixture_with_deadline(capabilities: Value, request_deadline: std::time::Duration) -> Fixture {
    fixture_with_deadlines(capabilities, request_deadline, std::time::Duration::from_secs(600)).await
}

async fn fixture_with_deadlines(
    capabilities: Value,
    request_deadline: std::time::Duration,
    question_deadline: std::time::Duration,
) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join("a.txt"), DISK).expect("write");
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let mut env = mock.env();
    env.push(("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()));
    env.push(("AGENTLS_CONFIG".into(), root.join("none.toml").display().to_string()));
    let mut options = agentls::lsp::ServerOptions::from_env(agentls::config::Env::from_pairs(env));
    options.data_dir = None;
    options.deadlines.request = request_deadline;
    options.deadlines.human = question_deadline;
    options.extra_tools = vec![Arc::new(ProposeChanges)];
    let client = LspClient::in_process(options);
    client.initialize(&root, capabilities, json!({"model": "m"})).await;
    client.manual("workspace/applyEdit");
    Fixture { _dir: dir, root, mock, client }
}

async fn start_turn(fx: &Fixture, new_text: &str) -> String {
    fx.mock.push(Turn::new().tool_call("e1", "propose_changes", modify("a.txt", new_text)));
    fx.mock.push(Turn::new().text("ok"));
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("session");
    let id = created["sessionId"].as_str().unwrap().to_string();
    fx.client
        .command("agentls.prompt", json!({"sessionId": id, "text": "edit a.txt"}))
        .await
        .expect("prompt");
    id
}

fn tool_result_text(fx: &Fixture) -> String {
    fx.mock.requests().get(1).map(|r| r.body.to_string()).unwrap_or_default()
}

#[tokio::test]
async fn partial_accept_applies_to_the_unsaved_buffer_and_tells_the_model_why() {
    let fx = fixture(plugin_capabilities()).await;
    let path = fx.root.join("a.txt");
    // The buffer differs from the disk and is unsaved.
    fx.client.open(&path, DISK, 1);
    fx.client.change(&path, 2, [2, 0, 2, 5], "THREE (typed)");
    let id = start_turn(&fx, "ONE\ntwo\nTHREE (typed)\nfour\nfive\nsix\nSEVEN\n").await;

    let review = fx.client.next_notification("agentls/review").await;
    assert_eq!(review["sessionId"], id.as_str());
    assert_eq!(review["callId"], "e1");
    let file = &review["files"][0];
    assert_eq!((file["uri"].clone(), file["op"].clone()), (json!(file_uri(&path)), json!("modify")));
    assert_eq!(file["hunks"].as_array().unwrap().len(), 2, "{file}");
    assert!(file["diff"].as_str().unwrap().contains("+SEVEN"));

    let err = fx
        .client
        .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "accept", "files": [{"uri": file["uri"], "acceptedHunks": [5]}]}))
        .await
        .unwrap_err();
    assert_eq!(err["data"], "files[0].acceptedHunks");
    fx.client
        .command(
            "agentls.resolveReview",
            json!({"reviewId": review["reviewId"], "decision": "accept", "files": [{"uri": file["uri"], "acceptedHunks": [0]}], "feedback": "keep seven lowercase"}),
        )
        .await
        .expect("resolve");

    let apply = fx.client.next_request("workspace/applyEdit").await;
    let edit = &apply.params["edit"]["documentChanges"][0];
    assert_eq!(edit["textDocument"], json!({"uri": file_uri(&path), "version": 2}));
    assert_eq!(
        edit["edits"],
        json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "newText": "ONE\n"}])
    );
    fx.client.respond(&apply, json!({"applied": true}));
    fx.client.next_event(&id, "processing_end").await;
    let told = tool_result_text(&fx);
    assert!(told.contains("rejected hunks [1]") && told.contains("keep seven lowercase"), "{told}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), DISK, "nothing was written behind the editor's back");
}

#[tokio::test]
async fn user_typing_during_review_is_rebased_and_applied_false_is_an_error() {
    let fx = fixture(plugin_capabilities()).await;
    let path = fx.root.join("a.txt");
    fx.client.open(&path, DISK, 1);
    let id = start_turn(&fx, "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n").await;
    let review = fx.client.next_notification("agentls/review").await;
    // The user edits another line while the review is open.
    fx.client.change(&path, 7, [5, 0, 5, 3], "SIX");
    fx.client
        .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "accept"}))
        .await
        .expect("resolve");
    let apply = fx.client.next_request("workspace/applyEdit").await;
    let edit = &apply.params["edit"]["documentChanges"][0];
    assert_eq!(edit["textDocument"]["version"], 7, "edits target the buffer as it is now");
    assert_eq!(edit["edits"][0]["newText"], "ONE\n");
    fx.client.respond(&apply, json!({"applied": false, "failureReason": "buffer is read-only"}));
    fx.client.next_event(&id, "processing_end").await;
    let told = tool_result_text(&fx);
    assert!(told.contains("buffer is read-only"), "{told}");
}

#[tokio::test]
async fn rebase_conflict_fails_cleanly_and_reject_reaches_the_model() {
    let fx = fixture(plugin_capabilities()).await;
    let path = fx.root.join("a.txt");
    fx.client.open(&path, DISK, 1);
    let id = start_turn(&fx, "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n").await;
    let review = fx.client.next_notification("agentls/review").await;
    fx.client.change(&path, 3, [0, 0, 0, 3], "uno");
    fx.client
        .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "accept"}))
        .await
        .expect("resolve");
    fx.client.next_event(&id, "processing_end").await;
    let told = tool_result_text(&fx);
    assert!(told.contains("changed in the editor since you read it"), "{told}");
    assert!(fx.client.requests("workspace/applyEdit").is_empty(), "a conflicting edit is never sent");

    fx.mock.push(Turn::new().tool_call("e2", "propose_changes", modify("a.txt", "x\n")));
    fx.mock.push(Turn::new().text("ok"));
    fx.client.command("agentls.prompt", json!({"sessionId": id, "text": "again"})).await.expect("prompt");
    let review = fx.client.next_notification("agentls/review").await;
    fx.client
        .command(
            "agentls.resolveReview",
            json!({"reviewId": review["reviewId"], "decision": "reject", "feedback": "too drastic"}),
        )
        .await
        .expect("reject");
    fx.client.next_event(&id, "processing_end").await;
    let told = fx.mock.requests()[3].body.to_string();
    assert!(told.contains("rejected") && told.contains("too drastic"), "{told}");
}

#[tokio::test]
async fn cancel_rejects_a_pending_review() {
    let fx = fixture(plugin_capabilities()).await;
    let id = start_turn(&fx, "changed\n").await;
    let review = fx.client.next_notification("agentls/review").await;
    fx.client.command("agentls.cancel", json!({"sessionId": id})).await.expect("cancel");
    fx.client.next_event(&id, "processing_end").await;
    let late = fx
        .client
        .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "accept"}))
        .await;
    assert_eq!(late.unwrap_err()["data"], "reviewId");
    assert!(fx.client.requests("workspace/applyEdit").is_empty());
}

#[tokio::test]
async fn plain_client_without_document_changes_gets_changes_after_apply() {
    let fx = fixture(plain_capabilities()).await;
    fx.client.manual("window/showMessageRequest");
    let path = fx.root.join("a.txt");
    let id = start_turn(&fx, "one\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n").await;
    let question = fx.client.next_request("window/showMessageRequest").await;
    assert!(question.params["message"].as_str().unwrap().contains("M a.txt"), "{:?}", question.params);
    fx.client.respond(&question, json!({"title": "Apply"}));
    let apply = fx.client.next_request("workspace/applyEdit").await;
    assert!(apply.params["edit"].get("documentChanges").is_none());
    assert_eq!(
        apply.params["edit"]["changes"][file_uri(&path)],
        json!([{"range": {"start": {"line": 6, "character": 0}, "end": {"line": 7, "character": 0}}, "newText": "SEVEN\n"}])
    );
    fx.client.respond(&apply, json!({"applied": true}));
    fx.client.next_turn_end(&id).await;
    assert!(tool_result_text(&fx).contains("Applied."));
}

#[tokio::test]
async fn a_client_that_never_answers_apply_edit_gets_an_error_result_and_the_server_keeps_serving() {
    // The deadline is what this test exercises, so it is short.
    let fx = fixture_with_deadline(
        json!({"workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}}, "experimental": {"agentls": {}}}),
        std::time::Duration::from_millis(300),
    )
    .await;
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("session");
    let id = created["sessionId"].as_str().unwrap().to_string();
    fx.client
        .command("agentls.configure", json!({"sessionId": id, "approval": "auto"}))
        .await
        .expect("configure");
    fx.mock.push(Turn::new().tool_call("e1", "propose_changes", modify("a.txt", "changed\n")));
    fx.mock.push(Turn::new().text("ok"));
    fx.client.command("agentls.prompt", json!({"sessionId": id, "text": "edit"})).await.expect("prompt");
    let apply = fx.client.next_request("workspace/applyEdit").await;
    assert!(apply.params["edit"]["documentChanges"].is_array());
    // Never answered: the deadline turns it into an error result.
    let listed = fx.client.command("agentls.listSessions", json!({})).await.expect("still serving meanwhile");
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    fx.client.next_event(&id, "processing_end").await;
    let told = tool_result_text(&fx);
    assert!(told.contains("did not answer"), "{told}");
    assert_eq!(std::fs::read_to_string(fx.root.join("a.txt")).unwrap(), DISK);
}

#[tokio::test]
async fn a_review_nobody_answers_is_rejected_at_the_question_deadline_and_the_user_is_told() {
    let deadline = std::time::Duration::from_millis(300);
    let fx =
        fixture_with_deadlines(plugin_capabilities(), std::time::Duration::from_secs(30), deadline).await;
    let id = start_turn(&fx, "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n").await;
    let review = fx.client.next_notification("agentls/review").await;
    let told = fx.client.next_notification("window/showMessage").await;
    assert_eq!(told["type"], 2, "a warning: {told}");
    assert_eq!(
        told["message"],
        "agentls: the proposed change to a.txt got no answer within 300 ms; it was rejected and the agent was told"
    );
    fx.client.next_event(&id, "processing_end").await;
    assert!(
        tool_result_text(&fx).contains("did not answer the review within 300 ms"),
        "{}",
        tool_result_text(&fx)
    );
    let late = fx
        .client
        .command("agentls.resolveReview", json!({"reviewId": review["reviewId"], "decision": "accept"}))
        .await
        .unwrap_err();
    assert_eq!(late["data"], "reviewId", "the review is closed");
    assert_eq!(std::fs::read_to_string(fx.root.join("a.txt")).unwrap(), DISK);
}

/// Moves a.txt onto b.txt, which the same change deletes (listed after the move), and deletes
/// c.txt and creates it again: the paths the change vacates are free for the files that take them.
fn vacate_and_fill(fx: &Fixture) -> Value {
    std::fs::write(fx.root.join("b.txt"), "b\n").expect("write");
    std::fs::write(fx.root.join("c.txt"), "c\n").expect("write");
    json!({"changes": [
        {"op": "move", "path": "a.txt", "to": "b.txt", "text": "moved\n"},
        {"op": "delete", "path": "b.txt"},
        {"op": "delete", "path": "c.txt"},
        {"op": "create", "path": "c.txt", "text": "new c\n"},
    ]})
}

/// Starts a session with approval `auto` whose model calls `tool` with `args`.
async fn start_auto_turn(fx: &Fixture, tool: &str, args: Value) -> String {
    fx.mock.push(Turn::new().tool_call("e1", tool, args));
    fx.mock.push(Turn::new().text("ok"));
    let created = fx.client.command("agentls.newSession", json!({})).await.expect("session");
    let id = created["sessionId"].as_str().unwrap().to_string();
    fx.client.command("agentls.configure", json!({"sessionId": id, "approval": "auto"})).await.expect("auto");
    fx.client.command("agentls.prompt", json!({"sessionId": id, "text": "reshape"})).await.expect("prompt");
    id
}

#[tokio::test]
async fn a_path_the_change_vacates_is_filled_again_through_resource_operations_in_order() {
    let fx = fixture(plugin_capabilities()).await;
    let args = vacate_and_fill(&fx);
    let id = start_auto_turn(&fx, "propose_changes", args).await;
    let apply = fx.client.next_request("workspace/applyEdit").await;
    let uri = |name: &str| json!(file_uri(&fx.root.join(name)));
    let steps: Vec<Value> = apply.params["edit"]["documentChanges"]
        .as_array()
        .expect("documentChanges")
        .iter()
        .map(|change| match change["kind"].as_str() {
            Some("rename") => json!(["rename", change["oldUri"], change["newUri"]]),
            Some(kind) => json!([kind, change["uri"]]),
            None => json!(["edit", change["textDocument"]["uri"], change["edits"][0]["newText"]]),
        })
        .collect();
    // Each path is vacated before it is taken again.
    assert_eq!(
        steps,
        vec![
            json!(["delete", uri("b.txt")]),
            json!(["rename", uri("a.txt"), uri("b.txt")]),
            json!(["edit", uri("b.txt"), "moved\n"]),
            json!(["delete", uri("c.txt")]),
            json!(["create", uri("c.txt")]),
            json!(["edit", uri("c.txt"), "new c\n"]),
        ]
    );
    fx.client.respond(&apply, json!({"applied": true}));
    fx.client.next_turn_end(&id).await;
    assert!(tool_result_text(&fx).contains("Applied."), "{}", tool_result_text(&fx));
}

#[tokio::test]
async fn without_resource_operations_a_path_the_change_vacates_is_filled_again_on_disk() {
    let fx = fixture(plain_capabilities()).await;
    let args = vacate_and_fill(&fx);
    let id = start_auto_turn(&fx, "propose_changes", args).await;
    fx.client.next_turn_end(&id).await;
    assert!(tool_result_text(&fx).contains("Applied."), "{}", tool_result_text(&fx));
    let read = |name: &str| std::fs::read_to_string(fx.root.join(name)).ok();
    assert_eq!(
        (read("a.txt"), read("b.txt"), read("c.txt")),
        (None, Some("moved\n".into()), Some("new c\n".into()))
    );
    assert!(fx.client.requests("workspace/applyEdit").is_empty(), "nothing for the editor to do");
}

#[tokio::test]
async fn files_trading_places_are_refused_by_an_editor_that_renames_and_moved_on_disk_otherwise() {
    let swap = json!({"changes": [
        {"op": "move", "path": "a.txt", "to": "b.txt", "text": DISK},
        {"op": "move", "path": "b.txt", "to": "a.txt", "text": "b\n"},
    ]});
    let fx = fixture(plugin_capabilities()).await;
    std::fs::write(fx.root.join("b.txt"), "b\n").expect("write");
    let id = start_auto_turn(&fx, "propose_changes", swap.clone()).await;
    fx.client.next_turn_end(&id).await;
    let told = tool_result_text(&fx);
    assert!(
        told.contains("a.txt cannot be moved to b.txt: the files this change moves take each other's places"),
        "{told}"
    );
    assert!(fx.client.requests("workspace/applyEdit").is_empty());

    let fx = fixture(plain_capabilities()).await;
    std::fs::write(fx.root.join("b.txt"), "b\n").expect("write");
    let id = start_auto_turn(&fx, "propose_changes", swap).await;
    fx.client.next_turn_end(&id).await;
    assert!(tool_result_text(&fx).contains("Applied."), "{}", tool_result_text(&fx));
    let read = |name: &str| std::fs::read_to_string(fx.root.join(name)).expect("read");
    assert_eq!((read("a.txt"), read("b.txt")), ("b\n".to_string(), DISK.to_string()));
}
