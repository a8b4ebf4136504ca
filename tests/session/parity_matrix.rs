//! Spec §9.12: the cross-provider parity matrix. Every cell runs once per profile (openai with
//! apply_patch over the Responses API, anthropic with edit_file over Messages, gemini with replace
//! over Gemini), with the profile's real tool set, scripted model turns from the loopback mock
//! provider, real files in a temporary directory and real processes. Each cell checks the disk,
//! the events, and what the model received in the profile's own wire format.
//!
//! Test names are `<cell>::<profile>`, e.g. `shell_timeout::gemini`. Beyond the spec's table:
//! one-call-per-step mode and context-overflow pruning (seed 002).

use crate::support;
use crate::support::session_harness;

use agentls::llm::ReasoningEffort;
use agentls::profiles::ProfileKind;
use agentls::session::{ConfigChange, EventKind, Turn};
use serde_json::{Value, json};
use session_harness::calls::{
    assert_error_result, edit_call, last_message, offered_tools, read_call, sent_effort, sent_result,
    sent_results, update_hunk,
};
use session_harness::{Harness, Setup, of_kind, reason, str_of};
use support::mock_provider::{ErrorPreset, Turn as Reply};

/// The spec's timeout message (§5.4) for `ms`.
fn timeout_message(ms: u64) -> String {
    format!(
        "[ERROR: Command timed out after {ms}ms. Partial output is shown above. You can retry with a longer \
         timeout by setting the timeout_ms parameter.]"
    )
}

/// A shell command that runs until the test creates `release` in the working directory.
const WAIT_FOR_RELEASE: &str = "while [ ! -e release ]; do sleep 0.01; done; echo released";

fn tool_end<'a>(events: &'a [agentls::session::Event], call_id: &str) -> &'a agentls::session::Event {
    of_kind(events, EventKind::ToolCallEnd)
        .into_iter()
        .find(|e| str_of(e, "call_id") == call_id)
        .unwrap_or_else(|| panic!("no TOOL_CALL_END for {call_id}"))
}

// ---- the cells ---------------------------------------------------------------------------------

async fn file_creation(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    h.mock.push(Reply::new().text("Creating it.").tool_call(
        "c1",
        "write_file",
        json!({"file_path": "hello.py", "content": "print('Hello World')\n"}),
    ));
    h.mock.push(Reply::new().text("Created hello.py."));
    let events = h.run("Create a file called hello.py that prints 'Hello World'").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.read("hello.py"), "print('Hello World')\n");
    assert_eq!(str_of(tool_end(&events, "c1"), "status"), "ok");
    let result = sent_result(profile, &h.body(1), "c1");
    assert_ne!(result.is_error, Some(true));
    assert!(result.content.contains("hello.py"), "{result:?}");
}

async fn read_then_edit(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile).file("hello.py", "print('Hello World')\n")).await;
    h.mock.push(Reply::new().tool_call("c1", "read_file", read_call(profile, h.dir.path(), "hello.py")));
    let (tool, args) = edit_call(
        profile,
        h.dir.path(),
        "hello.py",
        "print('Hello World')",
        "print('Hello World')\nprint('Goodbye')",
    );
    h.mock.push(Reply::new().tool_call("c2", tool, args));
    h.mock.push(Reply::new().text("Added the Goodbye line."));
    let events = h.run("Read hello.py and add a second print statement that says 'Goodbye'").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.read("hello.py"), "print('Hello World')\nprint('Goodbye')\n");
    let read = sent_result(profile, &h.body(1), "c1");
    assert!(read.content.contains("1 | print('Hello World')"), "line-numbered content: {read:?}");
    let edit = sent_result(profile, &h.body(2), "c2");
    assert_ne!(edit.is_error, Some(true), "{edit:?}");
}

async fn multi_file_edit(profile: ProfileKind) {
    let setup = Setup::new(profile).file("src/a.py", "A = 1\n").file("src/b.py", "B = 2\n");
    let mut h = Harness::start(setup).await;
    h.mock.push(
        Reply::new().tool_call("r1", "read_file", read_call(profile, h.dir.path(), "src/a.py")).tool_call(
            "r2",
            "read_file",
            read_call(profile, h.dir.path(), "src/b.py"),
        ),
    );
    let edits = match profile {
        // codex edits several files with one patch.
        ProfileKind::OpenAi => Reply::new().tool_call(
            "e1",
            "apply_patch",
            json!({"patch": format!(
                "*** Begin Patch\n{}{}*** End Patch\n",
                update_hunk("src/a.py", "A = 1", "A = 10"),
                update_hunk("src/b.py", "B = 2", "B = 20")
            )}),
        ),
        _ => {
            let (tool, a) = edit_call(profile, h.dir.path(), "src/a.py", "A = 1", "A = 10");
            let (_, b) = edit_call(profile, h.dir.path(), "src/b.py", "B = 2", "B = 20");
            Reply::new().tool_call("e1", tool, a).tool_call("e2", tool, b)
        }
    };
    h.mock.push(edits);
    h.mock.push(Reply::new().tool_call(
        "w1",
        "write_file",
        json!({"file_path": "src/c.py", "content": "C = A + B\n"}),
    ));
    h.mock.push(Reply::new().text("Updated a.py and b.py, added c.py."));
    assert_eq!(reason(&h.run("Multiply A and B by ten and add c.py").await), "completed");
    assert_eq!(h.read("src/a.py"), "A = 10\n");
    assert_eq!(h.read("src/b.py"), "B = 20\n");
    assert_eq!(h.read("src/c.py"), "C = A + B\n");

    // A second input in the same session edits again on top of the first.
    let (tool, args) = edit_call(profile, h.dir.path(), "src/a.py", "A = 10", "A = 100");
    h.mock.push(Reply::new().tool_call("e3", tool, args));
    h.mock.push(Reply::new().text("Done."));
    assert_eq!(reason(&h.run("Make A a hundred").await), "completed");
    assert_eq!(h.read("src/a.py"), "A = 100\n");
}

async fn shell_execution(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "shell",
        json!({"command": "echo sum=$((2+3)); echo oops >&2"}),
    ));
    h.mock.push(Reply::new().tool_call("c2", "shell", json!({"command": "echo failing; exit 3"})));
    h.mock.push(Reply::new().text("The sum is 5."));
    let events = h.run("Add two and three in the shell").await;
    assert_eq!(reason(&events), "completed");
    let ok = sent_result(profile, &h.body(1), "c1");
    assert!(ok.content.contains("sum=5") && ok.content.contains("oops"), "stdout and stderr: {ok:?}");
    assert!(ok.content.contains("Exit code: 0"));
    assert_ne!(ok.is_error, Some(true));
    assert_error_result(profile, &h.body(2), "c2", "Exit code: 3");
    assert!(str_of(tool_end(&events, "c1"), "output").contains("sum=5"));
    let start = &of_kind(&events, EventKind::ToolCallStart)[0];
    assert_eq!(str_of(start, "tool_name"), "shell");
}

async fn shell_timeout(profile: ProfileKind) {
    // The configured default applies to calls without timeout_ms, for every profile.
    let setup = Setup::new(profile).config(|c| c.default_command_timeout_ms = Some(250));
    let mut h = Harness::start(setup).await;
    h.mock.push(
        Reply::new()
            .tool_call("c1", "shell", json!({"command": "echo partial-one; sleep 30", "timeout_ms": 300}))
            .tool_call("c2", "shell", json!({"command": "echo partial-two; sleep 30"})),
    );
    h.mock.push(Reply::new().tool_call("c3", "shell", json!({"command": "echo quick", "timeout_ms": 5000})));
    h.mock.push(Reply::new().text("The long command timed out; the quick one worked."));
    let events = h.run("Run 'sleep 30' with the default timeout").await;
    assert_eq!(reason(&events), "completed", "the model carries on after a timeout");
    for (call, partial, ms) in [("c1", "partial-one", 300), ("c2", "partial-two", 250)] {
        let result = sent_result(profile, &h.body(1), call);
        assert!(result.content.contains(partial), "partial output kept: {result:?}");
        assert!(result.content.contains(&timeout_message(ms)), "§5.4 message for {call}: {result:?}");
        assert_ne!(result.is_error, Some(false));
        assert_eq!(str_of(tool_end(&events, call), "status"), "error");
    }
    assert!(sent_result(profile, &h.body(2), "c3").content.contains("quick"));
}

async fn grep_and_glob(profile: ProfileKind) {
    let setup = Setup {
        git: true,
        ..Setup::new(profile)
            .file(".gitignore", "target/\n")
            .file("src/lib.rs", "pub fn needle() {}\n")
            .file("src/other.rs", "pub fn hay() {}\n")
            .file("docs/guide.md", "Find the needle here.\n")
            .file("target/gen.rs", "fn needle() {}\n")
    };
    let mut h = Harness::start(setup).await;
    h.mock.push(
        Reply::new()
            .tool_call("g1", "grep", json!({"pattern": "needle", "output_mode": "files_with_matches"}))
            .tool_call("g2", "glob", json!({"pattern": "**/*.rs"}))
            .tool_call("g3", "grep", json!({"pattern": "fn \\w+", "glob_filter": "*.rs"})),
    );
    h.mock.push(Reply::new().text("needle is defined in src/lib.rs."));
    assert_eq!(reason(&h.run("Where is needle defined?").await), "completed");
    let grep = sent_result(profile, &h.body(1), "g1").content;
    assert!(grep.contains("src/lib.rs") && grep.contains("docs/guide.md"), "{grep}");
    assert!(
        !grep.contains("other.rs") && !grep.contains("target/"),
        "gitignored and non-matching files: {grep}"
    );
    let glob = sent_result(profile, &h.body(1), "g2").content;
    assert!(glob.contains("src/lib.rs") && glob.contains("src/other.rs"), "{glob}");
    assert!(!glob.contains("guide.md") && !glob.contains("target/"), "{glob}");
    let content = sent_result(profile, &h.body(1), "g3").content;
    assert!(content.contains("pub fn needle") && content.contains("pub fn hay"), "{content}");
    assert!(!content.contains("Find the needle"), "the glob filter applies: {content}");
}

async fn multi_step(profile: ProfileKind) {
    let setup = Setup::new(profile)
        .file("config.py", "TIMEOUT = 30\nRETRIES = 3\n")
        .file("client.py", "from config import TIMEOUT\n");
    let mut h = Harness::start(setup).await;
    h.mock.push(Reply::new().text("Reading the config first.").tool_call(
        "s1",
        "read_file",
        read_call(profile, h.dir.path(), "config.py"),
    ));
    h.mock.push(Reply::new().text("TIMEOUT is 30 seconds; checking who uses it.").tool_call(
        "s2",
        "grep",
        json!({"pattern": "TIMEOUT"}),
    ));
    let (tool, args) = edit_call(profile, h.dir.path(), "config.py", "TIMEOUT = 30", "TIMEOUT = 60");
    h.mock.push(
        Reply::new().text("Only client.py imports it, so doubling is safe.").tool_call("s3", tool, args),
    );
    h.mock.push(Reply::new().text("Doubled TIMEOUT to 60."));
    let events = h.run("Double the timeout if nothing depends on its value").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.read("config.py"), "TIMEOUT = 60\nRETRIES = 3\n");
    assert_eq!(h.requests().len(), 4);
    assert!(sent_result(profile, &h.body(1), "s1").content.contains("TIMEOUT = 30"));
    let grep = sent_result(profile, &h.body(2), "s2").content;
    assert!(grep.contains("client.py") && grep.contains("config.py"), "{grep}");
    // Each step's analysis stays in the conversation.
    let last = h.request_text(3);
    assert!(last.contains("TIMEOUT is 30 seconds") && last.contains("Only client.py imports it"));
    assert_eq!(of_kind(&events, EventKind::ToolCallEnd).len(), 3);
}

async fn truncation(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile).file("big.txt", "x".repeat(100_000))).await;
    h.mock.push(
        Reply::new().tool_call("t1", "read_file", read_call(profile, h.dir.path(), "big.txt")).tool_call(
            "t2",
            "shell",
            json!({"command": "seq 1 1000"}),
        ),
    );
    h.mock.push(Reply::new().text("It is a lot of x."));
    let events = h.run("Read big.txt and count to a thousand").await;
    assert_eq!(reason(&events), "completed");
    // TOOL_CALL_END carries everything…
    let full_read = str_of(tool_end(&events, "t1"), "output");
    assert!(full_read.contains(&"x".repeat(100_000)), "full read output ({} chars)", full_read.len());
    let full_seq = str_of(tool_end(&events, "t2"), "output");
    assert!(full_seq.contains("\n500\n") && full_seq.contains("\n1000\n"));
    // …the model gets the truncated text with the markers.
    let read = sent_result(profile, &h.body(1), "t1").content;
    assert!(read.contains("[WARNING: Tool output was truncated."), "character marker");
    assert!(read.len() < 60_000, "read_file is cut to about 50k characters, got {}", read.len());
    let seq = sent_result(profile, &h.body(1), "t2").content;
    assert!(seq.contains("lines omitted ...]"), "line marker: {}", &seq[..seq.len().min(300)]);
    assert!(!seq.contains("\n500\n"), "the middle lines are gone");
    assert!(seq.starts_with("1\n") && seq.contains("1000"), "head and tail kept");
}

async fn parallel_calls(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    // Commands of one step run one after the other, in call order: the second sees the first's
    // file although the first takes longer.
    h.mock.push(
        Reply::new()
            .tool_call(
                "p1",
                "shell",
                json!({"command": "sleep 0.2; echo first-done > order.txt; echo first-done"}),
            )
            .tool_call("p2", "shell", json!({"command": "cat order.txt; echo second-done"})),
    );
    h.mock.push(Reply::new().text("Both ran."));
    assert_eq!(reason(&h.run("Run both").await), "completed");
    let results = sent_results(profile, &h.body(1));
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["p1", "p2"], "results in call order");
    assert!(results[0].content.contains("first-done"));
    assert!(
        results[1].content.contains("first-done") && results[1].content.contains("second-done"),
        "the second command ran after the first: {}",
        results[1].content
    );
}

async fn one_call_per_step(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile).config(|c| c.one_call_per_step = true)).await;
    h.mock.push(
        Reply::new()
            .tool_call("o1", "write_file", json!({"file_path": "one.txt", "content": "1\n"}))
            .tool_call("o2", "write_file", json!({"file_path": "two.txt", "content": "2\n"})),
    );
    h.mock.push(Reply::new().text("Wrote one.txt; two.txt next time."));
    assert_eq!(reason(&h.run("Write two files").await), "completed");
    assert!(h.path("one.txt").exists());
    assert!(!h.path("two.txt").exists(), "the second call must not run");
    assert_error_result(profile, &h.body(1), "o2", "was not executed");
    let first = &h.requests()[0].body;
    match profile {
        ProfileKind::OpenAi => assert_eq!(first["parallel_tool_calls"], false),
        ProfileKind::Anthropic => assert_eq!(first["tool_choice"]["disable_parallel_tool_use"], true),
        ProfileKind::Gemini => {}
        ProfileKind::Code => unreachable!("the matrix covers the coding profiles"),
    }
    assert!(h.request_text(0).contains("at most one tool call per step"), "the system prompt says so");
}

async fn steering(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "shell",
        json!({"command": WAIT_FOR_RELEASE, "timeout_ms": 20000}),
    ));
    h.mock.push(Reply::new().tool_call(
        "c2",
        "write_file",
        json!({"file_path": "app.py", "content": "@app.get('/health')\ndef health(): return 'ok'\n"}),
    ));
    h.mock.push(Reply::new().text("Only /health for now."));
    h.handle.submit("Create a Flask web application with multiple routes".into());
    h.until(EventKind::ToolCallStart).await;
    h.handle.steer("Actually, just create a single /health endpoint for now".into());
    std::fs::write(h.path("release"), "").expect("release the command");
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "completed");
    let injected = of_kind(&events, EventKind::SteeringInjected);
    assert_eq!(injected.len(), 1);
    let (role, text) = last_message(profile, &h.body(1));
    assert_eq!(role, "user", "steering reaches the model as a user message");
    assert!(text.contains("single /health endpoint"), "{text}");
    assert!(sent_result(profile, &h.body(1), "c1").content.contains("released"), "after the tool round");
    assert!(h.read("app.py").contains("/health"));
    assert!(h.handle.history().iter().any(|t| matches!(t, Turn::Steering(_))));
}

async fn reasoning_effort_change(profile: ProfileKind) {
    let setup = Setup::new(profile).config(|c| c.reasoning_effort = Some(ReasoningEffort::High));
    let mut h = Harness::start(setup).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "shell",
        json!({"command": WAIT_FOR_RELEASE, "timeout_ms": 20000}),
    ));
    h.mock.push(Reply::new().text("Done thinking."));
    h.handle.submit("Think hard, then less".into());
    h.until(EventKind::ToolCallStart).await;
    h.handle
        .configure(ConfigChange { reasoning_effort: Some(Some(ReasoningEffort::Low)), ..Default::default() });
    std::fs::write(h.path("release"), "").expect("release the command");
    assert_eq!(reason(&h.until(EventKind::ProcessingEnd).await), "completed");
    h.handle.configure(ConfigChange { reasoning_effort: Some(None), ..Default::default() });
    h.mock.push(Reply::new().text("Default effort."));
    assert_eq!(reason(&h.run("And now the provider default").await), "completed");
    let (high, low) = match profile {
        ProfileKind::OpenAi => (json!("high"), json!("low")),
        ProfileKind::Anthropic => (json!(16384), json!(2048)),
        ProfileKind::Gemini => (json!(24576), json!(1024)),
        ProfileKind::Code => unreachable!("the matrix covers the coding profiles"),
    };
    assert_eq!(sent_effort(profile, &h.body(0)), high);
    assert_eq!(sent_effort(profile, &h.body(1)), low, "the change applies to the very next call");
    assert_eq!(sent_effort(profile, &h.body(2)), Value::Null, "None leaves it to the provider");
}

async fn loop_detection(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile).file("notes.txt", "same\n").config(|c| {
        c.loop_detection_window = 4;
    }))
    .await;
    for id in ["l1", "l2", "l3", "l4"] {
        h.mock.push(Reply::new().tool_call(id, "read_file", read_call(profile, h.dir.path(), "notes.txt")));
    }
    h.mock.push(Reply::new().text("I was going in circles; the file just says 'same'."));
    let events = h.run("What does notes.txt say?").await;
    assert_eq!(reason(&events), "completed");
    let detected = of_kind(&events, EventKind::LoopDetection);
    assert_eq!(detected.len(), 1, "one warning after the fourth identical call");
    assert!(str_of(detected[0], "message").starts_with("Loop detected: the last 4 tool calls"));
    let (role, text) = last_message(profile, &h.body(4));
    assert_eq!(role, "user");
    assert!(text.contains("Loop detected"), "the model sees the warning: {text}");
    assert!(!h.request_text(3).contains("Loop detected"), "not before the pattern is complete");
}

async fn error_recovery(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile).file("real.txt", "the real content\n")).await;
    let bad_args = match profile {
        ProfileKind::Gemini => json!({"absolute_path": 42}),
        _ => json!({"file_path": 42}),
    };
    h.mock.push(
        Reply::new()
            .tool_call("x1", "frobnicate", json!({"level": 11}))
            .tool_call("x2", "read_file", bad_args)
            .tool_call("x3", "read_file", read_call(profile, h.dir.path(), "missing.txt")),
    );
    h.mock.push(Reply::new().text("Let me fix that.").tool_call(
        "x4",
        "read_file",
        read_call(profile, h.dir.path(), "real.txt"),
    ));
    h.mock.push(Reply::new().text("It says: the real content."));
    let events = h.run("What does real.txt say?").await;
    assert_eq!(reason(&events), "completed", "errors do not end the turn");
    assert_error_result(profile, &h.body(1), "x1", "Unknown tool: frobnicate");
    assert_error_result(profile, &h.body(1), "x2", "Invalid arguments for tool read_file");
    assert_error_result(profile, &h.body(1), "x3", "missing.txt");
    for id in ["x1", "x2", "x3"] {
        assert_eq!(str_of(tool_end(&events, id), "status"), "error");
    }
    let fixed = sent_result(profile, &h.body(2), "x4");
    assert!(fixed.content.contains("the real content") && fixed.is_error != Some(true), "{fixed:?}");
}

async fn native_edit_format(profile: ProfileKind) {
    let setup = Setup::new(profile)
        .file("keep.py", "x = 1\ny = x\nz = x\n")
        .file("old_name.py", "import old_dep\n")
        .file("obsolete.py", "pass\n");
    let mut h = Harness::start(setup).await;
    let tools = |h: &Harness| offered_tools(profile, &h.body(0));
    match profile {
        ProfileKind::OpenAi => {
            let patch = "*** Begin Patch\n\
                         *** Add File: new.py\n+print('new')\n\
                         *** Update File: old_name.py\n*** Move to: renamed.py\n@@\n-import old_dep\n+import new_dep\n\
                         *** Delete File: obsolete.py\n\
                         *** Update File: keep.py\n@@ x = 1\n y = x\n-z = x\n+z = 2 * x\n\
                         *** End Patch\n";
            h.mock.push(Reply::new().tool_call("f1", "apply_patch", json!({"patch": patch})));
            h.mock.push(Reply::new().text("Applied."));
            assert_eq!(reason(&h.run("Restructure the modules").await), "completed");
            assert_eq!(h.read("new.py"), "print('new')\n");
            assert_eq!(h.read("renamed.py"), "import new_dep\n");
            assert!(!h.path("old_name.py").exists() && !h.path("obsolete.py").exists());
            assert_eq!(h.read("keep.py"), "x = 1\ny = x\nz = 2 * x\n");
            let t = tools(&h);
            assert!(t.contains(&"apply_patch".into()) && !t.contains(&"edit_file".into()), "{t:?}");
        }
        ProfileKind::Anthropic => {
            // Claude Code's guard: a file must be read before edit_file may change it.
            h.mock.push(Reply::new().tool_call(
                "f1",
                "edit_file",
                json!({"file_path": "keep.py", "old_string": "x", "new_string": "v", "replace_all": true}),
            ));
            h.mock.push(Reply::new().tool_call("f2", "read_file", json!({"file_path": "keep.py"})));
            h.mock.push(Reply::new().tool_call(
                "f3",
                "edit_file",
                json!({"file_path": "keep.py", "old_string": "x", "new_string": "v", "replace_all": true}),
            ));
            h.mock.push(Reply::new().text("Renamed x to v everywhere."));
            assert_eq!(reason(&h.run("Rename x to v").await), "completed");
            assert_error_result(profile, &h.body(1), "f1", "has not been read");
            assert_eq!(h.read("keep.py"), "v = 1\ny = v\nz = v\n");
            let t = tools(&h);
            assert!(t.contains(&"edit_file".into()) && !t.contains(&"apply_patch".into()), "{t:?}");
        }
        ProfileKind::Gemini => {
            let path = h.path("keep.py").display().to_string();
            h.mock.push(Reply::new().tool_call(
                "f1",
                "replace",
                json!({"file_path": path, "old_string": "= x", "new_string": "= w", "expected_replacements": 3}),
            ));
            h.mock.push(Reply::new().tool_call(
                "f2",
                "replace",
                json!({"file_path": path, "old_string": "= x", "new_string": "= w", "expected_replacements": 2}),
            ));
            h.mock.push(Reply::new().text("Replaced both uses."));
            assert_eq!(reason(&h.run("Use w instead of x on the right-hand sides").await), "completed");
            assert_error_result(profile, &h.body(1), "f1", "Expected 3 occurrences");
            assert_eq!(h.read("keep.py"), "x = 1\ny = w\nz = w\n");
            let t = tools(&h);
            assert!(t.contains(&"replace".into()) && t.contains(&"read_many_files".into()), "{t:?}");
            assert!(!t.contains(&"apply_patch".into()) && !t.contains(&"edit_file".into()), "{t:?}");
        }
        ProfileKind::Code => unreachable!("the matrix covers the coding profiles"),
    }
}

/// Seed 004: each provider's context-length error compacts the history (the oldest rounds
/// become a summary; the task and the newest rounds stay) and retries.
async fn context_overflow(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    for i in 0..4 {
        let command = format!("echo round-{i}-output");
        h.mock.push(Reply::new().tool_call(&format!("r{i}"), "shell", json!({ "command": command })));
    }
    h.mock.push(ErrorPreset::ContextLength);
    h.mock.push(Reply::new().text("Summary: four echo commands ran."));
    h.mock.push(Reply::new().text("Fits now."));
    let events = h.run("the original task").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(of_kind(&events, EventKind::Compaction).len(), 1, "a compaction event");
    let retried = h.request_text(6);
    assert!(retried.contains(agentls::session::SUMMARY_SENTINEL), "the summary is sent");
    assert!(retried.contains("the original task"), "the first user message is kept");
    assert!(!retried.contains("round-0-output"), "the oldest round is summarised");
    assert!(retried.contains("round-3-output"), "the newest round is kept");
}

/// Spec §7: the parent spawns a subagent and waits for it; the subagent creates a file with the
/// profile's own tools. Parent and child speak the profile's wire dialect; each gets its own
/// script (routed by the child's task), so they may run concurrently.
async fn subagent_spawn_and_wait(profile: ProfileKind) {
    let mut h = Harness::start(Setup::new(profile)).await;
    let task = "Create notes.txt saying hi";
    h.mock.push(Reply::new().tool_call("s1", "spawn_agent", json!({"task": task})));
    h.mock.push(Reply::new().tool_call("w1", "wait", json!({"agent_id": "agent-1"})));
    h.mock.push(Reply::new().text("The subagent created notes.txt."));
    h.mock.push_for(
        task,
        Reply::new().tool_call("c1", "write_file", json!({"file_path": "notes.txt", "content": "hi\n"})),
    );
    h.mock.push_for(task, Reply::new().text("created notes.txt"));
    let events = h.run("Delegate creating notes.txt").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.read("notes.txt"), "hi\n");

    let dialect = h.mock.dialect();
    let (child, parent): (Vec<Value>, Vec<Value>) = h
        .requests()
        .into_iter()
        .map(|r| r.body)
        .partition(|b| support::mock_provider::first_user_message(dialect, b).contains(task));
    assert_eq!((parent.len(), child.len()), (3, 2));
    let spawned = sent_result(profile, &parent[1], "s1");
    assert_eq!(spawned.content, json!({"agent_id": "agent-1", "status": "running"}).to_string());
    let waited = sent_result(profile, &parent[2], "w1");
    assert_eq!(
        waited.content,
        json!({"output": "created notes.txt", "success": true, "turns_used": 2}).to_string()
    );
    assert_ne!(waited.is_error, Some(true));
    let created = sent_result(profile, &child[1], "c1");
    assert!(created.content.contains("notes.txt"), "the child's own tool result: {created:?}");
    let (parent_tools, child_tools) = (offered_tools(profile, &parent[0]), offered_tools(profile, &child[0]));
    assert!(parent_tools.contains(&"spawn_agent".to_string()) && parent_tools.contains(&"wait".to_string()));
    assert!(!child_tools.contains(&"spawn_agent".to_string()), "depth 1 is the limit: {child_tools:?}");
    let write = events
        .iter()
        .find(|e| e.kind() == EventKind::ToolCallEnd && str_of(e, "call_id") == "c1")
        .expect("the child's call is in the parent's stream");
    let agent = write.agent.as_ref().expect("marked with its agent");
    assert_eq!((agent.agent_id.as_str(), agent.parent_call_id.as_str()), ("agent-1", "s1"));
}

/// Gemini mostly sends function calls without ids: results go back by name, in call order, and
/// the next response may reuse the same names without confusion.
#[tokio::test]
async fn gemini_calls_without_ids_are_answered_in_order() {
    let profile = ProfileKind::Gemini;
    let mut h = Harness::start(Setup::new(profile).file("a.txt", "alpha\n").file("b.txt", "beta\n")).await;
    h.mock.push(
        Reply::new().tool_call("", "read_file", read_call(profile, h.dir.path(), "a.txt")).tool_call(
            "",
            "read_file",
            read_call(profile, h.dir.path(), "b.txt"),
        ),
    );
    h.mock.push(Reply::new().tool_call("", "shell", json!({"command": "echo gamma"})));
    h.mock.push(Reply::new().text("alpha, beta, gamma"));
    assert_eq!(reason(&h.run("read both, then echo").await), "completed");
    let responses: Vec<Value> = h.body(1)["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["parts"].as_array())
        .flatten()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect();
    assert_eq!(responses.len(), 2);
    for (response, expected) in responses.iter().zip(["alpha", "beta"]) {
        assert_eq!(response["name"], "read_file");
        assert!(response.get("id").is_none(), "no invented id is sent back: {response}");
        assert!(response["response"]["result"].as_str().unwrap_or_default().contains(expected));
    }
    let calls = h.body(1)["contents"].to_string();
    assert!(!calls.contains("gemini-call-"), "synthetic ids stay internal");
    assert!(h.request_text(2).contains("gamma"));
}

/// One test per profile for each cell: `<cell>::openai`, `<cell>::anthropic`, `<cell>::gemini`.
macro_rules! parity_matrix {
    ($($cell:ident),* $(,)?) => {$(
        mod $cell {
            use agentls::profiles::ProfileKind;
            #[tokio::test]
            async fn openai() {
                super::$cell(ProfileKind::OpenAi).await;
            }
            #[tokio::test]
            async fn anthropic() {
                super::$cell(ProfileKind::Anthropic).await;
            }
            #[tokio::test]
            async fn gemini() {
                super::$cell(ProfileKind::Gemini).await;
            }
        }
    )*};
}

parity_matrix!(
    file_creation,
    read_then_edit,
    multi_file_edit,
    shell_execution,
    shell_timeout,
    grep_and_glob,
    multi_step,
    truncation,
    parallel_calls,
    one_call_per_step,
    steering,
    reasoning_effort_change,
    loop_detection,
    error_recovery,
    native_edit_format,
    context_overflow,
    subagent_spawn_and_wait,
);
