//! The servers measured and how each is started: agentls (the release binary), the floor (a bare
//! `lsp-server` binary that scripts/bench builds: it answers `initialize` and reads every message,
//! nothing more) and lsp-ai (a peer: a Rust LSP server that calls models, configured for a
//! fake Anthropic endpoint). Every process gets a private, empty home and data directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::client::Server;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Agentls,
    Floor,
    LspAi,
}

#[derive(Debug, Clone)]
pub struct Subject {
    pub kind: Kind,
    pub binary: PathBuf,
}

impl Subject {
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Agentls => "agentls",
            Kind::Floor => "lsp-server floor",
            Kind::LspAi => "lsp-ai",
        }
    }
}

/// A scratch place for one measurement: home, data directory, workspace folder.
pub struct Scratch {
    dir: TempDir,
}

impl Scratch {
    pub fn new() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("agentls-bench-").tempdir()?;
        for sub in ["home", "data", "ws"] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        std::fs::write(dir.path().join("ws/README.md"), "# bench workspace\n")?;
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn workspace_uri(&self) -> String {
        format!("file://{}", self.workspace().display())
    }

    pub fn file_uri(&self, name: &str) -> String {
        format!("file://{}", self.workspace().join(name).display())
    }
}

fn stderr_file(scratch: &Scratch, name: &str) -> Stdio {
    std::fs::File::create(scratch.path().join(format!("{name}.stderr")))
        .map_or_else(|_| Stdio::null(), Stdio::from)
}

/// The environment of every server: nothing inherited but `PATH`, a fake key, the fake endpoint.
pub fn command(binary: &Path, scratch: &Scratch, provider_url: &str) -> Command {
    let home = scratch.path().join("home");
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-key")
        .env("ANTHROPIC_BASE_URL", provider_url)
        .env("AGENTLS_CONFIG", scratch.path().join("no-user-config.toml"))
        .env("AGENTLS_DATA_DIR", scratch.path().join("data"))
        .current_dir(scratch.workspace());
    command
}

/// lsp-ai's configuration: the file store, one Anthropic model at the fake endpoint, completion
/// through it (no rate limit, which defaults to one request a second).
fn lsp_ai_options(provider_url: &str) -> Value {
    json!({
        "memory": {"file_store": {}},
        "models": {"model1": {
            "type": "anthropic",
            "chat_endpoint": format!("{provider_url}/v1/messages"),
            "model": "claude-bench",
            "auth_token_env_var_name": "ANTHROPIC_API_KEY",
            "max_requests_per_second": 1000.0
        }},
        "completion": {"model": "model1", "parameters": {
            "max_context": 1024,
            "max_tokens": 32,
            "system": "Complete the code.",
            "messages": [{"role": "user", "content": "{CODE}"}]
        }}
    })
}

/// The `initialize` params: a plugin client (VS Code-like capabilities, agentls's extension
/// announced without a delta pace, so every delta is sent as it comes), UTF-16 positions.
pub fn initialize_params(subject: &Subject, scratch: &Scratch, provider_url: &str) -> Value {
    let options = match subject.kind {
        Kind::Agentls => json!({"model": "claude-bench", "approval": "auto"}),
        Kind::LspAi => lsp_ai_options(provider_url),
        Kind::Floor => Value::Null,
    };
    json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "agentls-bench", "version": "1"},
        "rootUri": scratch.workspace_uri(),
        "workspaceFolders": [{"uri": scratch.workspace_uri(), "name": "ws"}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": false},
            "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}, "configuration": false},
            "textDocument": {"synchronization": {"dynamicRegistration": false}},
            "experimental": {"agentls": {"protocolVersion": 1}}
        },
        "initializationOptions": options
    })
}

/// Starts the subject (its `initialize` not sent yet).
pub fn spawn(subject: &Subject, scratch: &Scratch, provider_url: &str) -> std::io::Result<Server> {
    let mut command = command(&subject.binary, scratch, provider_url);
    if subject.kind == Kind::Agentls {
        command.args(["serve", "--stdio"]);
    }
    Server::spawn_lsp(command, stderr_file(scratch, subject.name()))
}

/// Starts the subject and completes the handshake; returns the server and the time from spawn
/// to the `initialize` reply's arrival.
pub fn start(
    subject: &Subject,
    scratch: &Scratch,
    provider_url: &str,
) -> Result<(Server, std::time::Duration), String> {
    let mut server =
        spawn(subject, scratch, provider_url).map_err(|e| format!("{}: {e}", subject.binary.display()))?;
    let params = initialize_params(subject, scratch, provider_url);
    let (_, at) = server
        .request("initialize", params, crate::PATIENCE)
        .map_err(|e| format!("{}: {e}", subject.name()))?;
    let took = at - server.spawned;
    server.notify("initialized", json!({})).map_err(|e| format!("{}: initialized: {e}", subject.name()))?;
    Ok((server, took))
}
