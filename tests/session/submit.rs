//! Seed 002's submit mode and per-input limits against the loopback mock provider: the `submit`
//! tool, the fixed continue message, `max_steps` and `time_limit_secs`.

use crate::support;
use crate::support::session_harness;

use std::time::Duration;

use agentls::profiles::ProfileKind;
use agentls::session::{CONTINUE_MESSAGE, EventKind, SessionState};
use serde_json::{Value, json};
use session_harness::tools::Echo;
use session_harness::{Harness, Setup, data, of_kind, reason, turn_kinds};
use support::mock_provider::Turn as Reply;

const P: ProfileKind = ProfileKind::Anthropic;

fn setup() -> Setup {
    Setup::new(P).without_profile_tools().tool(Echo { tag: "echo" })
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"].as_array().map_or(Vec::new(), |tools| {
        tools.iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
    })
}

/// The text of the last message of an Anthropic request.
fn last_user_text(body: &Value) -> String {
    let last = body["messages"].as_array().and_then(|m| m.last()).expect("a message").clone();
    assert_eq!(last["role"], "user");
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
        other => panic!("unexpected content {other}"),
    }
}

#[tokio::test]
async fn a_reply_without_tool_calls_gets_the_fixed_continue_message_and_submit_ends_with_its_answer() {
    let mut h = Harness::start(setup().config(|c| c.submit_mode = true)).await;
    h.mock.push(Reply::new().text("I think the answer is 42."));
    h.mock.push(Reply::new().tool_call("e1", "echo", json!({"text": "checking"})));
    h.mock.push(Reply::new().text("Still sure."));
    h.mock.push(Reply::new().tool_call("s1", "submit", json!({"answer": "42"})));
    let events = h.run("What is six times seven?").await;

    assert_eq!(tool_names(&h.body(0)), ["echo", "submit"], "the submit tool is offered");
    assert_eq!(
        CONTINUE_MESSAGE,
        "Continue with the task. When it is complete, call the `submit` tool with your final answer."
    );
    assert_eq!(last_user_text(&h.body(1)), CONTINUE_MESSAGE, "after a reply without tool calls");
    assert_ne!(last_user_text(&h.body(2)), CONTINUE_MESSAGE, "after a tool round: the results");
    assert_eq!(last_user_text(&h.body(3)), CONTINUE_MESSAGE);
    assert_eq!(h.requests().len(), 4);

    let end = data(events.last().expect("processing_end"));
    assert_eq!((end["reason"].clone(), end["text"].clone()), (json!("submitted"), json!("42")));
    assert_eq!(h.handle.state(), SessionState::Idle);
    // The submit call has its result, so the history stays valid for the next input.
    let history = h.handle.history();
    assert_eq!(turn_kinds(&history).last(), Some(&"tool_results"));
    h.mock.push(Reply::new().tool_call("s2", "submit", json!({"answer": "done"})));
    let events = h.run("And six times six?").await;
    assert_eq!(data(events.last().unwrap())["text"], "done");
}

#[tokio::test]
async fn without_submit_mode_there_is_no_submit_tool_and_a_text_reply_ends_the_input() {
    let mut h = Harness::start(setup()).await;
    h.mock.push(Reply::new().text("42"));
    let events = h.run("What is six times seven?").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(tool_names(&h.body(0)), ["echo"]);
}

#[tokio::test]
async fn max_steps_stops_the_input_after_that_many_model_requests() {
    let mut h = Harness::start(setup().config(|c| {
        c.max_steps = 2;
        c.submit_mode = true;
    }))
    .await;
    h.mock.push(Reply::new().text("thinking"));
    h.mock.push(Reply::new().tool_call("e1", "echo", json!({"text": "a"})));
    let events = h.run("work").await;
    assert_eq!(reason(&events), "step_limit");
    assert_eq!(data(of_kind(&events, EventKind::TurnLimit)[0]), json!({"steps": 2}));
    assert_eq!(h.requests().len(), 2);
    // Per input: the next input has its own steps.
    h.mock.push(Reply::new().tool_call("s1", "submit", json!({"answer": "ok"})));
    assert_eq!(reason(&h.run("again").await), "submitted");
}

#[tokio::test]
async fn time_limit_interrupts_the_input_and_the_session_stays_usable() {
    let mut h = Harness::start(setup().config(|c| c.time_limit_secs = 1)).await;
    h.mock.push(Reply::new().tool_call("e1", "echo", json!({"text": "a"})));
    h.mock.push(Reply::new().text("too late").fragment(1).delay(Duration::from_millis(400)));
    let started = std::time::Instant::now();
    let events = h.run("slow work").await;
    assert!(started.elapsed() < Duration::from_secs(3), "stopped at the limit, not at the end of the stream");
    assert_eq!(reason(&events), "time_limit");
    assert_eq!(data(of_kind(&events, EventKind::TurnLimit)[0]), json!({"time_limit_secs": 1}));
    assert_eq!(h.handle.state(), SessionState::Idle);
    // The limit is per input: a quick input afterwards completes.
    h.mock.push(Reply::new().text("fast"));
    assert_eq!(reason(&h.run("quick").await), "completed");
}
