//! `agentls demo [--dir D] [--nvim]`: a first run without a key. It makes a sample project,
//! starts this same executable as `agentls serve` over stdio, and plays a recorded session
//! (the `replay` provider) through the real agent loop and real tools, acting as a plugin client
//! that answers the permission question and the review the way the demo's user would.
//!
//! Invariant: nothing outlives the demo (the server is shut down, or killed on any failure), and
//! it exits 0 only when the session completed, every tool call succeeded and the accepted change
//! is on disk.

mod client;
mod nvim;
mod project;
mod render;

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};
use tower_lsp_server::ls_types::notification::Notification;

use self::client::{Incoming, ServerProcess};
use self::project::{EDITED, Project};
use self::render::Printer;
use super::DemoArgs;
use crate::lsp::protocol::{
    EventNotification, EventParams, NewSession, NewSessionParams, PermissionAnswer, PermissionNotification,
    PermissionParams, Prompt, PromptParams, ResolvePermission, ResolvePermissionParams, ResolveReview,
    ResolveReviewParams, ResolvedFile, ReviewAnswer, ReviewHunk, ReviewNotification, ReviewParams,
};
use crate::session::{CallStatus, EndReason, EventData, ProcessingEnd};

/// What the demo's user asks for.
pub const USER_PROMPT: &str = "Add a --verbose flag to greet.py that says what the script is doing.";
/// Why the demo's user rejects the hunk that touches the greeting.
pub const REJECTION: &str = "Keep the greeting as it is: other scripts parse this output.";
/// The line the rejected hunk changes.
const GREETING: &str = "print(f\"Hello, {name}!\")";
/// The whole session must end within this time (it takes well under a second).
const DEADLINE: Duration = Duration::from_secs(60);

pub fn run(args: DemoArgs) -> Result<ExitCode, String> {
    if args.nvim {
        nvim::check_available()?;
    }
    let project = Project::prepare(args.dir.as_deref())?;
    if args.nvim {
        return nvim::run(&project);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the agentls executable: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let mut printer = Printer::new();
    runtime.block_on(play(&exe, &project, &mut printer))?;
    Ok(ExitCode::SUCCESS)
}

/// What happened during the session, for the checks at the end.
#[derive(Default)]
struct Tally {
    model_answers: usize,
    tool_calls: usize,
    failed_tools: Vec<String>,
    reviews: usize,
    errors: Vec<String>,
}

async fn play(exe: &Path, project: &Project, printer: &mut Printer) -> Result<(), String> {
    let names: Vec<&str> = project::FILES.iter().map(|(name, _)| *name).collect();
    printer.banner(&project.root.display().to_string(), &names);
    let mut server = ServerProcess::spawn(exe, &project.root, &project.server_env())?;
    let session = tokio::time::timeout(DEADLINE, drive(&mut server, project, printer)).await;
    let outcome = match session {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("the session did not finish within {}s", DEADLINE.as_secs())),
    };
    let tally = match outcome {
        Ok(tally) => tally,
        Err(problem) => {
            printer.end_text();
            let stderr = server.abort().await;
            return Err(failure(problem, &stderr, project));
        }
    };
    let status = server.shutdown().await.map_err(|e| failure(e, "", project))?;
    if !status.success() {
        return Err(failure(format!("the server exited with {status} after `exit`"), "", project));
    }
    let path = project.root.join(EDITED);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    printer.final_file(EDITED, &text);
    if project.original(EDITED) == Some(text.as_str()) {
        return Err(failure(format!("the accepted change did not reach {}", path.display()), "", project));
    }
    printer.done(&format!(
        "{} model answers, {} tool calls, {} review; the project stays in {}",
        tally.model_answers,
        tally.tool_calls,
        tally.reviews,
        project.root.display()
    ));
    printer.note(&format!("  try it: python3 {} --verbose Ada Grace", path.display()));
    Ok(())
}

fn failure(problem: String, stderr: &str, project: &Project) -> String {
    let mut message = format!("the demo failed: {problem}");
    if !stderr.is_empty() {
        message.push_str(&format!("\nthe server's stderr:\n{stderr}"));
    }
    message.push_str(&format!("\nthe server's log: {}", project.log_file().display()));
    message
}

/// Initializes, starts the session, sends the prompt and answers the server until the session
/// ends.
async fn drive(
    server: &mut ServerProcess,
    project: &Project,
    printer: &mut Printer,
) -> Result<Tally, String> {
    let root_uri = project.root_uri();
    server
        .request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "clientInfo": {"name": "agentls-demo"},
                "rootUri": root_uri,
                "workspaceFolders": [{"uri": root_uri, "name": "demo"}],
                "capabilities": {
                    "experimental": {"agentls": {"protocolVersion": 1}},
                    "general": {"positionEncodings": ["utf-8"]},
                },
                "initializationOptions": project.initialization_options(),
            }),
        )
        .await?;
    server.notify("initialized", json!({})).await?;
    let session = server
        .execute::<NewSession>(&NewSessionParams { root_uri: Some(root_uri), ..Default::default() })
        .await?;
    printer.session(&session.session_id, session.profile.as_str(), &session.model);
    printer.user(USER_PROMPT);
    let prompt =
        PromptParams { session_id: Some(session.session_id), text: USER_PROMPT.to_string(), context: None };
    server.execute::<Prompt>(&prompt).await?;

    let mut tally = Tally::default();
    // Questions wait until the `tool_call_start` of their call was shown, so the output follows
    // the session's order even when a question overtakes the events before it.
    let mut started: HashSet<String> = HashSet::new();
    let mut held: Vec<Question> = Vec::new();
    loop {
        match server.next().await? {
            Incoming::Notification { method, params } if method == EventNotification::METHOD => {
                let event: EventParams = decode(params)?;
                if let EventData::ToolCallStart(call) = &event.event {
                    started.insert(call.call_id.clone());
                }
                if let Some(end) = on_event(event, printer, &mut tally) {
                    return finish(end, tally);
                }
                let (ready, waiting) = held.into_iter().partition(|q| q.ready(&started));
                held = waiting;
                for question in ready {
                    answer(server, question, printer, &mut tally).await?;
                }
            }
            Incoming::Notification { method, params }
                if method == PermissionNotification::METHOD || method == ReviewNotification::METHOD =>
            {
                let question = if method == PermissionNotification::METHOD {
                    Question::Permission(decode(params)?)
                } else {
                    Question::Review(decode(params)?)
                };
                if question.ready(&started) {
                    answer(server, question, printer, &mut tally).await?;
                } else {
                    held.push(question);
                }
            }
            Incoming::Notification { .. } => {}
            // Nothing is asked of a client with these capabilities; answer anything anyway so
            // the server never waits.
            Incoming::Request { id } => server.respond(id, Value::Null).await?,
        }
    }
}

/// What the server asks the demo's user.
enum Question {
    Permission(PermissionParams),
    Review(ReviewParams),
}

impl Question {
    fn ready(&self, started: &HashSet<String>) -> bool {
        let call = match self {
            Question::Permission(ask) => Some(&ask.call_id),
            Question::Review(review) => review.call_id.as_ref(),
        };
        call.is_none_or(|id| started.contains(id))
    }
}

async fn answer(
    server: &mut ServerProcess,
    question: Question,
    printer: &mut Printer,
    tally: &mut Tally,
) -> Result<(), String> {
    match question {
        Question::Permission(ask) => {
            printer.permission(&ask.command, &ask.cwd);
            printer.decision("allow once");
            let answer = ResolvePermissionParams {
                request_id: ask.request_id,
                decision: PermissionAnswer::AllowOnce,
                feedback: None,
            };
            server.execute::<ResolvePermission>(&answer).await?;
        }
        Question::Review(review) => {
            tally.reviews += 1;
            let answer = decide(&review, printer);
            server.execute::<ResolveReview>(&answer).await?;
        }
    }
    Ok(())
}

/// Renders one event; `Some` at the end of processing.
fn on_event(event: EventParams, printer: &mut Printer, tally: &mut Tally) -> Option<ProcessingEnd> {
    match event.event {
        EventData::AssistantTextDelta(text) => printer.text_delta(&text.delta),
        EventData::AssistantTextEnd(_) => {
            tally.model_answers += 1;
            printer.end_text();
        }
        EventData::ToolCallEnd(call) => {
            tally.tool_calls += 1;
            if call.status != CallStatus::Ok {
                tally.failed_tools.push(call.summary.clone());
            }
            printer.tool(&call);
        }
        EventData::Error(error) => {
            let fatal = if error.fatal { " (fatal)" } else { "" };
            printer.note(&format!("  error{fatal}: {}", error.message));
            tally.errors.push(error.message);
        }
        EventData::ProcessingEnd(end) => {
            printer.end_text();
            return Some(end);
        }
        _ => {}
    }
    None
}

fn finish(end: ProcessingEnd, tally: Tally) -> Result<Tally, String> {
    if end.reason != EndReason::Completed {
        return Err(format!("the session ended with `{}` instead of completing", end.reason.as_str()));
    }
    if let Some(error) = tally.errors.first() {
        return Err(format!("the session reported an error: {error}"));
    }
    if !tally.failed_tools.is_empty() {
        return Err(format!("tool calls failed: {}", tally.failed_tools.join("; ")));
    }
    if tally.reviews == 0 {
        return Err("the agent proposed no change to review".into());
    }
    Ok(tally)
}

/// The demo's user accepts every hunk except those that change the greeting, and says why.
fn decide(review: &ReviewParams, printer: &mut Printer) -> ResolveReviewParams {
    let mut files = Vec::new();
    let mut rejected_any = false;
    for file in &review.files {
        printer.review(file);
        let (rejected, accepted): (Vec<_>, Vec<_>) =
            file.hunks.iter().partition(|h| h.old_text.contains(GREETING) && !h.new_text.contains(GREETING));
        let list = |hunks: &[&ReviewHunk]| {
            hunks
                .iter()
                .map(|h| format!("{} (line {})", h.index, h.old_start + 1))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let decision = match (accepted.is_empty(), rejected.is_empty()) {
            (_, true) => format!("accept {}", file.path),
            (true, false) => format!("reject {}", file.path),
            (false, false) => {
                format!("in {} accept hunks {}; reject hunk {}", file.path, list(&accepted), list(&rejected))
            }
        };
        printer.decision(&decision);
        if !rejected.is_empty() {
            rejected_any = true;
            files.push(ResolvedFile {
                uri: file.uri.clone(),
                accepted_hunks: Some(accepted.iter().map(|h| h.index).collect()),
                final_text: None,
            });
        }
    }
    let feedback = rejected_any.then(|| REJECTION.to_string());
    if let Some(reason) = &feedback {
        printer.decision(&format!("reason: {reason}"));
    }
    ResolveReviewParams {
        review_id: review.review_id.clone(),
        decision: ReviewAnswer::Accept,
        files: Some(files),
        feedback,
    }
}

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value.clone())
        .map_err(|e| format!("unexpected message from the server ({e}): {value}"))
}
