//! Code mode (seed 003) and prompt templates, through `agentls exec` and `agentls doctor` as
//! processes against the loopback mock provider: the REPL keeps state, `return` ends the task,
//! a timeout interrupts the code and the REPL survives, the REPL dies with the session, both
//! prompt variants, `AgentError`, and section overrides from files and the configuration.

use crate::support;
use crate::support::session_harness;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use session_harness::wait_process_gone;
use support::exec_binary::{USER_CONFIG, exec_command};
use support::mock_provider::{Dialect, MockProvider, Turn as Reply};

const KEY: &str = "sk-test-secret-value-123";

/// The folder of the interpreter `python3` names here: `agentls exec` gets HOME set to the
/// test's folder, which version managers' shims depend on, so the real interpreter goes first.
fn python_dir() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys, os; print(os.path.dirname(sys.executable))"])
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn exec(mock: &MockProvider, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = exec_command(mock, dir, KEY, args);
    let path = format!("{}:{}", python_dir(), std::env::var("PATH").unwrap_or_default());
    cmd.env("PATH", path);
    cmd.output().await.expect("agentls runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn system_of(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        blocks => blocks.as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect(),
    }
}

/// The text of every tool result and user message of a request, in order.
fn sent_texts(body: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(blocks) => {
                for block in blocks {
                    match &block["content"] {
                        Value::String(s) => texts.push(s.clone()),
                        Value::Array(inner) => {
                            texts.extend(inner.iter().filter_map(|b| b["text"].as_str().map(String::from)))
                        }
                        _ => texts.extend(block["text"].as_str().map(String::from)),
                    }
                }
            }
            _ => {}
        }
    }
    texts
}

fn python(id: &str, args: Value) -> Reply {
    Reply::new().tool_call(id, "python", args)
}

#[tokio::test]
async fn state_persists_return_ends_the_task_and_the_repl_dies_with_the_session() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(python("c1", json!({"code": "import os\nx = 41\nprint(os.getpid())"})));
    mock.push(python("c2", json!({"code": "return x + 1"})));
    let dir = tempfile::tempdir().unwrap();
    let out = exec(&mock, dir.path(), &["--profile", "code", "--return-type", "int", "add one to 41"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n", "the returned value is the answer");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "`return` ended the task without another model call");
    let first = &requests[0].body;
    let tools: Vec<&str> =
        first["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(tools, ["python"]);
    let system = system_of(first);
    assert!(system.contains("Your one tool, `python`, runs code in a Python REPL"), "{system}");
    assert!(system.contains("call the `python` tool"));
    assert!(!system.contains("Interactions:"), "the tool-call variant has no interactions section");
    let task = &sent_texts(first)[0];
    assert_eq!(
        task,
        "<task>\nadd one to 41\n</task>\n<expected_return_type>\nint\n</expected_return_type>\n\
         <additional_python_resources>\nNone were added.\n</additional_python_resources>"
    );
    let result = sent_texts(&requests[1].body).pop().unwrap();
    let pid: u32 =
        result.strip_prefix("[stdout]\n").and_then(|p| p.trim().parse().ok()).unwrap_or_else(|| {
            panic!("the first call printed the REPL's pid: {result:?}");
        });
    assert!(wait_process_gone(pid, Duration::from_secs(5)).await, "REPL {pid} outlived the session");
}

#[tokio::test]
async fn a_timeout_interrupts_the_code_and_the_repl_keeps_its_state() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(python("c1", json!({"code": "y = 5\nimport time\ntime.sleep(30)", "timeout_ms": 500})));
    mock.push(python("c2", json!({"code": "return y * 2"})));
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = exec(&mock, dir.path(), &["--profile", "code", "double y"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(20), "the sleep was interrupted");
    assert_eq!(text(&out.stdout), "10\n");
    let result = sent_texts(&mock.requests()[1].body).pop().unwrap();
    assert!(result.contains("[interrupted]\nThe code ran longer than 500 ms"), "{result}");
}

#[tokio::test]
async fn the_code_block_variant_runs_one_block_per_reply_and_answers_with_an_execution_message() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().text("Let me compute.\n```python\nz = 6 * 7\nprint(z)\n```"));
    mock.push(Reply::new().text("The answer is 42."));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(USER_CONFIG), "[code]\ntool_calls = false\n").unwrap();
    let out = exec(&mock, dir.path(), &["--profile", "code", "what is 6 times 7?"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).ends_with("The answer is 42.\n"),
        "{}|{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert!(first["tools"].as_array().is_none_or(|t| t.is_empty()), "no tools are offered");
    let system = system_of(first);
    assert!(system.contains("at most one Python block (```python … ```)"), "{system}");
    assert!(system.contains("Interactions:"));
    assert!(system.contains("start with `Execution result:`"));
    let execution = sent_texts(&requests[1].body).pop().unwrap();
    assert_eq!(execution, "Execution result:\n[stdout]\n42");
}

#[tokio::test]
async fn an_agent_error_ends_the_task_as_failed_with_its_reason() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let code =
        "try:\n    int('x')\nexcept ValueError as e:\n    raise AgentError('the input has no number') from e";
    mock.push(python("c1", json!({ "code": code })));
    let dir = tempfile::tempdir().unwrap();
    let out = exec(&mock, dir.path(), &["--profile", "code", "parse it"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("AgentError: the input has no number"), "{stderr}");
    assert!(stderr.contains("Caused by ValueError"), "{stderr}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_section_file_changes_the_request_and_a_broken_one_falls_back_and_says_where() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().text("Arr."));
    let dir = tempfile::tempdir().unwrap();
    let sections = dir.path().join(".agentls/prompts/anthropic");
    std::fs::create_dir_all(&sections).unwrap();
    std::fs::write(sections.join("user_instructions.md"), "# Voice\n\nAnswer like a pirate ({{ profile }}).")
        .unwrap();
    std::fs::write(sections.join("tools.md"), "Tools:\n{% for t in tools %}{{ t.nme( }}{% endfor %}")
        .unwrap();
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "hello"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let system = system_of(&mock.requests()[0].body);
    assert!(system.trim_end().ends_with("# Voice\n\nAnswer like a pirate (anthropic)."), "{system}");
    assert!(system.contains("# Available tools\n\n- `read_file`: "), "the built-in tools section: {system}");
    let stderr = text(&out.stderr);
    let file = sections.join("tools.md");
    assert!(
        stderr.contains(&format!("template error in {}, line 2", file.display())),
        "the warning names the file and line: {stderr}"
    );
    assert!(stderr.contains("using the built-in section instead"), "{stderr}");
}

#[tokio::test]
async fn doctor_prompt_prints_the_prompt_and_each_sections_source() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join(USER_CONFIG);
    std::fs::write(&config, "[prompt.profiles.gemini]\ntools = \"{{ default }}\\nCustom line.\"\n").unwrap();
    let user_sections = dir.path().join("prompts/gemini");
    std::fs::create_dir_all(&user_sections).unwrap();
    std::fs::write(user_sections.join("git.md"), "No git talk.").unwrap();
    let project_sections = dir.path().join("project/.agentls/prompts/gemini");
    std::fs::create_dir_all(&project_sections).unwrap();
    std::fs::write(project_sections.join("git.md"), "Project git text.").unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
        .args(["doctor", "--prompt", "--profile", "gemini", "--cwd"])
        .arg(dir.path().join("project"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("AGENTLS_CONFIG", &config)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let project_git = project_sections.canonicalize().unwrap().join("git.md");
    for line in [
        "profile: gemini".to_string(),
        "  base: built-in".into(),
        format!("  git: file {}", project_git.display()),
        "  tools: configuration `prompt.profiles.gemini.tools`".into(),
        "--- system prompt ---".into(),
        "Project git text.".into(),
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line:?} missing from:\n{stdout}");
    }
    assert!(!stdout.contains("No git talk."), "the project's file wins over the user's");
    assert!(stdout.contains("- `glob`: ") && stdout.contains("Custom line."), "{stdout}");
}
