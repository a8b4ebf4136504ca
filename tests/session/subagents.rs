//! Spec §7 and §9.9: subagents against the loopback mock provider, with real files and real
//! processes. Each child is scripted apart from its parent (`push_for` routes a reply by the
//! child's task), so the parent and its children can run at the same time.

use crate::support;
use crate::support::session_harness;

use std::time::Duration;

use agentls::profiles::ProfileKind;
use agentls::session::{AgentPath, Event, EventKind, SessionState, Turn};
use serde_json::{Value, json};
use session_harness::calls::{offered_tools, sent_result};
use session_harness::{Harness, Setup, of_kind, read_pid, reason, str_of, wait_process_gone};
use support::mock_provider::{ErrorPreset, Turn as Reply, first_user_message};

const P: ProfileKind = ProfileKind::Anthropic;
const SUBAGENT_TOOLS: [&str; 4] = ["spawn_agent", "send_input", "wait", "close_agent"];

/// The request bodies of the conversation whose first user message contains `marker`, in order.
fn bodies_of(h: &Harness, marker: &str) -> Vec<Value> {
    h.requests()
        .into_iter()
        .filter(|r| first_user_message(h.mock.dialect(), &r.body).contains(marker))
        .map(|r| r.body)
        .collect()
}

/// What the model received for `call_id` in the `n`th request of the conversation of `marker`,
/// read as JSON.
fn result_json(h: &Harness, marker: &str, n: usize, call_id: &str) -> Value {
    let body = &bodies_of(h, marker)[n];
    let result = sent_result(P, body, call_id);
    serde_json::from_str(&result.content).unwrap_or_else(|e| panic!("{call_id}: not JSON ({e}): {result:?}"))
}

fn child_events<'a>(events: &'a [Event], agent_id: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.agent.as_ref().is_some_and(|a| a.agent_id == agent_id)).collect()
}

fn spawn(call_id: &str, task: &str) -> Reply {
    Reply::new().tool_call(call_id, "spawn_agent", json!({"task": task}))
}

fn on(call_id: &str, tool: &str, agent_id: &str) -> Reply {
    Reply::new().tool_call(call_id, tool, json!({"agent_id": agent_id}))
}

#[tokio::test]
async fn spawn_send_input_wait_and_close_agent() {
    let mut h = Harness::start(Setup::new(P)).await;
    let task = "CHILD-A: write a.txt";
    h.mock.push(spawn("s1", task));
    h.mock.push(on("w1", "wait", "agent-1"));
    h.mock.push(Reply::new().tool_call(
        "i1",
        "send_input",
        json!({"agent_id": "agent-1", "message": "now write b.txt too"}),
    ));
    h.mock.push(on("w2", "wait", "agent-1"));
    h.mock.push(on("x1", "close_agent", "agent-1"));
    h.mock.push(Reply::new().text("The subagent wrote both files."));
    h.mock.push_for(
        task,
        Reply::new().tool_call("a1", "write_file", json!({"file_path": "a.txt", "content": "A\n"})),
    );
    h.mock.push_for(task, Reply::new().text("wrote a.txt"));
    h.mock.push_for(
        task,
        Reply::new().tool_call("a2", "write_file", json!({"file_path": "b.txt", "content": "B\n"})),
    );
    h.mock.push_for(task, Reply::new().text("wrote b.txt"));

    let events = h.run("delegate the files").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!((h.read("a.txt"), h.read("b.txt")), ("A\n".to_string(), "B\n".to_string()));

    let parent = "delegate the files";
    assert_eq!(result_json(&h, parent, 1, "s1"), json!({"agent_id": "agent-1", "status": "running"}));
    assert_eq!(
        result_json(&h, parent, 2, "w1"),
        json!({"output": "wrote a.txt", "success": true, "turns_used": 2})
    );
    assert_eq!(result_json(&h, parent, 3, "i1"), json!({"agent_id": "agent-1", "status": "running"}));
    assert_eq!(
        result_json(&h, parent, 4, "w2"),
        json!({"output": "wrote b.txt", "success": true, "turns_used": 4})
    );
    assert_eq!(result_json(&h, parent, 5, "x1"), json!({"agent_id": "agent-1", "status": "completed"}));

    // Independent histories: the child never saw the parent's prompt, the parent never saw the
    // child's tool calls; the second input reached the child as a user message.
    let child = bodies_of(&h, task);
    assert_eq!(child.len(), 4);
    assert!(!child[0].to_string().contains(parent), "the child's conversation starts from its task");
    assert!(child[2].to_string().contains("now write b.txt too"));
    let parent_history = serde_json::to_string(&h.handle.history()).expect("json");
    assert!(!parent_history.contains("\"a1\"") && !parent_history.contains("a.txt\\n"));

    // Every child event reaches the parent's stream, marked with its agent, after the spawn call.
    let mine = child_events(&events, "agent-1");
    let start = &mine[0];
    assert_eq!(start.kind(), EventKind::SessionStart);
    let path = start.agent.clone().expect("agent");
    assert_eq!(
        path,
        AgentPath {
            agent_id: "agent-1".into(),
            session_id: format!("{}-agent-1", h.handle.id()),
            parent_session_id: h.handle.id().into(),
            parent_call_id: "s1".into(),
        }
    );
    assert!(mine.iter().all(|e| e.session_id.as_ref() == h.handle.id() && e.agent.as_ref() == Some(&path)));
    let kinds: Vec<EventKind> = mine.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == EventKind::ProcessingEnd).count(), 2, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&EventKind::SessionEnd), "closed by close_agent");
    let spawn_start = events
        .iter()
        .position(|e| e.is_own() && e.kind() == EventKind::ToolCallStart && str_of(e, "call_id") == "s1")
        .expect("spawn_agent started");
    let first_child = events.iter().position(|e| !e.is_own()).expect("child events");
    assert!(spawn_start < first_child, "the child's events follow its spawn call");
    let child_end = events
        .iter()
        .position(|e| !e.is_own() && e.kind() == EventKind::ProcessingEnd)
        .expect("child processing_end");
    let wait_end = events
        .iter()
        .position(|e| e.is_own() && e.kind() == EventKind::ToolCallEnd && str_of(e, "call_id") == "w1")
        .expect("wait ended");
    assert!(child_end < wait_end, "wait returns after the child's processing_end is passed on");
    let (info, history) = h.handle.agents().pop().expect("the child is listed");
    assert_eq!((info.task.as_str(), info.path.agent_id.as_str()), (task, "agent-1"));
    assert_eq!(history.iter().filter(|t| matches!(t, Turn::Assistant(_))).count(), 4);
}

#[tokio::test]
async fn the_subagent_tools_are_absent_at_the_depth_limit() {
    let mut h = Harness::start(Setup::new(P)).await;
    let task = "CHILD-D: look around";
    h.mock.push(spawn("s1", task));
    h.mock.push(on("w1", "wait", "agent-1"));
    h.mock.push(Reply::new().text("done"));
    h.mock.push_for(task, Reply::new().text("nothing to do"));
    assert_eq!(reason(&h.run("spawn one").await), "completed");
    let parent = offered_tools(P, &bodies_of(&h, "spawn one")[0]);
    let child = offered_tools(P, &bodies_of(&h, task)[0]);
    for tool in SUBAGENT_TOOLS {
        assert!(parent.contains(&tool.to_string()), "the parent (depth 0) offers {tool}: {parent:?}");
        assert!(!child.contains(&tool.to_string()), "a child at depth 1 does not offer {tool}: {child:?}");
    }
    assert!(child.contains(&"edit_file".to_string()), "otherwise the parent's tools: {child:?}");

    // With depth 0 allowed, not even the top session offers them.
    let mut flat = Harness::start(Setup::new(P).config(|c| c.max_subagent_depth = 0)).await;
    let started = flat.until(EventKind::SessionStart).await;
    let tools = session_harness::data(&started[0])["tools"].to_string();
    assert!(SUBAGENT_TOOLS.iter().all(|t| !tools.contains(&format!("\"{t}\""))), "{tools}");
}

#[tokio::test]
async fn a_failing_child_is_a_result_with_success_false() {
    let mut h = Harness::start(Setup::new(P)).await;
    let (broken, limited) = ("CHILD-F: fail", "CHILD-L: never stops");
    h.mock.push(spawn("s1", broken).tool_call("s2", "spawn_agent", json!({"task": limited, "max_turns": 2})));
    h.mock.push(on("w1", "wait", "agent-1").tool_call("w2", "wait", json!({"agent_id": "agent-2"})));
    h.mock.push(Reply::new().text("One failed, one ran out of turns."));
    h.mock.push_for(broken, ErrorPreset::Authentication);
    for i in 0..2 {
        h.mock.push_for(
            limited,
            Reply::new().tool_call(&format!("l{i}"), "glob", json!({"pattern": "*.none"})),
        );
    }
    let events = h.run("spawn two").await;
    assert_eq!(reason(&events), "completed", "the parent carries on");
    assert_eq!(h.handle.state(), SessionState::Idle);
    let failed = result_json(&h, "spawn two", 2, "w1");
    assert_eq!((failed["success"].clone(), failed["turns_used"].clone()), (json!(false), json!(0)));
    assert_eq!(
        result_json(&h, "spawn two", 2, "w2"),
        json!({"output": "", "success": false, "turns_used": 2})
    );
    let error = of_kind(&events, EventKind::Error);
    assert!(
        error.iter().any(|e| e.agent.as_ref().is_some_and(|a| a.agent_id == "agent-1")),
        "the child's error is shown"
    );
    assert!(of_kind(&events, EventKind::TurnLimit).iter().all(|e| !e.is_own()));
}

#[tokio::test]
async fn a_working_dir_outside_the_root_is_refused() {
    let mut h = Harness::start(Setup::new(P).file("sub/x.txt", "x")).await;
    let outside = h.dir.path().parent().expect("parent").display().to_string();
    h.mock.push(Reply::new().tool_call(
        "s1",
        "spawn_agent",
        json!({"task": "escape", "working_dir": outside}),
    ));
    h.mock.push(Reply::new().tool_call(
        "s2",
        "spawn_agent",
        json!({"task": "CHILD-S: stay", "working_dir": "sub"}),
    ));
    h.mock.push(on("w2", "wait", "agent-1"));
    h.mock.push(Reply::new().text("ok"));
    h.mock.push_for("CHILD-S", Reply::new().text("in sub"));
    let events = h.run("scope it").await;
    assert_eq!(reason(&events), "completed");
    let refused = sent_result(P, &bodies_of(&h, "scope it")[1], "s1");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(refused.content.contains("working_dir") && refused.content.contains(&outside), "{refused:?}");
    let start = child_events(&events, "agent-1")[0];
    assert_eq!(session_harness::data(start)["cwd"], json!(h.path("sub").canonicalize().expect("sub")));
}

#[tokio::test]
async fn children_run_at_the_same_time() {
    let mut h = Harness::start(Setup::new(P)).await;
    // Each child's command finishes only once the other's has started.
    let (a, b) = ("CHILD-P: first", "CHILD-Q: second");
    let meet = |me: &str, other: &str| {
        format!("touch {me}.ready; while [ ! -e {other}.ready ]; do sleep 0.01; done; echo met")
    };
    h.mock.push(spawn("s1", a).tool_call("s2", "spawn_agent", json!({"task": b})));
    h.mock.push(on("w1", "wait", "agent-1").tool_call("w2", "wait", json!({"agent_id": "agent-2"})));
    h.mock.push(Reply::new().text("both met"));
    h.mock.push_for(a, Reply::new().tool_call("p1", "shell", json!({"command": meet("p", "q")})));
    h.mock.push_for(a, Reply::new().text("p met q"));
    h.mock.push_for(b, Reply::new().tool_call("q1", "shell", json!({"command": meet("q", "p")})));
    h.mock.push_for(b, Reply::new().text("q met p"));
    assert_eq!(reason(&h.run("run two at once").await), "completed");
    assert_eq!(result_json(&h, "run two at once", 2, "w1")["output"], "p met q");
    assert_eq!(result_json(&h, "run two at once", 2, "w2")["output"], "q met p");
}

#[tokio::test]
async fn cancelling_the_parent_closes_its_children_and_stops_their_commands() {
    let mut h = Harness::start(Setup::new(ProfileKind::OpenAi)).await;
    let task = "CHILD-C: serve forever";
    h.mock.push(spawn("s1", task));
    h.mock.push(on("w1", "wait", "agent-1"));
    h.mock.push_for(
        task,
        Reply::new().tool_call("c1", "shell", json!({"command": "echo $$ > leader.pid; sleep 60 & echo $! > child.pid; wait", "timeout_ms": 120000})),
    );
    h.handle.submit("start a server in a subagent".into());
    let leader = read_pid(&h.path("leader.pid")).await;
    let child = read_pid(&h.path("child.pid")).await;
    h.handle.cancel();
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "cancelled");
    for pid in [leader, child] {
        assert!(wait_process_gone(pid, Duration::from_secs(5)).await, "process {pid} outlived the cancel");
    }
    // The child's session ends too (its end may come just after the parent's processing_end).
    while !h.seen.iter().any(|e| !e.is_own() && e.kind() == EventKind::SessionEnd) {
        let event = tokio::time::timeout(session_harness::PATIENCE, h.events.recv()).await;
        h.seen.push(event.expect("the child's session_end").expect("stream open"));
    }
    assert_eq!(h.handle.state(), SessionState::Idle, "the parent stays usable");
}

#[tokio::test]
async fn a_resumed_session_brings_its_subagents_back_with_their_histories() {
    let task = "CHILD-R: remember the number 41";
    let mut h = Harness::start(Setup::new(P)).await;
    h.mock.push(spawn("s1", task));
    h.mock.push(on("w1", "wait", "agent-1"));
    h.mock.push(Reply::new().text("it remembers"));
    h.mock.push_for(task, Reply::new().text("41 noted"));
    assert_eq!(reason(&h.run("delegate remembering").await), "completed");
    let (history, agents) = (h.handle.history(), h.handle.agents());
    h.close().await;

    let mut setup = Setup::new(P);
    setup.history = history;
    setup.agents = agents;
    let mut resumed = Harness::start(setup).await;
    resumed.mock.push(Reply::new().tool_call(
        "i1",
        "send_input",
        json!({"agent_id": "agent-1", "message": "add one"}),
    ));
    resumed.mock.push(on("w2", "wait", "agent-1"));
    resumed.mock.push(Reply::new().tool_call("s2", "spawn_agent", json!({"task": "CHILD-N: new one"})));
    resumed.mock.push(Reply::new().text("42"));
    resumed.mock.push_for(task, Reply::new().text("42"));
    resumed.mock.push_for("CHILD-N", Reply::new().text("fresh"));
    let events = resumed.run("what does it say now?").await;
    assert_eq!(reason(&events), "completed");
    let child = bodies_of(&resumed, task);
    assert_eq!(child.len(), 1);
    let sent = child[0].to_string();
    assert!(
        sent.contains("41 noted") && sent.contains("add one"),
        "the child continues its own conversation"
    );
    let waited = sent_result(P, &bodies_of(&resumed, "delegate remembering")[2], "w2");
    assert_eq!(waited.content, json!({"output": "42", "success": true, "turns_used": 2}).to_string());
    let spawned = sent_result(P, &bodies_of(&resumed, "delegate remembering")[3], "s2");
    assert!(spawned.content.contains("agent-2"), "new ids continue after the restored ones: {spawned:?}");
}
