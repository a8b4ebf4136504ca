//! `codebase_search` (seed 000) against the loopback mock provider: a session's model calls the
//! tool, the search model's turns are scripted on the same mock (or on its own, configured with
//! `[search]`), real files in a temporary directory. What the search model received is read back
//! from the wire in each dialect: the opening message, the results wrapped in tags that echo the
//! calls, the turn counter byte for byte, the output limits; and what the parent received.

use crate::support;
use crate::support::session_harness;

use std::path::Path;

use agentls::profiles::ProfileKind;
use agentls::session::EventKind;
use agentls::tools::codebase_search::{OVER_LIMIT, turn_counter};
use regex::Regex;
use serde_json::{Value, json};
use session_harness::calls::{last_message, offered_tools, sent_result};
use session_harness::recording_env::gated_grep;
use session_harness::{Harness, Setup, of_kind, reason, str_of};
use support::exec_binary::{exec_command, trust_folder};
use support::mock_provider::{Dialect, MockProvider, Reply as Raw, Turn as Reply};

const QUERY: &str = "where is the session id created?";

const SESSION_RS: &str = "pub struct Session {
    id: String,
}

impl Session {
    pub fn new() -> Self {
        Self { id: new_id() }
    }
}

fn new_id() -> String {
    uuid()
}
";

fn project(profile: ProfileKind) -> Setup {
    Setup::new(profile)
        .file("README.md", "# demo\n")
        .file("src/main.rs", "fn main() {\n    let s = Session::new();\n}\n")
        .file("src/session.rs", SESSION_RS)
}

fn search(query: &str) -> Reply {
    Reply::new().text("Searching.").tool_call("s1", "codebase_search", json!({"query": query}))
}

/// The folder name the repository structure starts with.
fn root_name(dir: &Path) -> String {
    dir.canonicalize().unwrap().file_name().unwrap().to_string_lossy().into_owned()
}

/// A message the search model received, split into what comes before the turn counter, the
/// counter line and the context-budget line.
fn split_counter(text: &str) -> (String, String) {
    let (before, budget) = text.rsplit_once('\n').unwrap_or_else(|| panic!("no budget line in {text:?}"));
    let budget_line = Regex::new(r"^Context budget: \d+% used \(\d+K of 160K characters\)$").unwrap();
    assert!(budget_line.is_match(budget), "{budget:?}");
    (before.to_string(), budget.to_string())
}

/// The last user message of request `i`: everything before the counter, and the counter.
fn counter_of(h: &Harness, profile: ProfileKind, i: usize) -> (String, String) {
    let (role, text) = last_message(profile, &h.body(i));
    assert_eq!(role, "user", "request {i} ends with the user's message");
    let (before, _) = split_counter(&text);
    match before.rsplit_once("\n\n") {
        Some((results, counter)) => (results.to_string(), counter.to_string()),
        None => (String::new(), before),
    }
}

fn system_text(profile: ProfileKind, body: &Value) -> String {
    match profile {
        ProfileKind::Anthropic | ProfileKind::Code => session_harness::calls::text_of(&body["system"]),
        ProfileKind::OpenAi => body["instructions"].as_str().unwrap_or_default().to_string(),
        ProfileKind::Gemini => session_harness::calls::text_of(&body["systemInstruction"]["parts"]),
    }
}

/// The seed's flow in its XML form: repository structure and query first, results wrapped in
/// tags that echo each call, the counter after every turn, `finish` turned into snippets.
#[tokio::test]
async fn the_xml_form_follows_the_seeds_message_flow_and_returns_snippets() {
    let profile = ProfileKind::Anthropic;
    let mut h = Harness::start(project(profile)).await;
    h.mock.push(search(QUERY));
    h.mock.push(Reply::new().text(
        "<think>\nThe id is probably made in a constructor.\n</think>\n\n<grep>\n  <pattern>new_id</pattern>\n  \
         <sub_dir>src/</sub_dir>\n</grep>\n\n<list_directory>\n  <path>src</path>\n</list_directory>",
    ));
    h.mock.push(Reply::new().text("<read>\n<path>src/session.rs</path>\n<lines>5-13</lines>\n</read>"));
    h.mock.push(Reply::new().text(
        "<finish>\n  <file>\n    <path>src/session.rs</path>\n    <lines>6-8,11-13</lines>\n  </file>\n</finish>",
    ));
    h.mock.push(Reply::new().text("It is made by new_id in src/session.rs."));
    let events = h.run("Where is the session id created?").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.requests().len(), 5, "one parent turn, three search turns, the parent's answer");

    // Turn 1: the system prompt, then the structure and the query with the first counter.
    let first = h.body(1);
    assert!(system_text(profile, &first).starts_with("You are a code search agent."), "{first}");
    let (_, opening) = last_message(profile, &first);
    let (before, _) = split_counter(&opening);
    let name = root_name(h.dir.path());
    assert_eq!(
        before,
        format!(
            "<repo_structure>\n{name}/\n  README.md\n  src/\n    main.rs\n    session.rs\n</repo_structure>\n\n\
             <search_string>\n{QUERY}\n</search_string>\n\nYou have used 0 turns and have 4 remaining"
        )
    );
    assert_eq!(first["tool_choice"]["type"], "auto", "the search model may answer in text");

    // Turn 2: both calls' results, each in a tag that echoes it, then the counter.
    let (results, counter) = counter_of(&h, profile, 2);
    assert_eq!(counter, "You have used 1 turn and have 3 remaining");
    assert_eq!(
        results,
        "<grep pattern=\"new_id\" sub_dir=\"src/\">\n\
         src/session.rs-6-    pub fn new() -> Self {\n\
         src/session.rs:7:        Self { id: new_id() }\n\
         src/session.rs-8-    }\n\
         --\n\
         src/session.rs-10-\n\
         src/session.rs:11:fn new_id() -> String {\n\
         src/session.rs-12-    uuid()\n\
         </grep>\n\n\
         <list_directory path=\"src\">\n\
         src/\n  main.rs\n  session.rs\n\
         </list_directory>"
    );

    let (results, counter) = counter_of(&h, profile, 3);
    assert_eq!(counter, "You have used 2 turns and have 2 remaining");
    let read: String =
        SESSION_RS.lines().enumerate().skip(4).map(|(i, l)| format!("{}|{l}\n", i + 1)).collect();
    assert_eq!(results, format!("<read path=\"src/session.rs\" lines=\"5-13\">\n{read}</read>"));

    // The parent receives the snippets: paths, ranges, numbered text.
    let parent = sent_result(profile, &h.body(4), "s1");
    assert_ne!(parent.is_error, Some(true), "{parent:?}");
    assert_eq!(
        parent.content,
        format!(
            "2 snippets from 1 file for \"{QUERY}\" (the search used 3 turns):\n\n\
             src/session.rs:6-8\n  6 |     pub fn new() -> Self {{\n  7 |         Self {{ id: new_id() }}\n  8 |     }}\n\n\
             src/session.rs:11-13\n 11 | fn new_id() -> String {{\n 12 |     uuid()\n 13 | }}\n"
        )
    );

    // The card: a start and an end event with the query as its summary.
    let start = of_kind(&events, EventKind::ToolCallStart);
    assert_eq!(start.len(), 1);
    assert_eq!(str_of(start[0], "summary"), format!("codebase_search: {QUERY}"));
    let end = of_kind(&events, EventKind::ToolCallEnd);
    assert_eq!(str_of(end[0], "status"), "ok");
    assert_eq!(str_of(end[0], "output"), parent.content);
    // Each turn of the search streams one line of the card's live output.
    let progress: String = of_kind(&events, EventKind::ToolCallOutputDelta)
        .into_iter()
        .inspect(|e| assert_eq!(str_of(e, "call_id"), "s1"))
        .map(|e| str_of(e, "delta"))
        .collect();
    assert_eq!(
        progress,
        "turn 1: grep new_id in src/, list_directory src\nturn 2: read src/session.rs:5-13\n\
         turn 3: finish src/session.rs:6-8,11-13\n"
    );
}

/// A search model that never calls finish gets four turns, the last one demanding finish (in
/// the counter and in the request's tool choice), and the parent a result saying so.
#[tokio::test]
async fn a_model_that_never_finishes_is_stopped_after_four_turns() {
    let profile = ProfileKind::Anthropic;
    let mut h = Harness::start(project(profile)).await;
    h.mock.push(search(QUERY));
    for turn in 1..=4 {
        if turn == 2 {
            // An answer without any call, in either form, spends the turn.
            h.mock.push(Reply::new().text("It is probably in session.rs."));
            continue;
        }
        h.mock.push(Reply::new().tool_call(&format!("g{turn}"), "grep", json!({"pattern": "Session"})));
    }
    h.mock.push(Reply::new().text("The search found nothing."));
    h.mock.push(Reply::new().text("unused"));
    let events = h.run("Find it.").await;
    assert_eq!(reason(&events), "completed");
    assert_eq!(h.requests().len(), 6, "four search turns and not one more");
    assert_eq!(h.mock.pending(), 1);

    let counters: Vec<String> = (1..=4).map(|i| counter_of(&h, profile, i).1).collect();
    assert_eq!(counters, (0..4).map(turn_counter).collect::<Vec<_>>());
    assert_eq!(
        counters[3],
        "You have used 3 turns, you only have 1 turn remaining. You have run out of turns to explore the code \
         base and MUST call the finish tool now"
    );
    assert_eq!(
        counter_of(&h, profile, 3).0,
        "No tool call was found in your answer. Call grep, read or list_directory in the XML form (or as \
         function calls), or finish with the files that answer the query."
    );
    for i in 1..=3 {
        assert_eq!(h.body(i)["tool_choice"]["type"], "auto");
    }
    assert_eq!(
        h.body(4)["tool_choice"],
        json!({"type": "tool", "name": "finish", "disable_parallel_tool_use": false})
    );

    let parent = sent_result(profile, &h.body(5), "s1");
    assert_eq!(parent.is_error, Some(true));
    assert_eq!(
        parent.content,
        "Tool error (codebase_search): the search used its 4 turns without reporting what it found; search \
         with grep and read_file yourself, or ask a narrower query"
    );
}

/// grep and list_directory results over 200 lines fail with the seed's message; a read over 800
/// lines is cut with a warning; a path outside the repository is refused.
#[tokio::test]
async fn output_limits_are_the_seeds() {
    let profile = ProfileKind::OpenAi;
    let setup =
        project(profile).file("big.txt", (1..=1000).map(|i| format!("row {i}\n")).collect::<String>());
    let mut h = Harness::start(setup).await;
    std::fs::create_dir(h.path("many")).unwrap();
    for i in 0..201 {
        std::fs::write(h.path(&format!("many/f{i:03}.txt")), "x\n").unwrap();
    }
    h.mock.push(search("rows"));
    h.mock.push(
        Reply::new()
            .tool_call("g1", "grep", json!({"pattern": "row", "glob": "*.txt"}))
            .tool_call("l1", "list_directory", json!({"path": "many"}))
            .tool_call("r1", "read", json!({"path": "big.txt"}))
            .tool_call("r2", "read", json!({"path": "../outside.txt"}))
            .tool_call("l2", "list_directory", json!({"path": "src"})),
    );
    h.mock.push(Reply::new().tool_call("f1", "finish", json!({"files": []})));
    h.mock.push(Reply::new().text("Nothing."));
    let events = h.run("Find the rows.").await;
    assert_eq!(reason(&events), "completed");

    let body = h.body(2);
    assert_eq!(
        sent_result(profile, &body, "g1").content,
        format!("<grep pattern=\"row\" sub_dir=\".\" glob=\"*.txt\">\n{OVER_LIMIT}\n</grep>")
    );
    assert_eq!(
        OVER_LIMIT,
        "query not specific enough, tool called tried to return too much context and failed"
    );
    assert_eq!(
        sent_result(profile, &body, "l1").content,
        format!("<list_directory path=\"many\">\n{OVER_LIMIT}\n</list_directory>")
    );
    let read = sent_result(profile, &body, "r1").content;
    let lines: Vec<&str> = read.lines().collect();
    assert_eq!(lines.len(), 1 + 800 + 1 + 1, "tag, 800 lines, warning, closing tag");
    assert_eq!(lines[1], "1|row 1");
    assert_eq!(lines[800], "800|row 800");
    assert_eq!(
        lines[801],
        "[truncated: showing 800 of the 1000 lines asked for; read a narrower range with lines]"
    );
    let outside = sent_result(profile, &body, "r2").content;
    assert!(outside.starts_with("<read path=\"../outside.txt\">\n"), "{outside}");
    assert!(outside.contains("outside"), "{outside}");
    assert_eq!(
        sent_result(profile, &body, "l2").content,
        "<list_directory path=\"src\">\nsrc/\n  main.rs\n  session.rs\n</list_directory>"
    );

    // The repository structure of the first message was too long at two levels: one level.
    let (_, opening) = last_message(profile, &h.body(1));
    let name = root_name(h.dir.path());
    assert!(
        opening.starts_with(&format!(
            "<repo_structure>\n{name}/\n  README.md\n  big.txt\n  many/\n  src/\n</repo_structure>"
        )),
        "{opening}"
    );
    let parent = sent_result(profile, &h.body(3), "s1");
    assert_eq!(parent.content, "No code found for \"rows\" (the search used 2 turns).\n");
}

/// The calls of one search turn run at once: each grep waits until the other runs too.
#[tokio::test]
async fn the_calls_of_one_turn_run_in_parallel() {
    let profile = ProfileKind::Gemini;
    let mut setup = project(profile);
    setup.wrap_env = Some(gated_grep(2));
    let mut h = Harness::start(setup).await;
    h.mock.push(search(QUERY));
    h.mock.push(Reply::new().tool_call("g1", "grep", json!({"pattern": "fn main"})).tool_call(
        "g2",
        "grep",
        json!({"pattern": "fn new_id", "sub_dir": "src", "glob": "*.rs"}),
    ));
    h.mock.push(Reply::new().tool_call("f1", "finish", json!({"files": [{"path": "src/main.rs"}]})));
    h.mock.push(Reply::new().text("Done."));
    let events = h.run("Find main and new_id.").await;
    assert_eq!(reason(&events), "completed");
    let body = h.body(2);
    assert_eq!(
        sent_result(profile, &body, "g1").content,
        "<grep pattern=\"fn main\" sub_dir=\".\">\nsrc/main.rs:1:fn main() {\nsrc/main.rs-2-    let s = Session::new();\n</grep>"
    );
    assert_eq!(
        sent_result(profile, &body, "g2").content,
        "<grep pattern=\"fn new_id\" sub_dir=\"src\" glob=\"*.rs\">\nsrc/session.rs-10-\n\
         src/session.rs:11:fn new_id() -> String {\nsrc/session.rs-12-    uuid()\n</grep>"
    );
    let parent = sent_result(profile, &h.body(3), "s1");
    assert_eq!(
        parent.content,
        format!(
            "1 snippet from 1 file for \"{QUERY}\" (the search used 2 turns):\n\n\
             src/main.rs:1-3\n  1 | fn main() {{\n  2 |     let s = Session::new();\n  3 | }}\n"
        )
    );
}

/// Native function calls in every provider's own wire format, answered within four turns.
#[tokio::test]
async fn native_calls_work_over_every_providers_wire_format() {
    for profile in ProfileKind::CODING {
        let mut h = Harness::start(project(profile)).await;
        h.mock.push(search(QUERY));
        h.mock.push(
            Reply::new()
                .text("Two places to look.")
                .tool_call("g1", "grep", json!({"pattern": "new_id", "sub_dir": "src"}))
                .tool_call("r1", "read", json!({"path": "src/main.rs", "lines": "1-2"})),
        );
        h.mock.push(Reply::new().tool_call(
            "f1",
            "finish",
            json!({"files": [{"path": "src/session.rs", "lines": "11-13"}]}),
        ));
        h.mock.push(Reply::new().text("In new_id."));
        let events = h.run("Where?").await;
        assert_eq!(reason(&events), "completed", "{profile}");
        assert_eq!(h.requests().len(), 4, "{profile}");
        assert!(offered_tools(profile, &h.body(0)).contains(&"codebase_search".to_string()), "{profile}");
        let inner = offered_tools(profile, &h.body(1));
        assert_eq!(
            inner,
            ["grep", "read", "list_directory", "finish"],
            "{profile}: the search model's own tools"
        );

        let body = h.body(2);
        assert_eq!(
            sent_result(profile, &body, "r1").content,
            "<read path=\"src/main.rs\" lines=\"1-2\">\n1|fn main() {\n2|    let s = Session::new();\n</read>",
            "{profile}"
        );
        assert!(
            sent_result(profile, &body, "g1")
                .content
                .starts_with("<grep pattern=\"new_id\" sub_dir=\"src\">\n")
        );
        let (role, text) = last_message(profile, &body);
        assert_eq!(role, "user", "{profile}");
        assert_eq!(split_counter(&text).0, "You have used 1 turn and have 3 remaining", "{profile}");

        let parent = sent_result(profile, &h.body(3), "s1");
        assert_eq!(
            parent.content,
            format!(
                "1 snippet from 1 file for \"{QUERY}\" (the search used 2 turns):\n\n\
                 src/session.rs:11-13\n 11 | fn new_id() -> String {{\n 12 |     uuid()\n 13 | }}\n"
            ),
            "{profile}"
        );
    }
}

/// Cancelling the parent's turn ends the search waiting on its model.
#[tokio::test]
async fn cancelling_the_parent_turn_cancels_the_search() {
    let mut h = Harness::start(project(ProfileKind::Anthropic)).await;
    h.mock.push(search(QUERY));
    h.mock.push(Raw::Stall);
    h.handle.submit("Find it.".into());
    h.until(EventKind::ToolCallStart).await;
    while h.mock.request_count() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    h.handle.cancel();
    let events = h.until(EventKind::ProcessingEnd).await;
    assert_eq!(reason(&events), "cancelled");
    let end = of_kind(&events, EventKind::ToolCallEnd);
    assert_eq!(str_of(end[0], "status"), "cancelled");
    assert_eq!(h.requests().len(), 2);
}

/// `[search]` in the project file sends the search to its own provider and model (here a
/// Chat Completions server, offered no native tools: a model that writes the XML form), through
/// the real `agentls exec`; the session's provider sees only the parent's turns.
#[tokio::test]
async fn a_separately_configured_search_model_gets_the_search_requests() {
    let parent = MockProvider::start(Dialect::Anthropic).await;
    let searcher = MockProvider::start(Dialect::OpenAiChat).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/session.rs"), SESSION_RS).unwrap();
    std::fs::write(
        dir.path().join(".agentls.toml"),
        format!(
            "[search]\nprovider = \"openai-chat\"\nmodel = \"search-small\"\nnative_tools = false\n\n\
             [providers.openai-chat]\nbase_url = \"{}\"\n",
            searcher.url()
        ),
    )
    .unwrap();
    parent.push(search(QUERY));
    parent.push(Reply::new().text("It is new_id."));
    searcher.push(Reply::new().text("<grep>\n<pattern>fn new_id</pattern>\n</grep>"));
    searcher.push(Reply::new().text("<finish>\n<file>src/session.rs:11-13</file>\n</finish>"));
    // The search provider and its host are the project's choice: its user trusts it.
    trust_folder(dir.path());

    let out = exec_command(
        &parent,
        dir.path(),
        "sk-parent-key-1",
        &["--provider", "anthropic", "--json", "Where?"],
    )
    .output()
    .await
    .expect("agentls runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    assert_eq!(parent.request_count(), 2, "the parent's two turns only");
    let searches = searcher.requests();
    assert_eq!(searches.len(), 2);
    for request in &searches {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], "search-small");
        assert_eq!(request.body.get("tools"), None, "native_tools = false: the XML form only");
        assert!(!String::from_utf8_lossy(&request.raw_body).contains("sk-parent-key-1"));
    }
    let messages = searches[1].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(
        last.starts_with(
            "<grep pattern=\"fn new_id\" sub_dir=\".\">\nsrc/session.rs-10-\nsrc/session.rs:11:fn new_id() -> String {\n"
        ),
        "{last}"
    );
    assert_eq!(
        split_counter(&last).0.rsplit_once("\n\n").unwrap().1,
        "You have used 1 turn and have 3 remaining"
    );

    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let end = events.iter().find(|e| e["kind"] == "tool_call_end").expect("tool_call_end");
    assert_eq!(end["data"]["summary"], format!("codebase_search: {QUERY}"));
    assert_eq!(
        end["data"]["output"],
        format!(
            "1 snippet from 1 file for \"{QUERY}\" (the search used 2 turns):\n\n\
             src/session.rs:11-13\n 11 | fn new_id() -> String {{\n 12 |     uuid()\n 13 | }}\n"
        )
    );
}

/// `[search] model` alone: the session's provider serves the search, with that model.
#[tokio::test]
async fn a_search_model_alone_is_asked_through_the_sessions_provider() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "the id is random\n").unwrap();
    std::fs::write(dir.path().join(".agentls.toml"), "[search]\nmodel = \"claude-haiku-4-5\"\n").unwrap();
    mock.push(search("which file talks about the id?"));
    mock.push(Reply::new().tool_call("f1", "finish", json!({"files": [{"path": "notes.md"}]})));
    mock.push(Reply::new().text("notes.md."));
    let args = ["--provider", "anthropic", "--model", "claude-parent", "Which file?"];
    let out = exec_command(&mock, dir.path(), "sk-key", &args).output().await.expect("agentls runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let models: Vec<Value> = mock.requests().iter().map(|r| r.body["model"].clone()).collect();
    assert_eq!(models, [json!("claude-parent"), json!("claude-haiku-4-5"), json!("claude-parent")]);
    let requests = mock.requests();
    let offered: Vec<&str> =
        requests[1].body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(offered, ["grep", "read", "list_directory", "finish"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Searching.\nnotes.md.\n");
}
