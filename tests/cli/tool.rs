//! `agentls tool` as a process: output is what the model would receive, exit codes 0 / 1 / 2,
//! arguments from stdin, configuration from the project file.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn agentls(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentls"));
    command
        .arg("tool")
        .args(args)
        .current_dir(dir)
        .env("AGENTLS_CONFIG", dir.join("no-user-config.toml"))
        .env_remove("AGENTLS_PROVIDER")
        .env("OPENAI_API_KEY", "sk-cli-test-secret")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("agentls runs");
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A shell result printed by `agentls tool` without its last line, which reports the duration.
fn without_duration(text: &str) -> String {
    let (rest, last) = text.trim_end_matches('\n').rsplit_once('\n').unwrap_or_default();
    assert!(last.starts_with("Duration: ") && last.ends_with(" ms"), "{text:?}");
    rest.to_string()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.py"), "print('Hello')\nprint('World')\n").unwrap();
    dir
}

#[test]
fn prints_what_the_model_receives_and_exits_zero() {
    let dir = project();
    let output = agentls(dir.path(), &["read_file", r#"{"file_path": "hello.py"}"#], None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout(&output), "  1 | print('Hello')\n  2 | print('World')\n");
}

#[test]
fn cwd_and_profile_flags_choose_directory_and_tool_shape() {
    let dir = project();
    let elsewhere = tempfile::tempdir().unwrap();
    let output = agentls(
        elsewhere.path(),
        &[
            "read_file",
            "--cwd",
            dir.path().to_str().unwrap(),
            "--profile",
            "gemini",
            r#"{"absolute_path": "hello.py", "offset": 1}"#,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout(&output).starts_with("  2 | print('World')\n"), "{}", stdout(&output));
}

#[test]
fn a_profile_answers_to_the_spec_name_of_its_edit_tool_and_no_profile_picks_the_exact_name() {
    let dir = project();
    let edit = r#"{"file_path": "hello.py", "old_string": "Hello", "new_string": "Hi"}"#;
    let output = agentls(dir.path(), &["edit_file", "--profile", "gemini", edit], None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    // gemini-cli's `replace` did the work: its own wording of the result.
    assert!(stdout(&output).starts_with("Successfully modified file"), "{}", stdout(&output));
    let edit = r#"{"file_path": "hello.py", "old_string": "World", "new_string": "Earth"}"#;
    let output = agentls(dir.path(), &["edit_file", edit], None);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout(&output).starts_with("The file hello.py has been updated"), "{}", stdout(&output));
    let text = std::fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert_eq!(text, "print('Hi')\nprint('Earth')\n");
}

#[test]
fn tool_errors_exit_one_with_the_error_text() {
    let dir = project();
    let output = agentls(dir.path(), &["shell", r#"{"command": "echo failing; exit 4"}"#], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(without_duration(&stdout(&output)), "Tool error (shell): failing\nExit code: 4");

    let invalid = agentls(dir.path(), &["read_file", r#"{"file_path": 7}"#], None);
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stdout(&invalid).contains("`file_path`"), "{}", stdout(&invalid));
}

#[test]
fn usage_errors_exit_two() {
    let dir = project();
    for args in [
        vec!["no_such_tool", "{}"],
        vec!["read_file", "not json"],
        vec!["read_file", "[1, 2]"],
        vec!["read_file", "--profile", "nope", "{}"],
        vec!["read_file", "--cwd", "/definitely/not/here", "{}"],
        vec!["list_dir", "--profile", "openai", "{}"],
    ] {
        let output = agentls(dir.path(), &args, None);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn arguments_can_come_from_stdin_at_any_size() {
    let dir = project();
    let payload = "z".repeat(400_000);
    let args = serde_json::json!({"command": format!("printf '%s' '{payload}' | wc -c")}).to_string();
    let output = agentls(dir.path(), &["shell", "-"], Some(&args));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout(&output).split_whitespace().next(), Some("400000"));
}

#[test]
fn large_output_carries_the_truncation_marker() {
    let dir = project();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(100_000)).unwrap();
    let output = agentls(dir.path(), &["read_file", r#"{"file_path": "big.txt"}"#], None);
    let text = stdout(&output);
    assert!(text.contains("[WARNING: Tool output was truncated. "), "marker missing");
    assert!(text.len() < 51_000);
}

#[test]
fn project_configuration_sets_the_shell_timeout_and_the_spec_message_is_printed() {
    let dir = project();
    std::fs::write(dir.path().join(".agentls.toml"), "[shell]\ndefault_timeout_ms = 300\n").unwrap();
    let output = agentls(dir.path(), &["shell", r#"{"command": "echo partial; sleep 30"}"#], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        without_duration(&stdout(&output)),
        "Tool error (shell): partial\n[ERROR: Command timed out after 300ms. Partial output is shown above. \
         You can retry with a longer timeout by setting the timeout_ms parameter.]"
    );
}

#[test]
fn secrets_never_reach_commands() {
    let dir = project();
    let output = agentls(dir.path(), &["shell", r#"{"command": "env"}"#], None);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(!text.contains("sk-cli-test-secret") && !text.contains("OPENAI_API_KEY"));
}
