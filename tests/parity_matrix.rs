//! Spec §9.12 parity cells for the three profiles with scripted turns and the real tool sets:
//! file creation, read-then-edit in the profile's own edit format, shell execution.

mod session_harness;
mod support;

use agentls::profiles::ProfileKind;
use serde_json::{Value, json};
use session_harness::{Harness, Setup, reason};
use support::mock_provider::Turn as Reply;

fn read_args(profile: ProfileKind, h: &Harness, rel: &str) -> Value {
    match profile {
        ProfileKind::Gemini => json!({"absolute_path": h.path(rel).display().to_string()}),
        _ => json!({"file_path": rel}),
    }
}

fn edit_call(profile: ProfileKind) -> (&'static str, Value) {
    match profile {
        ProfileKind::OpenAi => (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: hello.py\n@@\n print('Hello World')\n+print('Goodbye')\n*** End Patch\n"}),
        ),
        ProfileKind::Anthropic => (
            "edit_file",
            json!({"file_path": "hello.py", "old_string": "print('Hello World')", "new_string": "print('Hello World')\nprint('Goodbye')"}),
        ),
        ProfileKind::Gemini => (
            "replace",
            json!({"file_path": "hello.py", "old_string": "print('Hello World')", "new_string": "print('Hello World')\nprint('Goodbye')"}),
        ),
    }
}

async fn create_read_edit_and_run(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "write_file",
        json!({"file_path": "hello.py", "content": "print('Hello World')\n"}),
    ));
    h.mock.push(Reply::new().text("Created hello.py."));
    assert_eq!(reason(&h.run("Create hello.py that prints Hello World").await), "completed");
    assert!(h.read("hello.py").contains("Hello"));

    let read = read_args(profile, &h, "hello.py");
    let (edit_tool, edit_args) = edit_call(profile);
    h.mock.push(Reply::new().tool_call("c2", "read_file", read));
    h.mock.push(Reply::new().tool_call("c3", edit_tool, edit_args));
    h.mock.push(Reply::new().text("Added Goodbye."));
    assert_eq!(reason(&h.run("Read hello.py and add a Goodbye print").await), "completed");
    let content = h.read("hello.py");
    assert!(content.contains("Hello") && content.contains("Goodbye"), "{content}");

    h.mock.push(Reply::new().tool_call(
        "c4",
        "shell",
        json!({"command": "python3 hello.py || cat hello.py"}),
    ));
    h.mock.push(Reply::new().text("It printed both lines."));
    assert_eq!(reason(&h.run("Run hello.py").await), "completed");
    let body = h.request_text(h.requests().len() - 1);
    assert!(body.contains("Goodbye"), "the shell output reached the model");
}

#[tokio::test]
async fn openai_creates_reads_patches_and_runs() {
    create_read_edit_and_run(ProfileKind::OpenAi).await;
}

#[tokio::test]
async fn anthropic_creates_reads_edits_and_runs() {
    create_read_edit_and_run(ProfileKind::Anthropic).await;
}

#[tokio::test]
async fn gemini_creates_reads_replaces_and_runs() {
    create_read_edit_and_run(ProfileKind::Gemini).await;
}
