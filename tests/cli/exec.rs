//! `agentls exec` as a process against the loopback mock provider (spec §9.13 smoke test, exit
//! codes, `--json`, what is sent to the model, Ctrl-C).

use crate::support;
use crate::support::session_harness;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::support::processes::group_gone;
use agentls::profiles::ProfileKind;
use serde_json::{Value, json};
use session_harness::calls::{edit_call, read_call, sent_result};
use session_harness::{PATIENCE, dialect, read_pid, wait_process_gone};
use support::exec_binary::{OTHER_SECRET, USER_CONFIG, exec_command, trust_folder};
use support::mock_provider::{Dialect, ErrorPreset, MockProvider, Turn as Reply};

const KEY: &str = "sk-test-secret-value-123";

/// `agentls exec <args>` in `dir`, with a clean environment pointing at the mock.
fn command_for(mock: &MockProvider, dir: &Path, args: &[&str]) -> tokio::process::Command {
    exec_command(mock, dir, KEY, args)
}

async fn exec(mock: &MockProvider, dir: &Path, args: &[&str]) -> Output {
    command_for(mock, dir, args).output().await.expect("agentls runs")
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
    let out = exec(&mock, dir.path(), &["--provider", "openai", "--shell", "allow", "run things"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).expect("file made").trim(), "marker-ok");
    let requests = mock.requests();
    let after_env = requests[1].body.to_string();
    assert!(after_env.contains("PATH="), "the env output reached the model");
    assert!(!after_env.contains(KEY) && !after_env.contains(OTHER_SECRET.1), "no *_API_KEY visible");
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

/// The §9.13 smoke test as one `agentls exec --json` run per profile, with scripted turns: create
/// hello.py, read it, edit it in the profile's format, run it, grep + glob, read a 100k-character
/// file (truncation), and a command that hits the default timeout. Steering cannot be driven
/// through `exec` (one prompt, no stdin channel); it is covered by `session::parity_matrix::steering::*`.
/// Subagents are not part of this crate. The 10 s default itself is checked by
/// `tools::exec_local::the_default_command_timeout_is_ten_seconds`; here the user configuration lowers it.
async fn smoke(profile: ProfileKind) {
    let mock = MockProvider::start(dialect(profile)).await;
    let dir = repo();
    let root = dir.path().canonicalize().expect("canonical tempdir");
    std::fs::write(root.join(USER_CONFIG), "[shell]\ndefault_timeout_ms = 400\n").expect("config");
    std::fs::write(root.join("big.txt"), "x".repeat(100_000)).expect("big.txt");
    let (edit_tool, edit_args) = edit_call(
        profile,
        &root,
        "hello.py",
        "print('Hello World')",
        "print('Hello World')\nprint('Goodbye')",
    );
    let replies = [
        Reply::new().text("Creating hello.py.").tool_call(
            "s1",
            "write_file",
            json!({"file_path": "hello.py", "content": "print('Hello World')\n"}),
        ),
        Reply::new().tool_call("s2", "read_file", read_call(profile, &root, "hello.py")),
        Reply::new().tool_call("s3", edit_tool, edit_args),
        Reply::new().tool_call(
            "s4",
            "shell",
            json!({"command": "sed -n \"s/^print('\\(.*\\)')$/\\1/p\" hello.py"}),
        ),
        Reply::new()
            .tool_call("s5", "grep", json!({"pattern": "Goodbye", "output_mode": "files_with_matches"}))
            .tool_call("s6", "glob", json!({"pattern": "*.py"})),
        Reply::new().tool_call("s7", "read_file", read_call(profile, &root, "big.txt")),
        Reply::new().tool_call("s8", "shell", json!({"command": "sleep 30"})),
        Reply::new().text("All done: hello.py greets and says goodbye."),
    ];
    for reply in replies {
        mock.push(reply);
    }
    let provider = dialect(profile).provider();
    let out = exec(
        &mock,
        &root,
        &["--provider", provider, "--json", "--shell", "allow", "Create hello.py, then work with it"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // On disk.
    assert_eq!(
        std::fs::read_to_string(root.join("hello.py")).expect("hello.py"),
        "print('Hello World')\nprint('Goodbye')\n"
    );

    // On stdout: one event per line, the full read of big.txt in its TOOL_CALL_END.
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    let ends: Vec<&Value> = events.iter().filter(|e| e["kind"] == "tool_call_end").collect();
    assert_eq!(ends.len(), 8, "every tool call ended");
    let big = ends.iter().find(|e| e["data"]["call_id"] == "s7").expect("read of big.txt");
    assert!(big["data"]["output"].as_str().unwrap_or_default().contains(&"x".repeat(100_000)));
    let end = events.iter().rev().find(|e| e["kind"] == "processing_end").expect("processing_end");
    assert_eq!(end["data"]["text"], "All done: hello.py greets and says goodbye.");
    assert_eq!(events.last().map(|e| &e["kind"]), Some(&json!("session_end")));

    // What the model received.
    let requests = mock.requests();
    assert_eq!(requests.len(), 8);
    let result = |i: usize, id: &str| sent_result(profile, &requests[i].body, id).content;
    assert!(result(3, "s3").contains("hello.py"), "the edit was reported");
    let ran = result(4, "s4");
    assert!(ran.contains("Hello World\nGoodbye"), "{ran}");
    assert!(result(5, "s5").contains("hello.py") && result(5, "s6").contains("hello.py"));
    let read = result(6, "s7");
    assert!(read.contains("[WARNING: Tool output was truncated.") && read.len() < 60_000);
    let timed_out = result(7, "s8");
    assert!(timed_out.contains("[ERROR: Command timed out after 400ms."), "{timed_out}");
    for r in &requests {
        assert!(!String::from_utf8_lossy(&r.raw_body).contains(KEY), "the API key is never sent in a body");
    }
}

#[tokio::test]
async fn smoke_test_openai() {
    smoke(ProfileKind::OpenAi).await;
}

#[tokio::test]
async fn smoke_test_anthropic() {
    smoke(ProfileKind::Anthropic).await;
}

#[tokio::test]
async fn smoke_test_gemini() {
    smoke(ProfileKind::Gemini).await;
}

/// The child's task in [`smoke_subagent`]: its replies are routed by it.
const TEST_TASK: &str = "Write tests for hello.py in test_hello.py";

/// Scripts §9.13 step 6 ("Spawn a subagent to write tests for hello.py, then review its output"):
/// the parent spawns, waits and reads the tests; the subagent writes them.
fn script_subagent(mock: &MockProvider, profile: ProfileKind, root: &Path) {
    mock.push(Reply::new().text("Delegating.").tool_call("p1", "spawn_agent", json!({"task": TEST_TASK})));
    mock.push(Reply::new().tool_call("p2", "wait", json!({"agent_id": "agent-1"})));
    mock.push(Reply::new().tool_call("p3", "read_file", read_call(profile, root, "test_hello.py")));
    mock.push(Reply::new().text("The subagent's tests look right."));
    mock.push_for(
        TEST_TASK,
        Reply::new().tool_call(
            "c1",
            "write_file",
            json!({"file_path": "test_hello.py", "content": "import hello\n\ndef test_runs():\n    pass\n"}),
        ),
    );
    mock.push_for(TEST_TASK, Reply::new().text("Wrote test_hello.py."));
}

/// Spec §9.13 step 6 through `agentls exec --json`: the subagent's tool calls appear in the event
/// stream, nested under the parent's spawn call, and its result reaches the parent's model.
async fn smoke_subagent(profile: ProfileKind) {
    let mock = MockProvider::start(dialect(profile)).await;
    let dir = repo();
    let root = dir.path().canonicalize().expect("canonical tempdir");
    std::fs::write(root.join("hello.py"), "print('Hello World')\n").expect("hello.py");
    script_subagent(&mock, profile, &root);
    let provider = dialect(profile).provider();
    let prompt = "Spawn a subagent to write tests for hello.py, then review its output";
    let out = exec(&mock, &root, &["--provider", provider, "--json", prompt]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(root.join("test_hello.py")).expect("tests written").contains("def test_runs")
    );

    let events = json_events(&out);
    let spawn_id = events
        .iter()
        .find(|e| {
            e["kind"] == "tool_call_start"
                && e["data"]["tool_name"] == "spawn_agent"
                && e.get("agent").is_none()
        })
        .map(|e| e["data"]["call_id"].clone())
        .expect("the parent's spawn_agent call");
    let child: Vec<&Value> = events.iter().filter(|e| e.get("agent").is_some()).collect();
    let write = child
        .iter()
        .find(|e| e["kind"] == "tool_call_end" && e["data"]["tool_name"] == "write_file")
        .expect("the subagent's write_file call is in the stream");
    assert_eq!(write["agent"]["agent_id"], "agent-1");
    assert_eq!(write["agent"]["parent_call_id"], spawn_id);
    assert_eq!(write["agent"]["parent_session_id"], events[0]["session_id"]);
    assert_eq!(write["session_id"], events[0]["session_id"], "the stream is the parent's");
    let last = events.last().expect("events");
    assert_eq!(
        (last["kind"].as_str(), last.get("agent")),
        (Some("session_end"), None),
        "the parent ends last"
    );

    let parent: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !support::mock_provider::first_user_message(dialect(profile), b).contains(TEST_TASK))
        .collect();
    let waited = sent_result(profile, &parent[2], "p2").content;
    assert!(waited.contains("Wrote test_hello.py.") && waited.contains("\"success\":true"), "{waited}");
}

#[tokio::test]
async fn smoke_test_subagent_openai() {
    smoke_subagent(ProfileKind::OpenAi).await;
}

#[tokio::test]
async fn smoke_test_subagent_anthropic() {
    smoke_subagent(ProfileKind::Anthropic).await;
}

#[tokio::test]
async fn smoke_test_subagent_gemini() {
    smoke_subagent(ProfileKind::Gemini).await;
}

/// Without `--json`, a subagent's task, calls and answer are printed indented, after the text
/// the parent wrote before spawning it, and the run ends with the parent's answer.
#[tokio::test]
async fn plain_output_indents_subagent_activity_under_the_spawning_call() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let dir = repo();
    let root = dir.path().canonicalize().expect("canonical tempdir");
    std::fs::write(root.join("hello.py"), "print('Hello World')\n").expect("hello.py");
    script_subagent(&mock, ProfileKind::Anthropic, &root);
    let out = exec(&mock, &root, &["--provider", "anthropic", "write tests through a subagent"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "Delegating.\n  agent-1 ▸ {TEST_TASK}\n    agent-1 · write_file test_hello.py\n  agent-1 completed:\n    \
             Wrote test_hello.py.\nThe subagent's tests look right.\n"
        )
    );
}

/// Sends `signal` to `agentls exec` while a command with background children runs; returns the
/// exit code once the command's whole process group is gone and a marker it would have written
/// two seconds later was never written.
async fn stop_mid_command(signal: nix::sys::signal::Signal) -> Option<i32> {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    let command = "echo $$ > leader.pid; sleep 60 & echo $! > child.pid; (sleep 2; touch late-marker) & wait";
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": command, "timeout_ms": 60000})));
    let dir = repo();
    let child =
        command_for(&mock, dir.path(), &["--provider", "openai", "--shell", "allow", "start the server"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentls starts");
    let leader = read_pid(&dir.path().join("leader.pid")).await;
    let grandchild = read_pid(&dir.path().join("child.pid")).await;
    let agentls = nix::unistd::Pid::from_raw(child.id().expect("running") as i32);
    nix::sys::signal::kill(agentls, signal).expect("signal agentls");
    let out = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("agentls exits after the signal")
        .expect("exit status");
    for pid in [leader, grandchild] {
        assert!(wait_process_gone(pid, Duration::from_secs(5)).await, "process {pid} outlived agentls exec");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !group_gone(leader) {
        assert!(std::time::Instant::now() < deadline, "a process of the command's group is left");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!dir.path().join("late-marker").exists(), "a process of the turn ran on");
    out.status.code()
}

/// SIGKILL leaves agentls no chance to stop anything: its process guard ends the command's group.
#[tokio::test]
async fn sigkill_mid_command_leaves_no_process_behind() {
    assert_eq!(stop_mid_command(nix::sys::signal::Signal::SIGKILL).await, None);
}

#[tokio::test]
async fn sigint_mid_command_exits_130_and_leaves_no_process_behind() {
    assert_eq!(stop_mid_command(nix::sys::signal::Signal::SIGINT).await, Some(130));
}

#[tokio::test]
async fn sigterm_mid_command_exits_143_and_leaves_no_process_behind() {
    assert_eq!(stop_mid_command(nix::sys::signal::Signal::SIGTERM).await, Some(143));
}

#[tokio::test]
async fn approval_deny_refuses_edits_and_commands_and_the_model_is_told() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(
        Reply::new()
            .tool_call("c1", "write_file", json!({"file_path": "new.txt", "content": "x\n"}))
            .tool_call("c2", "shell", json!({"command": "touch ran.txt"})),
    );
    mock.push(Reply::new().text("I was not allowed to change anything."));
    let dir = repo();
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--approval", "deny", "make files"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dir.path().join("new.txt").exists() && !dir.path().join("ran.txt").exists());
    let body = &mock.requests()[1].body;
    let edit = sent_result(ProfileKind::Anthropic, body, "c1");
    assert!(edit.content.contains("approval: deny") && edit.is_error == Some(true), "{edit:?}");
    let shell = sent_result(ProfileKind::Anthropic, body, "c2");
    assert!(shell.content.contains("permission = \"deny\"") && shell.is_error == Some(true), "{shell:?}");
}

/// The JSON events `agentls exec --json` printed.
fn json_events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect()
}

fn count_of(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

/// Two shell calls in one step (the second would create `second-ran`), then the same call twice:
/// a repeating pattern for a loop-detection window of 2.
fn push_settings_script(mock: &MockProvider) {
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "seq 1 50"})).tool_call(
        "c2",
        "shell",
        json!({"command": "touch second-ran"}),
    ));
    mock.push(Reply::new().tool_call("c3", "shell", json!({"command": "seq 1 50"})));
    mock.push(Reply::new().tool_call("c4", "shell", json!({"command": "seq 1 50"})));
    mock.push(Reply::new().text("done"));
}

/// Every loop setting of the configuration file reaches the session: `[tool_line_limits]`,
/// one call per step (with `parallel_tool_calls: false` on the wire), the loop-detection window
/// and the context window.
#[tokio::test]
async fn loop_settings_of_the_configuration_file_reach_the_session_and_the_wire() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    push_settings_script(&mock);
    let dir = repo();
    std::fs::write(
        dir.path().join(".agentls.toml"),
        "one_call_per_step = true\nloop_detection_window = 2\ncontext_window_tokens = 12\n\
         [tool_line_limits]\nshell = 4\n[context]\nauto_compact = false\n",
    )
    .expect("project config");
    let out = exec(&mock, dir.path(), &["--provider", "openai", "--json", "--shell", "allow", "count"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let requests = mock.requests();
    assert_eq!(requests[0].body["parallel_tool_calls"], json!(false), "one call per step on the wire");
    assert!(!dir.path().join("second-ran").exists(), "only the first call of a step runs");
    let profile = ProfileKind::OpenAi;
    let skipped = sent_result(profile, &requests[1].body, "c2");
    assert!(skipped.content.contains("was not executed"), "{skipped:?}");
    let counted = sent_result(profile, &requests[1].body, "c1").content;
    assert!(counted.contains("lines omitted") && counted.lines().count() <= 6, "{counted}");

    let events = json_events(&out);
    assert_eq!(count_of(&events, "loop_detection"), 1, "window 2: the second repeat is a loop");
    let warnings: Vec<&Value> = events.iter().filter(|e| e["kind"] == "warning").collect();
    assert!(
        warnings.iter().any(|w| w["data"]["context_window"] == 12
            && w["data"]["message"].as_str().unwrap_or_default().starts_with("Context usage at ~")),
        "{warnings:?}"
    );
}

/// `agentls exec` flags win over the configuration file, for both values of a switch.
#[tokio::test]
async fn loop_flags_override_the_configuration_file() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    push_settings_script(&mock);
    let dir = repo();
    std::fs::write(
        dir.path().join(".agentls.toml"),
        "one_call_per_step = true\nenable_loop_detection = false\nloop_detection_window = 5\n",
    )
    .expect("project config");
    let args = [
        "--provider",
        "anthropic",
        "--json",
        "--one-call-per-step=false",
        "--loop-detection",
        "--loop-detection-window",
        "2",
        "--context-window",
        "12",
        "--auto-compact=false",
        "--shell",
        "allow",
        "count",
    ];
    let out = exec(&mock, dir.path(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let choice = &mock.requests()[0].body["tool_choice"];
    assert_eq!(choice["disable_parallel_tool_use"], json!(false), "{choice}");
    assert!(dir.path().join("second-ran").exists(), "both calls of the step ran");
    let events = json_events(&out);
    assert_eq!(count_of(&events, "loop_detection"), 1, "on (a switch without a value), window 2");
    assert!(count_of(&events, "warning") >= 1, "the context window of 12 tokens is exceeded");

    // `--loop-detection=false` turns it off again; `--one-call-per-step` alone turns that on.
    let mock = MockProvider::start(Dialect::Anthropic).await;
    push_settings_script(&mock);
    let args = [
        "--provider",
        "anthropic",
        "--json",
        "--loop-detection=false",
        "--loop-detection-window",
        "2",
        "count",
    ];
    let out = exec(&mock, dir.path(), &args).await;
    assert_eq!(count_of(&json_events(&out), "loop_detection"), 0, "{}", stderr(&out));
    let mock = MockProvider::start(Dialect::OpenAiChat).await;
    mock.push(Reply::new().text("ok"));
    let out = exec(&mock, dir.path(), &["--provider", "openai-chat", "--one-call-per-step", "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mock.requests()[0].body["parallel_tool_calls"], json!(false));
}

#[tokio::test]
async fn bad_loop_settings_are_usage_errors_naming_the_file_or_flag_and_the_key() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let dir = repo();
    let out =
        exec(&mock, dir.path(), &["--provider", "anthropic", "--loop-detection-window", "1", "x"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--loop-detection-window") && stderr(&out).contains("at least 2"));

    let config = dir.path().join(".agentls.toml");
    std::fs::write(&config, "loop_detection_window = 1\n").expect("config");
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "x"]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(".agentls.toml") && err.contains("`loop_detection_window`"), "{err}");
    assert!(err.contains("enable_loop_detection = false"), "says how to turn it off: {err}");

    std::fs::write(&config, "[tool_line_limit]\nshell = 3\n").expect("config");
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "x"]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(".agentls.toml") && err.contains("unknown field `tool_line_limit`"), "{err}");
    assert_eq!(mock.request_count(), 0, "nothing reached the model");
}

/// Seed 002 from the command line: `--submit` prints the submitted answer and exits 0;
/// `--max-steps` and `--time-limit` stop the task with exit code 4.
#[tokio::test]
async fn submit_mode_and_limits_from_flags() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let dir = repo();
    mock.push(Reply::new().text("Let me think."));
    mock.push(Reply::new().tool_call("s1", "submit", json!({"answer": "The answer is 42."})));
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--submit", "answer"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Let me think.\nThe answer is 42.\n");
    let continued = mock.requests()[1].body.to_string();
    assert!(continued.contains("call the `submit` tool with your final answer"), "{continued}");

    mock.push(Reply::new().tool_call("g1", "glob", json!({"pattern": "*.md"})));
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--max-steps", "1", "look"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("step limit reached (1 model requests)"), "{}", stderr(&out));

    mock.push(Reply::new().text("slow answer").fragment(1).delay(Duration::from_millis(500)));
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--time-limit", "1", "wait"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("time limit reached (1 s)"), "{}", stderr(&out));
}

/// A context overflow mid-task: `agentls exec` says on stderr that the conversation was
/// compacted, and `--json` carries the `compaction` event.
#[tokio::test]
async fn a_compaction_is_reported_on_stderr_and_in_json() {
    for json_mode in [false, true] {
        let mock = MockProvider::start(Dialect::Anthropic).await;
        for i in 0..4 {
            mock.push(Reply::new().tool_call(
                &format!("g{i}"),
                "glob",
                json!({"pattern": format!("*{i}.md")}),
            ));
        }
        mock.push_wire("anthropic/error_400_prompt_too_long.http");
        mock.push(Reply::new().text("The agent globbed four patterns."));
        mock.push(Reply::new().text("done"));
        let dir = repo();
        let mut args = vec!["--provider", "anthropic", "look around"];
        if json_mode {
            args.insert(0, "--json");
        }
        let out = exec(&mock, dir.path(), &args).await;
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        if json_mode {
            let events = json_events(&out);
            let compaction = events.iter().find(|e| e["kind"] == "compaction").expect("a compaction event");
            assert_eq!(compaction["data"]["trigger"], "overflow");
        } else {
            let err = stderr(&out);
            assert!(
                err.contains("agentls: compacted the conversation (overflow): 2 messages summarised by"),
                "{err}"
            );
            assert!(String::from_utf8_lossy(&out.stdout).ends_with("done\n"));
        }
    }
}

/// `agentls <args>` with the environment `exec_command` gives a run in `dir` (HOME = `dir`, so the
/// trust store is `dir/.config/agentls/trust.toml`).
fn agentls(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AGENTLS_CONFIG", dir.join(USER_CONFIG))
        .output()
        .expect("agentls runs")
}

/// A cloned repository's `.agentls.toml` names a host and a key variable of its own: until the
/// folder is trusted nothing reaches that host and the user's key goes to the user's provider;
/// `agentls trust` (the real command) makes the project's settings apply.
#[tokio::test]
async fn an_untrusted_project_file_cannot_redirect_the_provider_or_the_key_until_trusted() {
    let user = MockProvider::start(Dialect::Anthropic).await;
    let stranger = MockProvider::start(Dialect::Anthropic).await;
    let dir = repo();
    std::fs::write(
        dir.path().join(".agentls.toml"),
        format!(
            "[providers.anthropic]\nbase_url = \"{}\"\napi_key_env = \"{}\"\n",
            stranger.url(),
            OTHER_SECRET.0
        ),
    )
    .expect("project file");
    user.push(Reply::new().text("from your provider"));
    let out = exec(&user, dir.path(), &["--provider", "anthropic", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from your provider\n");
    assert_eq!(stranger.request_count(), 0, "nothing reaches the project's host");
    assert_eq!(user.requests()[0].header("x-api-key"), Some(KEY));
    let err = stderr(&out);
    assert!(err.contains("not trusted") && err.contains("`providers.anthropic.base_url`"), "{err}");
    assert!(err.contains("`providers.anthropic.api_key_env`") && err.contains("agentls trust "), "{err}");

    let doctor = agentls(dir.path(), &["doctor", "--provider", "anthropic"]);
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("workspace trust: not trusted; these keys of"), "{report}");
    assert!(report.contains("  providers.anthropic.base_url: would send your requests"), "{report}");
    assert!(report.contains("to apply them, trust the folder: agentls trust "), "{report}");

    trust_folder(dir.path());
    let listed = agentls(dir.path(), &["trust", "--list"]);
    let canonical = dir.path().canonicalize().unwrap().display().to_string();
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), canonical);
    stranger.push(Reply::new().text("from the project's host"));
    let out = exec(&user, dir.path(), &["--provider", "anthropic", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from the project's host\n");
    assert_eq!(stranger.requests()[0].header("x-api-key"), Some(OTHER_SECRET.1));
    assert!(!stderr(&out).contains("not trusted"), "{}", stderr(&out));

    assert!(agentls(dir.path(), &["trust", "--remove", &canonical]).status.success());
    assert!(!agentls(dir.path(), &["trust", "--remove", &canonical]).status.success(), "removed once");
    user.push(Reply::new().text("yours again"));
    let out = exec(&user, dir.path(), &["--provider", "anthropic", "hi"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "yours again\n", "{}", stderr(&out));
}

/// One `touch` call, then the model's closing answer; returns what the model was told of it.
async fn shell_once(dir: &Path, args: &[&str]) -> (Output, String) {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "touch ran.txt"})));
    mock.push(Reply::new().text("done"));
    let mut all = vec!["--provider", "anthropic"];
    all.extend_from_slice(args);
    all.push("make a file");
    let out = exec(&mock, dir, &all).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let told = sent_result(ProfileKind::Anthropic, &mock.requests()[1].body, "c1").content;
    (out, told)
}

/// `exec` follows the one permission policy: `ask` (the default) refuses without a terminal and
/// says how to allow; an allow prefix, `--shell allow` and the user's `permission = "allow"` run;
/// the user's `deny` refuses; an untrusted project's `allow` changes nothing.
#[tokio::test]
async fn exec_asks_the_permission_policy_before_every_command() {
    let dir = repo();
    let (out, told) = shell_once(dir.path(), &[]).await;
    assert!(!dir.path().join("ran.txt").exists());
    assert!(
        told.contains("no terminal to ask on") && told.contains("--allow-command 'touch ran.txt'"),
        "{told}"
    );
    assert!(stderr(&out).contains("not run (no terminal to ask on): touch ran.txt"), "{}", stderr(&out));

    std::fs::write(
        dir.path().join(".agentls.toml"),
        "[shell]\npermission = \"allow\"\nallow = [\"touch\"]\n",
    )
    .unwrap();
    let (out, told) = shell_once(dir.path(), &[]).await;
    assert!(!dir.path().join("ran.txt").exists(), "the project's allow needs trust: {told}");
    assert!(stderr(&out).contains("`shell.permission`") && stderr(&out).contains("`shell.allow`"));

    let (_, told) = shell_once(dir.path(), &["--allow-command", "touch"]).await;
    assert!(dir.path().join("ran.txt").exists(), "{told}");
    std::fs::remove_file(dir.path().join("ran.txt")).unwrap();
    shell_once(dir.path(), &["--shell", "allow"]).await;
    assert!(dir.path().join("ran.txt").exists());
    std::fs::remove_file(dir.path().join("ran.txt")).unwrap();

    std::fs::write(dir.path().join(USER_CONFIG), "[shell]\npermission = \"deny\"\n").unwrap();
    let (_, told) = shell_once(dir.path(), &["--allow-command", "touch"]).await;
    assert!(!dir.path().join("ran.txt").exists(), "deny wins over allow prefixes");
    assert!(
        told.contains("shell.permission = \\\"deny\\\"") || told.contains("shell.permission = \"deny\""),
        "{told}"
    );
    std::fs::write(dir.path().join(USER_CONFIG), "[shell]\npermission = \"allow\"\n").unwrap();
    shell_once(dir.path(), &[]).await;
    assert!(dir.path().join("ran.txt").exists(), "the user's own allow applies");
}

/// With a terminal on stdin and stderr (`script` gives the run a pty), `ask` asks there: `y`
/// runs the command, a typed reason refuses it and reaches the model.
#[tokio::test]
async fn exec_asks_on_a_terminal() {
    for (answer, runs) in [("y", true), ("use make instead", false)] {
        let mock = MockProvider::start(Dialect::Anthropic).await;
        mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "touch ran.txt"})));
        mock.push(Reply::new().text("done"));
        let dir = repo();
        let cmd = command_for(&mock, dir.path(), &["--provider", "anthropic", "make a file"]);
        let line = format!("{} exec --provider anthropic 'make a file'", env!("CARGO_BIN_EXE_agentls"));
        // The same environment, the binary run under `script` with a pty as its terminal.
        let mut script = tokio::process::Command::new("script");
        script.args(["-qefc", &line, "/dev/null"]).current_dir(dir.path());
        script.env_clear();
        for (k, v) in cmd.as_std().get_envs() {
            if let Some(v) = v {
                script.env(k, v);
            }
        }
        let mut child = script
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script");
        let mut stdin = child.stdin.take().expect("stdin");
        // Answer once the question is on the terminal.
        let deadline = std::time::Instant::now() + PATIENCE;
        while mock.request_count() < 1 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        use tokio::io::AsyncWriteExt;
        stdin.write_all(format!("{answer}\n").as_bytes()).await.expect("answer");
        let out =
            tokio::time::timeout(PATIENCE, child.wait_with_output()).await.expect("in time").expect("output");
        let screen = String::from_utf8_lossy(&out.stdout);
        assert!(screen.contains("agentls wants to run: touch ran.txt"), "{screen}");
        assert_eq!(dir.path().join("ran.txt").exists(), runs, "{answer}: {screen}");
        if !runs {
            let told = sent_result(ProfileKind::Anthropic, &mock.requests()[1].body, "c1").content;
            assert!(told.contains("use make instead"), "{told}");
        }
    }
}

/// `agentls sessions <args>` with the environment `exec_command` gives `agentls exec` in `dir`.
fn sessions(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
        .arg("sessions")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", dir)
        .output()
        .expect("agentls sessions runs")
}

#[tokio::test]
async fn sessions_undo_reverts_what_an_exec_runs_commands_changed_and_redo_reapplies_it() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let command = "sed -i 's/slow/fast/' config.txt && rm old.txt && mkdir -p gen && echo made > gen/new.txt";
    mock.push(Reply::new().tool_call("c1", "shell", json!({"command": command})));
    mock.push(Reply::new().text("done"));
    let dir = repo();
    let file = |name: &str| std::fs::read_to_string(dir.path().join(name)).ok();
    std::fs::write(dir.path().join("config.txt"), "mode = slow\nlevel = 1\n").expect("write");
    std::fs::write(dir.path().join("old.txt"), "old\n").expect("write");
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--shell", "allow", "speed it up"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(file("config.txt").as_deref(), Some("mode = fast\nlevel = 1\n"));
    let hint = stderr(&out);
    let id = hint
        .split("agentls sessions undo ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("exec says how to undo: {hint}"))
        .to_string();
    // The user edits another line after the run.
    std::fs::write(dir.path().join("config.txt"), "mode = fast\nlevel = 2\n").expect("user edit");

    let turns = sessions(dir.path(), &["turns", &id]);
    assert!(String::from_utf8_lossy(&turns.stdout).contains("turn 1"), "{turns:?}");
    let undo = sessions(dir.path(), &["undo", &id]);
    assert!(undo.status.success(), "{}", String::from_utf8_lossy(&undo.stderr));
    let said = String::from_utf8_lossy(&undo.stdout);
    assert!(said.contains("undid turn 1") && said.contains("M config.txt"), "{said}");
    assert!(said.contains("A old.txt") && said.contains("D gen/new.txt"), "{said}");
    assert_eq!(file("config.txt").as_deref(), Some("mode = slow\nlevel = 2\n"), "the user's line is kept");
    assert_eq!(file("old.txt").as_deref(), Some("old\n"));
    assert_eq!(file("gen/new.txt"), None);
    assert!(!dir.path().join(".git/index").exists(), "git's index is never touched");

    let again = sessions(dir.path(), &["undo", &id]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to undo"), "{again:?}");
    let redo = sessions(dir.path(), &["redo", &id]);
    assert!(redo.status.success(), "{}", String::from_utf8_lossy(&redo.stderr));
    assert_eq!(file("config.txt").as_deref(), Some("mode = fast\nlevel = 2\n"));
    assert_eq!(file("old.txt"), None);
    assert_eq!(file("gen/new.txt").as_deref(), Some("made\n"));
}
