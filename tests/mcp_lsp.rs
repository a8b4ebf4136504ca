//! MCP tools through the real language server binary: the permission question a plugin client
//! gets (`agentls/permission` with its `mcp` member), the call's events, and cancelling the turn
//! in the middle of a call, which cancels it at the server. The real server is
//! `@modelcontextprotocol/server-everything` (npm), installed by `scripts/install-mcp-servers`.

#[path = "support/lsp_client.rs"]
mod lsp_client;
mod session_harness;
mod support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use lsp_client::{LspClient, plugin_capabilities};
use serde_json::json;
use support::mock_provider::{Dialect, MockProvider, Turn};

const KEY: &str = "sk-test-secret-value-123";

fn servers() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-mcp-servers");
        let out = std::process::Command::new(&script).output().expect("scripts/install-mcp-servers runs");
        assert!(
            out.status.success(),
            "installing the MCP servers failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

struct Server {
    dir: tempfile::TempDir,
    mock: MockProvider,
    client: LspClient,
}

impl Server {
    async fn start(user_config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.path().join("config.toml"), user_config).unwrap();
        let mock = MockProvider::start(Dialect::Anthropic).await;
        let path = |p: &str| dir.path().join(p).display().to_string();
        let mut env = mock.env();
        env.extend([
            (Dialect::Anthropic.key_var().to_string(), KEY.to_string()),
            ("AGENTLS_PROVIDER".into(), "anthropic".into()),
            ("AGENTLS_DATA_DIR".into(), path("data")),
            ("AGENTLS_CONFIG".into(), path("config.toml")),
            ("HOME".into(), path("home")),
            ("XDG_STATE_HOME".into(), path("state")),
            ("XDG_CONFIG_HOME".into(), path("config")),
        ]);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let client = LspClient::spawn_binary(&env, &root);
        client.initialize(&root, plugin_capabilities(), json!({"model": "mock-model"})).await;
        Self { dir, mock, client }
    }

    async fn session_with_prompt(&self, text: &str) -> String {
        let created = self.client.command("agentls.newSession", json!({})).await.expect("newSession");
        let id = created["sessionId"].as_str().expect("a session id").to_string();
        self.client.command("agentls.prompt", json!({"sessionId": id, "text": text})).await.expect("prompt");
        id
    }
}

#[tokio::test]
async fn the_editor_is_asked_with_the_server_tool_and_arguments_and_the_call_runs() {
    let everything = servers().join("npm/node_modules/.bin/mcp-server-everything");
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

#[tokio::test]
async fn cancelling_the_turn_cancels_the_call_at_the_server() {
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
    // The call reached the server before the turn is cancelled.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("\"hang\"") {
        assert!(std::time::Instant::now() < deadline, "the call never reached the server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.client.command("agentls.cancel", json!({"sessionId": id})).await.expect("cancel");
    let end = server.client.next_event(&id, "tool_call_end").await;
    assert_eq!(end["data"]["status"], "cancelled", "{end}");
    server.client.next_event(&id, "processing_end").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("cancelled ") {
        assert!(
            std::time::Instant::now() < deadline,
            "the server was not told: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid: u32 = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("pid ")?.parse().ok())
        .expect("the fixture's pid");
    // The server ends with the language server.
    server.client.shutdown().await;
    assert!(
        session_harness::wait_process_gone(pid, Duration::from_secs(10)).await,
        "{pid} outlived the server"
    );
}

/// The process guard ends a server's program when the language server is killed outright.
#[tokio::test]
async fn a_killed_language_server_leaves_no_mcp_server_behind() {
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
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("\"hang\"") {
        assert!(std::time::Instant::now() < deadline, "the call never reached the server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid: u32 = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("pid ")?.parse().ok())
        .expect("the fixture's pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.client.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the language server");
    assert!(
        session_harness::wait_process_gone(pid, Duration::from_secs(10)).await,
        "{pid} outlived a killed server"
    );
}
