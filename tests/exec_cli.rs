//! `agentls exec` as a process against the loopback mock provider (spec §9.13 smoke test, exit
//! codes, `--json`, what is sent to the model).

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::mock_provider::{Dialect, ErrorPreset, MockProvider, Turn as Reply};

const KEY: &str = "sk-test-secret-value-123";

async fn exec(mock: &MockProvider, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"));
    cmd.arg("exec").args(args).current_dir(dir).env_clear();
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.env("HOME", dir).env("AGENTLS_CONFIG", dir.join("no-user-config.toml"));
    cmd.env(mock.dialect().key_var(), KEY).env("OTHER_SERVICE_API_KEY", "other-secret-456");
    for (k, v) in mock.env() {
        cmd.env(k, v);
    }
    cmd.output().await.expect("agentls runs")
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git").args(args).current_dir(dir.path()).output().expect("git");
        assert!(ok.status.success());
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("AGENTS.md"), "Always answer in haiku.").expect("write");
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn answer_goes_to_stdout_with_agents_md_and_env_block_in_the_system_prompt() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().text("Hello from the model."));
    let dir = repo();
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "say hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello from the model.\n");
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("Always answer in haiku."), "AGENTS.md content in the system prompt");
    assert!(body.contains("Working directory: "), "environment block");
    assert!(body.contains("Is git repository: true"));
    assert!(!body.contains(KEY));
}

#[tokio::test]
async fn shell_runs_without_secrets_and_timeouts_are_reported() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "env; echo marker-ok > made.txt"})));
    mock.push(Reply::new().tool_call("c2", "shell", json!({"command": "sleep 30", "timeout_ms": 300})));
    mock.push(Reply::new().text("done"));
    let dir = repo();
    let out = exec(&mock, dir.path(), &["--provider", "openai", "run things"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).expect("file made").trim(), "marker-ok");
    let requests = mock.requests();
    let after_env = requests[1].body.to_string();
    assert!(after_env.contains("PATH="), "the env output reached the model");
    assert!(!after_env.contains(KEY) && !after_env.contains("other-secret-456"), "no *_API_KEY visible");
    let after_sleep = requests[2].body.to_string();
    assert!(after_sleep.contains("[ERROR: Command timed out after 300ms."), "{after_sleep}");
}

#[tokio::test]
async fn json_prints_one_event_per_line() {
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push(Reply::new().text("hi"));
    let dir = repo();
    let out = exec(&mock, dir.path(), &["--provider", "gemini", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("one JSON object per line")["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("session_start"));
    assert_eq!(kinds.last().map(String::as_str), Some("session_end"));
    assert!(kinds.iter().any(|k| k == "assistant_text_delta"));
    assert!(kinds.iter().any(|k| k == "processing_end"));
}

#[tokio::test]
async fn usage_and_provider_errors_have_distinct_exit_codes() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let dir = repo();
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "  "]).await;
    assert_eq!(out.status.code(), Some(2), "empty prompt is a usage error");
    mock.push(ErrorPreset::Authentication);
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "hello"]).await;
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(!err.contains(KEY));
}

#[tokio::test]
async fn turn_limit_exits_with_four() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().tool_call("c1", "glob", json!({"pattern": "*.md"})));
    let dir = repo();
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--max-turns", "1", "look"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
}
