//! The environment of an agentls server a test starts (the binary over stdio or in-process):
//! every place it reads or writes for its user (the data dir, the user configuration file, HOME
//! and the XDG state, config and data homes) inside the test's own folder, and, against a mock
//! provider, the mock's base URL and the provider's key. The one setup of a test's language
//! server environment. Invariant: a server started with exactly these variables (the binary gets
//! PATH besides) touches nothing of the machine's user.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::exec_binary::USER_CONFIG;
use super::lsp_client::LspClient;
use super::mock_provider::{Dialect, MockProvider};

/// A server's variables, in the order they were set; setting one again replaces it.
#[derive(Clone, Debug)]
pub struct ServerEnv {
    vars: Vec<(String, String)>,
}

impl ServerEnv {
    /// The homes under `dir`: `data/` (sessions, permissions), `home/`, `state/`, `config/` (whose
    /// `agentls/trust.toml` is the trust store) and `share/`; the user configuration is
    /// `dir/`[`USER_CONFIG`], absent unless the test writes it.
    pub fn in_dir(dir: &Path) -> Self {
        let path = |p: &str| dir.join(p).display().to_string();
        Self {
            vars: vec![
                ("AGENTLS_DATA_DIR".into(), path("data")),
                ("AGENTLS_CONFIG".into(), path(USER_CONFIG)),
                ("HOME".into(), path("home")),
                ("XDG_STATE_HOME".into(), path("state")),
                ("XDG_CONFIG_HOME".into(), path("config")),
                ("XDG_DATA_HOME".into(), path("share")),
            ],
        }
    }

    /// [`ServerEnv::in_dir`] pointed at `mock`, with `key` as its provider's API key.
    pub fn for_mock(dir: &Path, mock: &MockProvider, key: &str) -> Self {
        Self::in_dir(dir).provider(mock, key)
    }

    /// These variables pointed at `mock`, with `key` as its provider's API key.
    pub fn provider(self, mock: &MockProvider, key: &str) -> Self {
        self.with(mock.env()).set(mock.dialect().key_var(), key)
    }

    /// `name` set to `value`, replacing what it was.
    pub fn set(mut self, name: &str, value: impl ToString) -> Self {
        let value = value.to_string();
        match self.vars.iter_mut().find(|(k, _)| k == name) {
            Some(var) => var.1 = value,
            None => self.vars.push((name.to_string(), value)),
        }
        self
    }

    /// Each of `vars` set in turn.
    pub fn with<K: AsRef<str>, V: ToString>(self, vars: impl IntoIterator<Item = (K, V)>) -> Self {
        vars.into_iter().fold(self, |env, (k, v)| env.set(k.as_ref(), v))
    }

    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The variables as `LspClient::spawn_binary` takes them.
    pub fn pairs(&self) -> Vec<(&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    /// `agentls serve --stdio` in `root` with exactly these variables (and PATH).
    pub fn spawn(&self, root: &Path) -> LspClient {
        LspClient::spawn_binary(&self.pairs(), root)
    }

    /// Trusts `folder` for the user of these variables, as that user would (`agentls trust`), so
    /// its `.agentls.toml` applies in full.
    pub fn trust(&self, folder: &Path) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
            .arg("trust")
            .arg(folder)
            .env_clear()
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("agentls trust runs");
        assert!(out.status.success(), "agentls trust: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The language server in-process, its configuration read from these variables alone.
    pub fn in_process(&self) -> LspClient {
        let env = agentls::config::Env::from_pairs(self.vars.clone());
        LspClient::in_process(agentls::lsp::ServerOptions::from_env(env))
    }
}

/// A language server's folder of its own, before the server starts: a fresh temporary `dir`
/// with the homes of [`ServerEnv::in_dir`] and the workspace `dir/ws`, the mock provider, and
/// `env` pointing at both.
pub struct ServerFolder {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub mock: MockProvider,
    pub env: ServerEnv,
}

impl ServerFolder {
    /// A mock provider of `dialect` started, `key` its API key, the workspace holding `files`.
    pub async fn new(dialect: Dialect, key: &str, files: &[(&str, &str)]) -> Self {
        Self::with_mock(MockProvider::start(dialect).await, key, files)
    }

    /// [`ServerFolder::new`] with a mock provider started otherwise (over TLS, say).
    pub fn with_mock(mock: MockProvider, key: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = workspace(dir.path(), "ws", files);
        let env = ServerEnv::for_mock(dir.path(), &mock, key);
        Self { dir, root, mock, env }
    }

    /// Writes the user's configuration file (the server reads it when it starts).
    pub fn user_config(&self, text: &str) {
        std::fs::write(self.dir.path().join(USER_CONFIG), text).expect("write the user config");
    }

    /// `agentls serve --stdio` started in the workspace with `env` (not initialized yet), with
    /// `extra` kept beside it.
    pub fn start<T>(self, extra: T) -> LspServer<T> {
        let client = self.env.spawn(&self.root);
        let Self { dir, root, mock, env } = self;
        LspServer { dir, root, mock, env, client, extra }
    }
}

/// A language server binary running in its [`ServerFolder`], and its client. `T` is what a test
/// module keeps besides (`extra`); the module's own methods are `impl LspServer<ItsType>`.
pub struct LspServer<T> {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub mock: MockProvider,
    pub env: ServerEnv,
    pub client: LspClient,
    pub extra: T,
}

impl<T> LspServer<T> {
    /// A new session (`agentls.newSession`); its id.
    pub async fn new_session(&self) -> String {
        let created = self.client.command("agentls.newSession", json!({})).await.expect("newSession");
        created["sessionId"].as_str().expect("a session id").to_string()
    }

    /// Prompts `session` with `text` (`agentls.prompt`); returns once the server took it.
    pub async fn prompt(&self, session: &str, text: &str) {
        self.client
            .command("agentls.prompt", json!({"sessionId": session, "text": text}))
            .await
            .expect("prompt");
    }

    /// The entries `agentls.history` shows for the session `id`, as `kind: text` lines.
    pub async fn history_lines(&self, id: &str) -> Vec<String> {
        let history =
            self.client.command("agentls.history", json!({"sessionId": id})).await.expect("history");
        history["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| {
                let kind = e["kind"].as_str().unwrap_or_default();
                let text = e["text"].as_str().or(e["output"].as_str()).unwrap_or_default();
                format!("{kind}: {text}")
            })
            .collect()
    }

    /// Kills the server with SIGKILL (an OOM kill, a crash) and starts another in the same homes,
    /// as an editor restarting it would (not initialized yet); returns how the killed one ended.
    pub async fn kill_and_respawn(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.client.pid() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill the server");
        let status = self.client.exit_status().await;
        self.client = self.env.spawn(&self.root);
        status
    }
}

/// A workspace folder `dir/name` holding `files` (relative path, text), folders made as needed.
pub fn workspace(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).expect("the workspace folder");
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("mkdir");
        std::fs::write(path, text).expect("write a workspace file");
    }
    root
}
