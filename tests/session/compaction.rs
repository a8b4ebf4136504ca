//! Compaction and the calibrated context estimate (seed 004 §1.4–1.5) against the loopback mock
//! provider: the summary request, the sentinel message that replaces the history, the kept tail,
//! the automatic trigger at the threshold, overflow → compact → retry on each provider's real
//! context-length error, the fallback to pruning, the events, and resuming a compacted session.

use crate::support;
use crate::support::session_harness;

use agentls::profiles::ProfileKind;
use agentls::session::{EventKind, SUMMARY_SENTINEL, SessionState, Turn};
use serde_json::{Value, json};
use session_harness::tools::Echo;
use session_harness::{Harness, Setup, data, of_kind, reason, str_of, turn_kinds};
use support::mock_provider::{Dialect, ErrorPreset, Reply as Queued, Turn as Reply};

const P: ProfileKind = ProfileKind::Anthropic;
const SUMMARY: &str = "The user asked four questions; the first was about parsing.";

fn echo_setup() -> Setup {
    Setup::new(P).without_profile_tools().tool(Echo { tag: "echo" })
}

/// Every string of a JSON value, depth first.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn texts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    strings(body, &mut out);
    out
}

/// The text of the message that carries the summary, when the request has one.
fn summary_message(body: &Value) -> Option<String> {
    texts(body).into_iter().find(|s| s.starts_with(SUMMARY_SENTINEL))
}

/// Four exchanges of a question and an answer; the mock reports no input tokens, so the
/// calibration stays at 1 and estimates are the raw character counts.
async fn four_exchanges(h: &mut Harness) {
    for n in ["first", "second", "third", "fourth"] {
        h.mock.push(Reply::new().text(&format!("{n} answer")).usage(0, 5));
        let question = if n == "first" { first_question() } else { format!("{n} question") };
        let events = h.run(&question).await;
        assert_eq!(reason(&events), "completed");
    }
}

/// A long first question, so the summary is shorter than what it replaces.
fn first_question() -> String {
    format!("first question {}", "lorem ipsum ".repeat(300))
}

#[tokio::test]
async fn compact_replaces_all_but_the_last_exchanges_with_one_sentinel_message() {
    let mut h = Harness::start(echo_setup().config(|c| c.auto_compact = false)).await;
    four_exchanges(&mut h).await;
    h.mock.push(Reply::new().text(SUMMARY).usage(0, 20));
    h.handle.compact();
    let events = h.until(EventKind::Compaction).await;
    let compaction = data(events.last().expect("compaction"));
    assert_eq!(compaction["trigger"], "manual");
    assert_eq!(compaction["messages_summarized"], 2, "the first question and its answer");
    assert_eq!(compaction["messages_kept"], 6, "three exchanges of two turns");
    assert_eq!(compaction["model"], session_harness::model(P));
    let (before, after) =
        (compaction["tokens_before"].as_u64().unwrap(), compaction["tokens_after"].as_u64().unwrap());
    assert!(before > after + 800, "3600 characters became a summary of 60: {compaction}");
    assert_eq!(after, h.handle.context().estimate_tokens);

    // The summary request: the compaction instructions and the summarised turns as a transcript,
    // no tools, not streamed.
    let summary_request = h.body(4);
    assert!(summary_request.get("tools").is_none(), "{summary_request}");
    assert_ne!(summary_request["stream"], true);
    let sent = texts(&summary_request);
    assert!(
        sent.iter().any(|s| s.starts_with("You condense the earlier part of a coding session")),
        "{sent:?}"
    );
    let transcript = sent.iter().find(|s| s.starts_with("<transcript>")).expect("a transcript");
    assert_eq!(
        *transcript,
        format!(
            "<transcript>\nUSER:\n{}\n\nAGENT:\nfirst answer\n\n</transcript>\n\n\
             Summarise the conversation above as instructed. Reply with the summary only.",
            first_question()
        )
    );

    // The history: the summary, then the last three exchanges unchanged.
    let history = h.handle.history();
    assert_eq!(
        turn_kinds(&history),
        ["summary", "user", "assistant", "user", "assistant", "user", "assistant"]
    );
    let Turn::Summary(summary) = &history[0] else { unreachable!() };
    assert_eq!(summary.summary, SUMMARY);

    // The next request starts with exactly the sentinel line, a blank line and the summary.
    h.mock.push(Reply::new().text("fifth answer"));
    h.run("fifth question").await;
    let next = h.body(5);
    assert_eq!(summary_message(&next).as_deref(), Some(format!("{SUMMARY_SENTINEL}\n\n{SUMMARY}").as_str()));
    let next_texts = texts(&next).join("\n");
    assert!(!next_texts.contains("first question") && !next_texts.contains("first answer"));
    for kept in ["second question", "third answer", "fourth question", "fifth question"] {
        assert!(next_texts.contains(kept), "{kept} is kept");
    }
    assert_eq!(SUMMARY_SENTINEL, "[Earlier conversation summary — treat as background context]");
}

#[tokio::test]
async fn a_tool_call_is_never_split_from_its_result() {
    // One long task: the kept tail is the latest turns, and it starts at a call.
    let mut h = Harness::start(echo_setup().config(|c| {
        c.auto_compact = false;
        c.keep_exchanges = 2;
    }))
    .await;
    for i in 0..5 {
        h.mock.push(
            Reply::new()
                .tool_call(&format!("c{i}"), "echo", json!({"text": format!("round {i}")}))
                .usage(0, 5),
        );
    }
    h.mock.push(Reply::new().text("done").usage(0, 5));
    h.run("the long task").await;
    h.mock.push(Reply::new().text(SUMMARY));
    h.handle.compact();
    h.until(EventKind::Compaction).await;
    let history = h.handle.history();
    assert_eq!(turn_kinds(&history)[0], "summary");
    assert_eq!(turn_kinds(&history)[1], "user", "the task at hand is kept in the user's words");
    assert_eq!(turn_kinds(&history)[2], "assistant", "the tail starts with a call, not an orphaned result");
    for (i, turn) in history.iter().enumerate() {
        if let Turn::ToolResults(results) = turn {
            let Turn::Assistant(call) = &history[i - 1] else {
                panic!("a result follows its call: {history:?}")
            };
            assert_eq!(call.tool_calls[0].id, results.results[0].call_id);
        }
    }
    // The summarised part ended with a complete round too.
    let transcript =
        texts(&h.body(6)).into_iter().find(|s| s.starts_with("<transcript>")).expect("transcript");
    assert!(
        transcript.contains("[calls echo {\"text\":\"round 0\"}]")
            && transcript.contains("RESULT OF echo:\necho: round 0")
    );
}

#[tokio::test]
async fn compacting_a_short_conversation_is_a_warning_and_changes_nothing() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(Reply::new().text("hello"));
    h.run("hi").await;
    let before = h.handle.history();
    h.handle.compact();
    let events = h.until(EventKind::Warning).await;
    assert!(str_of(events.last().unwrap(), "message").starts_with("Nothing to compact"));
    assert_eq!(h.handle.history(), before);
    assert_eq!(h.requests().len(), 1, "no summary request");
}

/// The estimate of the next request (calibration 1), read from a session run with automatic
/// compaction off; the sessions below differ only in their context window.
async fn estimate_after_three_exchanges() -> u64 {
    let mut h = Harness::start(echo_setup().config(|c| c.auto_compact = false)).await;
    for n in ["first", "second", "third"] {
        h.mock.push(Reply::new().text(&format!("{n} answer")).usage(0, 5));
        h.run(&format!("{n} question")).await;
    }
    let stats = h.handle.context();
    assert_eq!(stats.calibration, 1.0);
    stats.estimate_tokens
}

#[tokio::test]
async fn automatic_compaction_starts_when_the_estimate_reaches_the_threshold() {
    let estimate = estimate_after_three_exchanges().await;
    // The fourth request adds "x" (one character) to that history: at most one token more.
    let at_threshold = estimate * 100 / 85;
    let below_threshold = (estimate + 1) * 100 / 85 + 1;
    for (window, compacts) in [(at_threshold, true), (below_threshold, false)] {
        let mut h = Harness::start(echo_setup().config(|c| c.context_window_tokens = Some(window))).await;
        for n in ["first", "second", "third"] {
            h.mock.push(Reply::new().text(&format!("{n} answer")).usage(0, 5));
            h.run(&format!("{n} question")).await;
        }
        if compacts {
            h.mock.push(Reply::new().text(SUMMARY).usage(0, 5));
        }
        h.mock.push(Reply::new().text("fourth answer").usage(0, 5));
        let events = h.run("x").await;
        assert_eq!(reason(&events), "completed");
        let compactions = of_kind(&events, EventKind::Compaction);
        assert_eq!(compactions.len(), usize::from(compacts), "window {window} for an estimate of {estimate}");
        if compacts {
            assert_eq!(data(compactions[0])["trigger"], "auto");
            assert!(
                summary_message(&h.body(4)).is_some(),
                "the call after the compaction carries the summary"
            );
        } else {
            assert_eq!(h.requests().len(), 4);
        }
    }
    // The off switch.
    let window = estimate * 100 / 85;
    let mut h = Harness::start(echo_setup().config(|c| {
        c.context_window_tokens = Some(window);
        c.auto_compact = false;
    }))
    .await;
    for n in ["first", "second", "third", "fourth"] {
        h.mock.push(Reply::new().text("answer").usage(0, 5));
        assert!(of_kind(&h.run(n).await, EventKind::Compaction).is_empty());
    }
}

/// The provider's real context-length error body of each dialect (tests/fixtures/wire).
fn overflow_fixture(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Anthropic => "anthropic/error_400_prompt_too_long.http",
        Dialect::OpenAiResponses => "openai_responses/error_400_context_length_exceeded.http",
        Dialect::OpenAiChat => "openai_chat/error_400_context_length_exceeded.http",
        Dialect::Gemini => "gemini/error_400_context_length.http",
    }
}

fn profile_of(dialect: Dialect) -> ProfileKind {
    match dialect {
        Dialect::Anthropic => ProfileKind::Anthropic,
        Dialect::Gemini => ProfileKind::Gemini,
        Dialect::OpenAiResponses | Dialect::OpenAiChat => ProfileKind::OpenAi,
    }
}

#[tokio::test]
async fn overflow_compacts_and_retries_on_each_providers_real_error() {
    for dialect in Dialect::ALL {
        let setup = Setup { dialect: Some(dialect), ..Setup::new(profile_of(dialect)) };
        let mut h = Harness::start(setup.without_profile_tools().tool(Echo { tag: "echo" })).await;
        for i in 0..4 {
            h.mock.push(Reply::new().tool_call(
                &format!("c{i}"),
                "echo",
                json!({"text": format!("round-{i}")}),
            ));
        }
        h.mock.push_wire(overflow_fixture(dialect));
        h.mock.push(Reply::new().text(SUMMARY));
        h.mock.push(Reply::new().text("Fits now."));
        let events = h.run("the original task").await;
        assert_eq!(reason(&events), "completed", "{dialect:?}");
        let compaction = of_kind(&events, EventKind::Compaction);
        assert_eq!(compaction.len(), 1, "{dialect:?}");
        assert_eq!(data(compaction[0])["trigger"], "overflow");
        assert!(
            of_kind(&events, EventKind::Warning).iter().all(|w| !str_of(w, "message").contains("dropped"))
        );
        let retried = h.body(6);
        assert_eq!(
            summary_message(&retried).as_deref(),
            Some(format!("{SUMMARY_SENTINEL}\n\n{SUMMARY}").as_str()),
            "{dialect:?}"
        );
        let retried = retried.to_string();
        assert!(retried.contains("the original task"), "{dialect:?}: the task is kept");
        assert!(!retried.contains("round-0"), "{dialect:?}: the oldest round is summarised");
        assert!(retried.contains("round-3"), "{dialect:?}: the newest round is kept");
    }
}

#[tokio::test]
async fn overflow_falls_back_to_pruning_when_the_summary_request_does_not_fit_either() {
    let mut h = Harness::start(echo_setup()).await;
    for (i, id) in ["c1", "c2", "c3", "c4"].iter().enumerate() {
        h.mock.push(Reply::new().tool_call(id, "echo", json!({"text": format!("round {i}")})));
    }
    h.mock.push(ErrorPreset::ContextLength);
    h.mock.push(ErrorPreset::ContextLength);
    h.mock.push(Reply::new().text("fits now"));
    let events = h.run("the task").await;
    assert_eq!(reason(&events), "completed");
    assert!(of_kind(&events, EventKind::Compaction).is_empty());
    let warning = data(of_kind(&events, EventKind::Warning)[0]);
    assert_eq!(warning["dropped"], "2 model responses and 2 tool results (echo ×2)");
    assert_eq!(warning["turns_removed"], 4);
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "The conversation exceeded the context window and could not be compacted; dropped the 4 oldest \
             turns (2 model responses and 2 tool results (echo ×2), "
        ),
        "{message}"
    );
    let retried = h.request_text(6);
    assert!(retried.contains("the task"), "the first user message is kept");
    assert!(!retried.contains("round 0"), "the oldest round is dropped");
    assert!(retried.contains("round 3"), "the newest round is kept");
}

#[tokio::test]
async fn overflow_that_neither_compaction_nor_pruning_fixes_ends_with_a_clear_error() {
    let mut h = Harness::start(echo_setup()).await;
    h.mock.push(ErrorPreset::ContextLength);
    let events = h.run("huge task").await;
    assert_eq!(reason(&events), "error");
    let message = str_of(of_kind(&events, EventKind::Error)[0], "message");
    assert!(message.contains("neither compaction nor pruning makes it fit"), "{message}");
    assert!(message.contains("start a new session"), "{message}");
    assert_eq!(h.requests().len(), 1, "nothing to summarise: no summary request");
    assert_eq!(h.handle.state(), SessionState::Idle, "the session continues");
}

#[tokio::test]
async fn a_failed_manual_compaction_is_an_error_and_keeps_the_history() {
    let mut h = Harness::start(echo_setup().config(|c| c.auto_compact = false)).await;
    four_exchanges(&mut h).await;
    let before = h.handle.history();
    h.mock.push(Queued::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
    ));
    h.handle.compact();
    let events = h.until(EventKind::Error).await;
    let error = data(events.last().unwrap());
    assert_eq!(error["fatal"], false);
    assert!(
        error["message"].as_str().unwrap().starts_with("Compaction failed; the history is unchanged"),
        "{error}"
    );
    assert_eq!(h.handle.history(), before);
}

#[tokio::test]
async fn a_resumed_session_sends_the_compacted_history() {
    let mut h = Harness::start(echo_setup().config(|c| c.auto_compact = false)).await;
    four_exchanges(&mut h).await;
    h.mock.push(Reply::new().text(SUMMARY));
    h.handle.compact();
    h.until(EventKind::Compaction).await;
    let history = h.handle.history();
    h.mock.push(Reply::new().text("fifth answer"));
    h.run("fifth question").await;
    let live = h.body(5);
    let dir = std::mem::replace(&mut h.dir, tempfile::tempdir().expect("tempdir"));
    h.close().await;

    let stored: Vec<Turn> = serde_json::from_value(serde_json::to_value(&history).unwrap()).unwrap();
    let mut resumed = Harness::start(Setup { history: stored, dir: Some(dir), ..echo_setup() }).await;
    resumed.mock.push(Reply::new().text("fifth answer"));
    resumed.handle.submit("fifth question".into());
    // The same input sends the same request as the live session did.
    resumed.until(EventKind::ProcessingEnd).await;
    let again = resumed.body(0);
    assert_eq!(again["messages"], live["messages"], "summary and tail as the live session sent them");
    assert_eq!(again["system"], live["system"]);
    assert_eq!(summary_message(&again).as_deref(), Some(format!("{SUMMARY_SENTINEL}\n\n{SUMMARY}").as_str()));
}

#[tokio::test]
async fn list_figures_follow_the_providers_reports() {
    let mut h = Harness::start(echo_setup().config(|c| c.context_window_tokens = Some(1_000_000))).await;
    h.until(EventKind::SessionStart).await;
    let start = h.handle.context();
    assert_eq!((start.calibration, start.context_window), (1.0, 1_000_000));
    assert!(start.estimate_tokens > 0, "the system prompt and tools count before any call");
    // A provider whose tokenizer counts 1.3 tokens for each estimated one. An empty input adds
    // nothing, so each request is exactly what the previous figures describe.
    let mut stats = start;
    for round in 0..4 {
        let raw = stats.estimate_tokens as f64 / stats.calibration;
        let reported = (raw * 1.3).round() as u64;
        h.mock.push(Reply::new().text("").usage(reported, 5));
        h.run("").await;
        if round == 0 {
            let error = (stats.estimate_tokens as f64 - reported as f64).abs() / reported as f64;
            assert!(error > 0.2, "uncalibrated, the estimate is 1.3x off: {stats:?}");
        }
        stats = h.handle.context();
        assert!((stats.calibration - 1.3).abs() < 0.01, "round {round}: {stats:?}");
        let error = (stats.estimate_tokens as f64 * 1.0 - (raw * 1.3)).abs() / (raw * 1.3);
        assert!(error < 0.01, "round {round}: the estimate tracks the provider: {stats:?}");
    }
}

#[tokio::test]
async fn a_configured_compaction_model_writes_the_summary() {
    let mut h = Harness::start(echo_setup().config(|c| {
        c.auto_compact = false;
        c.compaction_model = Some("claude-haiku-small".into());
    }))
    .await;
    four_exchanges(&mut h).await;
    h.mock.push(Reply::new().text(SUMMARY));
    h.handle.compact();
    let events = h.until(EventKind::Compaction).await;
    assert_eq!(data(events.last().unwrap())["model"], "claude-haiku-small");
    assert_eq!(h.body(4)["model"], "claude-haiku-small", "the summary request");
    h.mock.push(Reply::new().text("fifth answer"));
    h.run("fifth question").await;
    assert_eq!(h.body(5)["model"], session_harness::model(P), "the session keeps its own model");
}

#[tokio::test]
async fn automatic_compaction_that_cannot_get_below_the_threshold_stops_for_the_input() {
    let mut h = Harness::start(echo_setup().config(|c| {
        c.context_window_tokens = Some(10);
        c.keep_exchanges = 1;
    }))
    .await;
    h.mock.push(Reply::new().tool_call("c0", "echo", json!({"text": "round 0"})).usage(0, 5));
    h.mock.push(Reply::new().tool_call("c1", "echo", json!({"text": "round 1"})).usage(0, 5));
    h.mock.push(Reply::new().text(SUMMARY).usage(0, 5));
    h.mock.push(Reply::new().tool_call("c2", "echo", json!({"text": "round 2"})).usage(0, 5));
    h.mock.push(Reply::new().tool_call("c3", "echo", json!({"text": "round 3"})).usage(0, 5));
    h.mock.push(Reply::new().text("done").usage(0, 5));
    let events = h.run("a task in a tiny window").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(of_kind(&events, EventKind::Compaction).len(), 1, "one compaction, not one per step");
    assert!(summary_message(&h.body(3)).is_some());
    let warnings: Vec<String> =
        of_kind(&events, EventKind::Warning).iter().map(|w| str_of(w, "message")).collect();
    assert!(
        warnings.iter().any(|m| m.starts_with("After compaction the conversation still fills")
            && m.contains("no more automatic compaction for this input")),
        "{warnings:?}"
    );
    assert_eq!(h.requests().len(), 6);
}
