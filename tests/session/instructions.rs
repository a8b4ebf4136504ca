//! Instruction files where the work is: the AGENTS.md / CLAUDE.md / GEMINI.md of a subdirectory
//! reach the model once the agent reads or edits a file under it, or when a prompt's context
//! names one; once, as an instructions message of the history (so a resumed session sends the
//! same requests), and again only when the file changes. Checked in the requests the scripted
//! provider receives, for every profile.

use crate::support;
use crate::support::session_harness;

use agentls::profiles::ProfileKind;
use agentls::session::Turn;
use serde_json::json;
use session_harness::calls::{read_call, system_prompt};
use session_harness::{Harness, Setup, reason, turn_kinds};
use support::mock_provider::Turn as Reply;

/// A repository whose `src/net` has instructions for every profile, with a file to read.
fn repo(profile: ProfileKind) -> Setup {
    Setup { git: true, ..Setup::new(profile) }
        .file("AGENTS.md", "rule-root")
        .file("src/net/AGENTS.md", "rule-net-agents")
        .file("src/net/CLAUDE.md", "rule-net-claude")
        .file("src/net/GEMINI.md", "rule-net-gemini")
        .file("src/net/.codex/instructions.md", "rule-net-codex")
        .file("src/net/http.rs", "fn get() {} // body of http.rs\n")
        .file("src/lib.rs", "pub mod net;\n")
}

/// The profile's own nested file, and the ones it must not load.
fn own_and_foreign(profile: ProfileKind) -> (&'static str, Vec<&'static str>) {
    let all = ["rule-net-codex", "rule-net-claude", "rule-net-gemini"];
    let own = match profile {
        ProfileKind::OpenAi => all[0],
        ProfileKind::Anthropic => all[1],
        ProfileKind::Gemini => all[2],
        ProfileKind::Code => unreachable!("a coding profile"),
    };
    (own, all.into_iter().filter(|f| *f != own).collect())
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// A session of `profile` on [`repo`] whose first input read `src/net/http.rs`, and its root.
async fn after_reading_http(profile: ProfileKind, setup: Setup) -> (Harness, std::path::PathBuf) {
    let mut h = Harness::start(setup).await;
    let root = h.dir.path().canonicalize().expect("root");
    h.mock.push(Reply::new().tool_call("c1", "read_file", read_call(profile, &root, "src/net/http.rs")));
    h.mock.push(Reply::new().text("read it"));
    assert_eq!(reason(&h.run("read http.rs").await), "completed", "{profile}");
    (h, root)
}

#[tokio::test]
async fn a_subdirectorys_instructions_apply_once_the_agent_reads_there() {
    for profile in ProfileKind::CODING {
        let mut h = Harness::start(repo(profile)).await;
        let root = h.dir.path().canonicalize().expect("root");
        h.mock.push(Reply::new().tool_call("c1", "read_file", read_call(profile, &root, "src/lib.rs")));
        h.mock.push(Reply::new().tool_call("c2", "read_file", read_call(profile, &root, "src/net/http.rs")));
        h.mock.push(Reply::new().tool_call("c3", "read_file", read_call(profile, &root, "src/net/http.rs")));
        h.mock.push(Reply::new().text("done"));
        assert_eq!(reason(&h.run("look at the code").await), "completed", "{profile}");

        let (own, foreign) = own_and_foreign(profile);
        let first = h.request_text(0);
        assert!(system_prompt(profile, &h.body(0)).contains("rule-root"), "{profile}: the root chain");
        assert!(!first.contains("rule-net"), "{profile}: nothing of src/net before work reaches it");
        assert!(!h.request_text(1).contains("rule-net"), "{profile}: src/lib.rs is on the root's chain");

        let after_read = h.request_text(2);
        let result_at = after_read.find("body of http.rs").expect("the read reached the model");
        let agents_at =
            after_read.find("rule-net-agents").unwrap_or_else(|| panic!("{profile}: {after_read}"));
        assert!(result_at < agents_at, "{profile}: the instructions follow the read's result");
        assert!(agents_at < after_read.find(own).expect("own file"), "{profile}: AGENTS.md, then its own");
        for other in &foreign {
            assert!(!after_read.contains(other), "{profile} must not load {other}");
        }
        assert!(
            !system_prompt(profile, &h.body(2)).contains("rule-net"),
            "{profile}: not in the system prompt"
        );

        let later = h.request_text(3);
        assert_eq!(count(&later, "rule-net-agents"), 1, "{profile}: handed over once");
        assert_eq!(
            turn_kinds(&h.handle.history()),
            [
                "user",
                "assistant",
                "tool_results",
                "assistant",
                "tool_results",
                "instructions",
                "assistant",
                "tool_results",
                "assistant"
            ],
            "{profile}"
        );
    }
}

#[tokio::test]
async fn creating_a_file_in_a_subdirectory_applies_its_instructions() {
    let profile = ProfileKind::OpenAi;
    let mut h = Harness::start(repo(profile)).await;
    h.mock.push(Reply::new().tool_call(
        "c1",
        "write_file",
        json!({"file_path": "src/net/tls.rs", "content": "pub fn handshake() {}\n"}),
    ));
    h.mock.push(Reply::new().text("written"));
    assert_eq!(reason(&h.run("add tls.rs").await), "completed");
    assert_eq!(h.read("src/net/tls.rs"), "pub fn handshake() {}\n");
    let after = h.request_text(1);
    assert!(after.contains("rule-net-agents") && after.contains("rule-net-codex"), "{after}");
}

#[tokio::test]
async fn a_prompts_context_file_applies_its_directorys_instructions_before_the_first_call() {
    for profile in ProfileKind::CODING {
        let mut h = Harness::start(repo(profile)).await;
        h.mock.push(Reply::new().text("it gets"));
        let file = h.path("src/net/http.rs");
        h.handle.submit_with_context("what does this do?".into(), vec![file]);
        let events = h.until(agentls::session::EventKind::ProcessingEnd).await;
        assert_eq!(reason(&events), "completed");
        let request = h.request_text(0);
        let asked = request.find("what does this do?").expect("the prompt");
        let applied = request.find("rule-net-agents").unwrap_or_else(|| panic!("{profile}: {request}"));
        assert!(asked < applied, "{profile}: the instructions follow the prompt");
        assert_eq!(turn_kinds(&h.handle.history()), ["user", "instructions", "assistant"], "{profile}");
    }
}

/// `value` without Anthropic's prompt-cache marks, which follow the last message wherever it is.
fn without_cache_marks(mut value: serde_json::Value) -> serde_json::Value {
    match &mut value {
        serde_json::Value::Object(map) => {
            map.remove("cache_control");
            for item in map.values_mut() {
                *item = without_cache_marks(item.take());
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                *item = without_cache_marks(item.take());
            }
        }
        _ => {}
    }
    value
}

/// A resumed session (its history through a transcript's JSON) sends what the first one sent,
/// and does not hand the same file over again.
#[tokio::test]
async fn a_resumed_session_sends_the_same_instructions_and_does_not_repeat_them() {
    let profile = ProfileKind::Anthropic;
    let (mut h, _) = after_reading_http(profile, repo(profile)).await;
    let before = h.body(1)["messages"].clone();
    let stored = serde_json::to_value(h.handle.history()).expect("history as JSON");
    h.close().await;

    let history: Vec<Turn> = serde_json::from_value(stored).expect("the transcript's turns read back");
    let Harness { dir, .. } = h;
    let (resumed, _) = after_reading_http(profile, Setup { history, dir: Some(dir), ..repo(profile) }).await;
    let after = without_cache_marks(resumed.body(0)["messages"].clone());
    let replayed = without_cache_marks(before);
    let replayed = replayed.as_array().expect("messages");
    assert_eq!(after.as_array().expect("messages")[..replayed.len()], replayed[..], "identical on resume");
    assert_eq!(count(&resumed.request_text(1), "rule-net-agents"), 1, "not handed over again");
}

#[tokio::test]
async fn a_changed_instruction_file_is_handed_over_again_after_a_reload() {
    let profile = ProfileKind::Gemini;
    let (mut h, root) = after_reading_http(profile, repo(profile)).await;
    std::fs::write(root.join("src/net/GEMINI.md"), "rule-net-gemini, revised").expect("edit");
    h.mock.push(Reply::new().text("noted"));
    h.run("unchanged until a reload").await;
    assert!(!h.request_text(2).contains("revised"));
    h.handle.reload_project_docs();
    h.mock.push(Reply::new().text("noted again"));
    h.run("after the reload").await;
    let request = h.request_text(3);
    assert_eq!(count(&request, "rule-net-gemini, revised"), 1, "{request}");
    assert_eq!(count(&request, "rule-net-agents"), 1, "the unchanged file is not repeated");
}
