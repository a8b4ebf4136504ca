//! MCP tools through the real language server binary: the permission question a plugin client
//! gets (`agentls/permission` with its `mcp` member), the call's events, and cancelling the turn
//! in the middle of a call, which cancels it at the server. The real server is
//! `@modelcontextprotocol/server-everything` (npm), installed by `scripts/install-mcp-servers`.

use crate::support;
use crate::support::exec_binary::USER_CONFIG;
use crate::support::lsp_client;
use crate::support::server_env::{LspServer, ServerFolder};
use crate::support::session_harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use lsp_client::{LspClient, plugin_capabilities};
use serde_json::json;
use support::mock_provider::{Dialect, Turn};

const KEY: &str = "sk-test-secret-value-123";

/// The server binary of these tests: nothing kept besides its folder and client.
struct Mcp;

type Server = LspServer<Mcp>;

impl Server {
    async fn start(user_config: &str) -> Self {
        let mut folder = ServerFolder::new(Dialect::Anthropic, KEY, &[]).await;
        folder.user_config(user_config);
        folder.env = folder.env.set("AGENTLS_PROVIDER", "anthropic");
        let server = folder.start(Mcp);
        server.client.initialize(&server.root, plugin_capabilities(), json!({"model": "mock-model"})).await;
        server
    }

    async fn session_with_prompt(&self, text: &str) -> String {
        let id = self.new_session().await;
        self.prompt(&id, text).await;
        id
    }
}

#[tokio::test]
async fn the_editor_is_asked_with_the_server_tool_and_arguments_and_the_call_runs() {
    let everything = support::installed::everything();
    let server =
        Server::start(&format!("[mcp_servers.everything]\ncommand = \"{}\"\n", everything.display())).await;
    server.mock.push(Turn::new().tool_call(
        "c1",
        "mcp__everything__echo",
        json!({"message": "from the editor"}),
    ));
    server.mock.push(Turn::new().tool_call("c2", "mcp__everything__echo", json!({"message": "again"})));
    server.mock.push(Turn::new().text("Echoed twice."));
    let id = server.session_with_prompt("echo").await;
    let start = server.client.next_event(&id, "tool_call_start").await;
    assert_eq!(start["data"]["tool_name"], "mcp__everything__echo", "{start}");
    // The summary names the server, for clients that show only it.
    assert_eq!(start["data"]["summary"], "everything: echo {\"message\":\"from the editor\"}", "{start}");
    let ask = server.client.next_notification("agentls/permission").await;
    assert_eq!(ask["toolName"], "mcp__everything__echo");
    assert_eq!(
        ask["mcp"],
        json!({"server": "everything", "tool": "echo", "arguments": {"message": "from the editor"}, "readOnlyHint": true})
    );
    assert_eq!(ask["command"], "mcp everything echo {\"message\":\"from the editor\"}");
    server
        .client
        .command(
            "agentls.resolvePermission",
            json!({"requestId": ask["requestId"], "decision": "allow_always"}),
        )
        .await
        .expect("allow");
    let end = server.client.next_event(&id, "tool_call_end").await;
    assert_eq!(end["data"]["status"], "ok", "{end}");
    assert!(end["data"]["output"].as_str().unwrap_or_default().contains("from the editor"), "{end}");
    // "Always" covers the next call of the same tool: no second question.
    let second = server.client.next_event(&id, "tool_call_end").await;
    assert!(second["data"]["output"].as_str().unwrap_or_default().contains("again"), "{second}");
    let done = server.client.next_event(&id, "processing_end").await;
    assert_eq!(done["data"]["text"], "Echoed twice.");
    assert_eq!(server.client.notifications("agentls/permission").len(), 1);
    let stored = std::fs::read_to_string(server.dir.path().join("data/permissions.json")).unwrap();
    assert!(stored.contains("everything/echo"), "{stored}");
    server.client.shutdown().await;
}

/// A server whose MCP server `bad` (`tests/fixtures/mcp/misbehaving.py`, logging to `log`) is in
/// the middle of a `hang` call that reached it, in the session `id`; `pid` is the fixture's.
struct Hanging {
    _dir: tempfile::TempDir,
    log: PathBuf,
    server: Server,
    id: String,
    pid: u32,
}

async fn hanging_call() -> Hanging {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/misbehaving.py");
    let server = Server::start(&format!(
        "[mcp_servers.bad]\ncommand = \"python3\"\nargs = [\"{}\"]\nenv = {{ MCP_FIXTURE_LOG = \"{}\" }}\npermission = \"allow\"\n",
        fixture.display(),
        log.display()
    ))
    .await;
    server.mock.push(Turn::new().tool_call("c1", "mcp__bad__hang", json!({})));
    let id = server.session_with_prompt("hang").await;
    server.client.next_event(&id, "tool_call_start").await;
    until_logged(&log, "\"hang\"", Duration::from_secs(20), "the call never reached the server").await;
    let pid = *pids(&log).first().expect("the fixture's pid");
    Hanging { _dir: dir, log, server, id, pid }
}

/// Waits until the fixture's `log` holds `what`, at most `within`; fails with `failure` (and the log).
async fn until_logged(log: &Path, what: &str, within: Duration, failure: &str) {
    let deadline = std::time::Instant::now() + within;
    while !std::fs::read_to_string(log).unwrap_or_default().contains(what) {
        assert!(
            std::time::Instant::now() < deadline,
            "{failure}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn cancelling_the_turn_cancels_the_call_at_the_server() {
    // The call reached the server before the turn is cancelled.
    let Hanging { log, server, id, pid, .. } = &hanging_call().await;
    server.client.command("agentls.cancel", json!({"sessionId": id})).await.expect("cancel");
    let end = server.client.next_event(id, "tool_call_end").await;
    assert_eq!(end["data"]["status"], "cancelled", "{end}");
    server.client.next_event(id, "processing_end").await;
    until_logged(log, "cancelled ", Duration::from_secs(10), "the server was not told").await;
    // The server ends with the language server.
    server.client.shutdown().await;
    assert!(
        session_harness::wait_process_gone(*pid, Duration::from_secs(10)).await,
        "{pid} outlived the server"
    );
}

/// The process guard ends a server's program when the language server is killed outright.
#[tokio::test]
async fn a_killed_language_server_leaves_no_mcp_server_behind() {
    let Hanging { server, pid, .. } = &hanging_call().await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.client.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the language server");
    assert!(
        session_harness::wait_process_gone(*pid, Duration::from_secs(10)).await,
        "{pid} outlived a killed server"
    );
}

/// Polls `agentls.mcpServers` until `done` holds of the list (servers start in the background).
async fn servers_until(
    client: &LspClient,
    mut done: impl FnMut(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = client.command("agentls.mcpServers", json!({})).await.expect("mcpServers");
        if done(&list) {
            return list;
        }
        assert!(std::time::Instant::now() < deadline, "the servers never got there: {list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn named<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list["servers"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

fn pids(log: &Path) -> Vec<u32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("pid ")?.parse().ok())
        .collect()
}

/// `agentls.mcpServers` lists each configured server with its state, tools and last error;
/// `agentls.mcpRestart` ends a running server's program and starts it again, and a session's
/// next call reaches the new one.
#[tokio::test]
async fn the_editor_lists_servers_and_restarts_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/misbehaving.py");
    let everything = support::installed::everything();
    let server = Server::start(&format!(
        "[mcp_servers.bad]\ncommand = \"python3\"\nargs = [\"{fixture}\"]\nenv = {{ MCP_FIXTURE_LOG = \"{log}\" }}\n\
         permission = \"allow\"\ndeny_tools = [\"crash\"]\n\
         [mcp_servers.everything]\ncommand = \"{everything}\"\n\
         [mcp_servers.broken]\ncommand = \"python3\"\nargs = [\"{fixture}\", \"--fail-start\"]\n\
         [mcp_servers.off]\ncommand = \"x\"\nenabled = false\n",
        fixture = fixture.display(),
        log = log.display(),
        everything = everything.display(),
    ))
    .await;
    let root = server.root.clone();
    // The folder's trust is asked about (the project's server waits for it): not now.
    server.client.auto_answer("window/showMessageRequest", json!({"title": "Not now"}));
    std::fs::write(root.join(".mcp.json"), r#"{"mcpServers": {"project": {"command": "project-server"}}}"#)
        .unwrap();

    let list = servers_until(&server.client, |l| {
        named(l, "bad")["state"] == "running"
            && named(l, "everything")["state"] == "running"
            && named(l, "broken")["state"] == "failed"
    })
    .await;
    assert_eq!(list["rootUri"], lsp_client::file_uri(&root));
    let names: Vec<&str> =
        list["servers"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["bad", "broken", "everything", "off", "project"]);
    let bad = named(&list, "bad");
    let tools: Vec<&str> =
        bad["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"echo") && !tools.contains(&"crash"), "deny_tools is applied: {tools:?}");
    assert_eq!(
        bad["tools"][0],
        json!({"name": "echo", "toolName": "mcp__bad__echo", "description": "Echoes `text`.", "readOnlyHint": true})
    );
    assert_eq!(bad["lastError"], serde_json::Value::Null);
    assert_eq!(bad["origin"], server.dir.path().join(USER_CONFIG).display().to_string());
    assert_eq!(bad["target"], format!("python3 {}", fixture.display()));
    assert!(named(&list, "everything")["tools"].as_array().unwrap().len() > 5, "{list}");
    let broken = named(&list, "broken");
    assert!(broken["lastError"].as_str().unwrap_or_default().contains("asked to fail"), "{broken}");
    assert_eq!(named(&list, "off")["state"], "disabled");
    let project = named(&list, "project");
    assert_eq!(project["state"], "needs_trust");
    assert_eq!(project["origin"], root.join(".mcp.json").display().to_string());

    // A session calls the running program, the restart ends it and starts another.
    server.mock.push(Turn::new().tool_call("c1", "mcp__bad__echo", json!({"text": "before"})));
    server.mock.push(Turn::new().text("first"));
    let id = server.session_with_prompt("echo").await;
    let end = server.client.next_event(&id, "tool_call_end").await;
    assert_eq!(end["data"]["output"], "echo: before", "{end}");
    server.client.next_event(&id, "processing_end").await;
    let first = pids(&log);
    assert_eq!(first.len(), 1, "{first:?}");
    let restarted =
        server.client.command("agentls.mcpRestart", json!({"name": "bad"})).await.expect("restart");
    assert_eq!(restarted, json!({"name": "bad", "state": "starting"}));
    servers_until(&server.client, |l| named(l, "bad")["state"] == "running").await;
    assert!(
        session_harness::wait_process_gone(first[0], Duration::from_secs(10)).await,
        "the first program was ended"
    );
    let now = pids(&log);
    assert_eq!(now.len(), 2, "{now:?}");
    server.mock.push(Turn::new().tool_call("c2", "mcp__bad__echo", json!({"text": "after"})));
    server.mock.push(Turn::new().text("second"));
    server.client.command("agentls.prompt", json!({"sessionId": id, "text": "again"})).await.expect("prompt");
    let end = server.client.next_event(&id, "tool_call_end").await;
    assert_eq!(end["data"]["output"], "echo: after", "{end}");
    server.client.next_event(&id, "processing_end").await;
    let warnings: Vec<String> = server
        .client
        .notifications("agentls/event")
        .into_iter()
        .filter(|e| e["kind"] == "warning")
        .filter_map(|e| e["data"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(!warnings.iter().any(|w| w.contains("`bad`")), "a restart is not a failure: {warnings:?}");

    // A failed server starts again at once; what cannot start is refused, naming why.
    let restarted =
        server.client.command("agentls.mcpRestart", json!({"name": "broken"})).await.expect("restart");
    assert_eq!(restarted, json!({"name": "broken", "state": "starting"}));
    let refused = server.client.command("agentls.mcpRestart", json!({"name": "off"})).await.unwrap_err();
    assert_eq!(refused["code"], -32803, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("`off` cannot be restarted: it is disabled"),
        "{refused}"
    );
    let unknown = server.client.command("agentls.mcpRestart", json!({"name": "nope"})).await.unwrap_err();
    assert_eq!(unknown["code"], -32602, "{unknown}");
    assert_eq!(unknown["data"], "name", "{unknown}");
    assert!(
        unknown["message"].as_str().unwrap().contains("bad, broken, everything, off, project"),
        "{unknown}"
    );
    server.client.shutdown().await;
}
