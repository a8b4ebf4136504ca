//! `agentls exec` as a process against the loopback mock provider, with a clean environment.

use std::path::Path;

use super::mock_provider::{Dialect, MockProvider};

/// The user configuration file `agentls exec` reads, in the test's folder (absent unless a test
/// writes it).
pub const USER_CONFIG: &str = "user-config.toml";
/// A secret of another service in the environment: no child process may see it either.
pub const OTHER_SECRET: (&str, &str) = ("OTHER_SERVICE_API_KEY", "other-secret-456");

/// `program` in `dir` with a clean environment pointing at the mock: only PATH, HOME (= `dir`),
/// the user configuration in `dir`, the provider's `key` and the mock's base URL. The one setup
/// of every agentls process a test starts against the mock (`exec`, `acp`, an ACP client).
pub fn clean_command(program: &Path, dir: &Path, mock: &MockProvider, key: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.current_dir(dir).env_clear();
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.env("HOME", dir).env("AGENTLS_CONFIG", dir.join(USER_CONFIG));
    cmd.env(mock.dialect().key_var(), key);
    for (k, v) in mock.env() {
        cmd.env(k, v);
    }
    cmd
}

/// `agentls exec <args>` in `dir`: [`clean_command`] with another service's secret set besides.
pub fn exec_command(mock: &MockProvider, dir: &Path, key: &str, args: &[&str]) -> tokio::process::Command {
    let mut cmd = clean_command(Path::new(env!("CARGO_BIN_EXE_agentls")), dir, mock, key);
    cmd.arg("exec").args(args).env(OTHER_SECRET.0, OTHER_SECRET.1);
    cmd
}

/// A process's stdout and stderr, as text.
pub fn output_text(output: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A model of each dialect, for `--model`.
pub fn model_of(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Anthropic => "claude-sonnet-4-5",
        Dialect::OpenAiResponses => "gpt-5",
        Dialect::OpenAiChat => "gpt-4.1",
        Dialect::Gemini => "gemini-2.5-flash",
    }
}

/// `agentls doctor --ping --provider P --model M` in `dir` against `base_url` with `key`, with
/// only PATH, HOME (= `dir`), the user configuration in `dir` and `extra` set besides.
pub fn ping_command(
    dialect: Dialect,
    base_url: &str,
    dir: &Path,
    key: &str,
    extra: &[(&str, &str)],
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"));
    cmd.args(["doctor", "--ping", "--provider", dialect.provider(), "--model", model_of(dialect)])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AGENTLS_CONFIG", dir.join(USER_CONFIG))
        .env(dialect.base_url_var(), base_url)
        .env(dialect.key_var(), key);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// Trusts `dir` the way its user would (`agentls trust DIR`, with `exec_command`'s HOME), so
/// its `.agentls.toml` applies in full.
pub fn trust_folder(dir: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
        .args(["trust"])
        .arg(dir)
        .env_clear()
        .env("HOME", dir)
        .output()
        .expect("agentls trust runs");
    assert!(out.status.success(), "agentls trust: {}", String::from_utf8_lossy(&out.stderr));
}
