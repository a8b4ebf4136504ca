//! Spec §9.2 (profiles and custom tools), §9.8 (system prompts) and the profiles' shell defaults,
//! for every profile, checked in the request each provider receives.

use crate::support;
use crate::support::session_harness;

use agentls::profiles::ProfileKind;
use serde_json::json;
use session_harness::calls::{offered_tools, sent_result, system_prompt};
use session_harness::recording_env::recording;
use session_harness::tools::{Echo, Stub};
use session_harness::{Harness, Setup, model, reason};
use support::mock_provider::Turn as Reply;

fn profile_tool_names(profile: ProfileKind) -> Vec<String> {
    profile.tools().iter().map(|t| t.name().to_string()).collect()
}

#[tokio::test]
async fn system_prompt_has_every_layer_in_order_for_each_profile() {
    for profile in ProfileKind::CODING {
        let setup = Setup {
            git: true,
            ..Setup::new(profile)
                .file("AGENTS.md", "rule-from-agents-md")
                .file("CLAUDE.md", "rule-from-claude-md")
                .file("GEMINI.md", "rule-from-gemini-md")
                .file(".codex/instructions.md", "rule-from-codex")
                .config(|c| c.instructions = Some("rule-from-the-user".into()))
        };
        let mut h = Harness::start(setup).await;
        h.mock.push(Reply::new().text("ok"));
        h.run("hello").await;
        let prompt = system_prompt(profile, &h.body(0));
        let at =
            |needle: &str| prompt.find(needle).unwrap_or_else(|| panic!("{profile}: {needle:?} missing"));
        assert!(prompt.starts_with(profile.base_prompt().trim_end()), "{profile}: base instructions first");
        for line in ["Working directory: ", "Is git repository: true", "Platform: ", "Today's date: "] {
            assert!(at("<environment>") < at(line), "{profile}: {line} in the environment block");
        }
        assert!(prompt.contains(&format!("Model: {}", model(profile))));
        for tool in profile_tool_names(profile) {
            assert!(at("# Available tools") < at(&format!("- `{tool}`: ")), "{profile}: {tool} described");
        }
        assert!(at("# Available tools") < at("rule-from-agents-md"), "{profile}: project docs after tools");
        let own = match profile {
            ProfileKind::OpenAi => "rule-from-codex",
            ProfileKind::Anthropic => "rule-from-claude-md",
            ProfileKind::Gemini => "rule-from-gemini-md",
            ProfileKind::Code => unreachable!("a coding profile"),
        };
        assert!(at("rule-from-agents-md") < at(own), "{profile}: its own instruction file");
        let foreign = ["rule-from-codex", "rule-from-claude-md", "rule-from-gemini-md"];
        for other in foreign.iter().filter(|f| **f != own) {
            assert!(!prompt.contains(other), "{profile} must not load {other}");
        }
        assert!(at(own) < at("rule-from-the-user"), "{profile}: user instructions last");
        assert!(prompt.trim_end().ends_with("rule-from-the-user"));
    }
}

#[tokio::test]
async fn custom_tools_are_offered_on_top_of_every_profile() {
    for profile in ProfileKind::CODING {
        let mut h = Harness::start(Setup::new(profile).tool(Echo { tag: "custom" })).await;
        h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": "hi"})));
        h.mock.push(Reply::new().text("done"));
        assert_eq!(reason(&h.run("echo hi").await), "completed");
        let mut expected = profile_tool_names(profile);
        expected.push("echo".into());
        assert_eq!(offered_tools(profile, &h.body(0)), expected, "{profile}");
        assert_eq!(sent_result(profile, &h.body(1), "c1").content, "custom: hi");
    }
}

#[tokio::test]
async fn a_custom_tool_replaces_the_profile_tool_of_the_same_name() {
    for profile in ProfileKind::CODING {
        let mut h = Harness::start(Setup::new(profile).tool(Stub { name: "shell" })).await;
        h.mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "touch should-not-exist"})));
        h.mock.push(Reply::new().text("done"));
        assert_eq!(reason(&h.run("run it").await), "completed");
        let offered = offered_tools(profile, &h.body(0));
        assert_eq!(offered.iter().filter(|t| *t == "shell").count(), 1, "{profile}: {offered:?}");
        assert_eq!(offered.len(), profile_tool_names(profile).len(), "{profile}: nothing added");
        assert_eq!(sent_result(profile, &h.body(1), "c1").content, "stub shell");
        assert!(!h.path("should-not-exist").exists(), "{profile}: the profile's shell did not run");
        assert!(system_prompt(profile, &h.body(0)).contains("- `shell`: A stand-in registered by the test."));
    }
}

/// Claude Code's 120 s shell default for the anthropic profile, 10 s for the others, and a
/// configured default wins over both; commands reach a consumer-written environment.
#[tokio::test]
async fn shell_default_timeout_per_profile_and_from_the_configuration() {
    for (profile, configured, expected) in [
        (ProfileKind::OpenAi, None, 10_000),
        (ProfileKind::Anthropic, None, 120_000),
        (ProfileKind::Gemini, None, 10_000),
        (ProfileKind::Anthropic, Some(4_000), 4_000),
        (ProfileKind::Gemini, Some(4_000), 4_000),
    ] {
        let (wrap, seen) = recording();
        let setup = Setup { wrap_env: Some(wrap), ..Setup::new(profile) }
            .config(|c| c.default_command_timeout_ms = configured);
        let mut h = Harness::start(setup).await;
        h.mock.push(Reply::new().tool_call("c1", "shell", json!({"command": "echo default"})).tool_call(
            "c2",
            "shell",
            json!({"command": "echo explicit", "timeout_ms": 1234}),
        ));
        h.mock.push(Reply::new().text("done"));
        assert_eq!(reason(&h.run("run").await), "completed");
        let mut seen = seen.lock().unwrap().clone();
        seen.sort_by(|a, b| a.call_id.cmp(&b.call_id));
        let got: Vec<(&str, u64)> = seen.iter().map(|s| (s.call_id.as_str(), s.timeout_ms)).collect();
        assert_eq!(got, [("c1", expected), ("c2", 1234)], "{profile} with {configured:?}");
        assert!(sent_result(profile, &h.body(1), "c1").content.contains("default"));
    }
}
