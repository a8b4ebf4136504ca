//! The bounded search loop (seed 000): the system prompt, then a user message with the
//! repository's structure and the query; each model turn's calls run in parallel and their
//! results go back wrapped in tags that echo each call, followed by the turn counter; the search
//! ends when the model calls `finish`.
//!
//! Invariants:
//! - At most [`MAX_TURNS`] model calls. The message before the last one says it is the last and
//!   demands `finish` (and a request that offers native tools forces that one); a model that
//!   still does not finish ends the search without a result.
//! - The calls of one turn run concurrently; their results are in call order.
//! - Native function calls are answered with tool results; calls written in the XML form are
//!   answered in a user message. Either way every result is wrapped the same way.
//! - A cancelled parent turn stops the search at once.
//! - Each turn's calls are reported as one line of the parent call's live output.

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::calls::{self, SearchCall};
use super::root::SearchRoot;
use super::{grep, list_directory, read};
use crate::llm::{ContentPart, Message, Request, Response, ToolChoice, ToolResult};
use crate::tools::{ModelAccess, ToolContext, ToolError};

/// Model turns a search may take.
pub const MAX_TURNS: usize = 4;

/// Characters of conversation the turn counter's budget line measures against.
const CONTEXT_BUDGET_CHARS: usize = 160_000;

const SYSTEM_PROMPT: &str = include_str!("prompt.md");

/// The seed's turn counter, sent after `used` turns.
pub fn turn_counter(used: usize) -> String {
    let remaining = MAX_TURNS.saturating_sub(used);
    if remaining <= 1 {
        format!(
            "You have used {used} turns, you only have 1 turn remaining. You have run out of turns to \
             explore the code base and MUST call the finish tool now"
        )
    } else {
        let turns = if used == 1 { "turn" } else { "turns" };
        format!("You have used {used} {turns} and have {remaining} remaining")
    }
}

/// How a search ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ending {
    /// The model called `finish` in turn `turns`.
    Finished { files: Vec<calls::FinishFile>, turns: usize },
    /// All turns were used without `finish`.
    OutOfTurns,
}

/// One search for `query` with `model`; `native_tools`: whether the tools are offered as
/// function definitions (the XML form is read either way).
pub(super) async fn run(
    model: &ModelAccess,
    native_tools: bool,
    ctx: &ToolContext,
    root: &SearchRoot,
    query: &str,
) -> Result<Ending, ToolError> {
    let structure = list_directory::repo_structure(ctx, root).await;
    let mut messages = vec![Message::system(SYSTEM_PROMPT)];
    let opening = format!(
        "<repo_structure>\n{structure}\n</repo_structure>\n\n<search_string>\n{query}\n</search_string>"
    );
    messages.push(Message::user(with_counter(opening, 0, &messages)));
    for turn in 1..=MAX_TURNS {
        let request = Request {
            model: model.model.clone(),
            messages: messages.clone(),
            tools: if native_tools { calls::definitions() } else { Vec::new() },
            tool_choice: if turn == MAX_TURNS {
                ToolChoice::Named("finish".into())
            } else {
                ToolChoice::Auto
            },
            ..Request::default()
        };
        let response = ask(model, &request, &ctx.cancel).await?;
        messages.push(response.to_message());
        let native: Vec<_> = response.tool_calls().into_iter().cloned().collect();
        let parsed: Vec<Result<SearchCall, String>> = if native.is_empty() {
            calls::parse_xml(&response.text())
        } else {
            native.iter().map(|c| SearchCall::from_native(&c.name, &c.arguments)).collect()
        };
        ctx.report(&progress(turn, &parsed));
        if let Some(files) = parsed.iter().find_map(|c| match c {
            Ok(SearchCall::Finish(files)) => Some(files.clone()),
            _ => None,
        }) {
            return Ok(Ending::Finished { files, turns: turn });
        }
        if turn == MAX_TURNS {
            break;
        }
        let results = join_all(parsed.iter().map(|call| execute(ctx, root, call))).await;
        if native.is_empty() {
            let mut text = if results.is_empty() {
                "No tool call was found in your answer. Call grep, read or list_directory in the XML form \
                 (or as function calls), or finish with the files that answer the query."
                    .to_string()
            } else {
                results.iter().map(|r| r.wrapped.as_str()).collect::<Vec<_>>().join("\n\n")
            };
            text = with_counter(text, turn, &messages);
            messages.push(Message::user(text));
        } else {
            let results = native
                .iter()
                .zip(&results)
                .map(|(call, result)| ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: result.wrapped.clone(),
                    is_error: result.is_error,
                    images: Vec::new(),
                })
                .collect();
            messages.push(Message::tool_results(results));
            messages.push(Message::user(with_counter(String::new(), turn, &messages)));
        }
    }
    Ok(Ending::OutOfTurns)
}

/// One line of the parent's live output per turn: what the search model asked for.
fn progress(turn: usize, calls: &[Result<SearchCall, String>]) -> String {
    let calls: Vec<String> = calls
        .iter()
        .map(|call| match call {
            Ok(call) => call.describe(),
            Err(why) => format!("(unreadable call: {why})"),
        })
        .collect();
    let calls = if calls.is_empty() { "no tool call".to_string() } else { calls.join(", ") };
    format!("turn {turn}: {calls}\n")
}

async fn ask(
    model: &ModelAccess,
    request: &Request,
    cancel: &CancellationToken,
) -> Result<Response, ToolError> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ToolError::new("the search was cancelled")),
        response = model.client.complete(request) => response.map_err(|e| {
            ToolError::new(format!("the search model ({}) failed: {e}", model.model))
        }),
    }
}

/// `text`, then the turn counter after `used` turns and how much of the context budget the
/// conversation (`messages` and `text`) takes.
fn with_counter(text: String, used: usize, messages: &[Message]) -> String {
    let chars: usize = messages.iter().flat_map(|m| &m.content).map(part_chars).sum::<usize>() + text.len();
    let percent = (chars * 100 / CONTEXT_BUDGET_CHARS).min(100);
    let budget = format!(
        "Context budget: {percent}% used ({}K of {}K characters)",
        chars / 1000,
        CONTEXT_BUDGET_CHARS / 1000
    );
    let counter = turn_counter(used);
    if text.is_empty() { format!("{counter}\n{budget}") } else { format!("{text}\n\n{counter}\n{budget}") }
}

/// The characters a message part puts in the search model's context.
fn part_chars(part: &ContentPart) -> usize {
    match part {
        ContentPart::Text { text } | ContentPart::Thinking { text, .. } => text.len(),
        ContentPart::ToolCall(call) => call.name.len() + call.arguments.to_string().len(),
        ContentPart::ToolResult(result) => result.content.len(),
        ContentPart::Image(_) | ContentPart::RedactedThinking { .. } => 0,
    }
}

/// A call's result, wrapped in its echo tag.
struct Executed {
    wrapped: String,
    is_error: bool,
}

async fn execute(ctx: &ToolContext, root: &SearchRoot, call: &Result<SearchCall, String>) -> Executed {
    let call = match call {
        Ok(call) => call,
        Err(why) => return Executed { wrapped: format!("<error>\n{why}\n</error>"), is_error: true },
    };
    let result = match call {
        SearchCall::Grep(args) => grep::run(ctx, root, args).await,
        SearchCall::Read(args) => read::run(ctx, root, args).await,
        SearchCall::ListDirectory(args) => list_directory::run(ctx, root, args).await,
        SearchCall::Finish(_) => Err("finish ends the search; it runs alone".into()),
    };
    let (body, is_error) = match result {
        Ok(body) => (body, false),
        Err(why) => (why, true),
    };
    Executed { wrapped: format!("{}\n{body}\n</{}>", call.open_tag(), call.name()), is_error }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prompt is code: its XML examples are calls the parser reads, and it names every tool
    /// and every parameter the search model is offered.
    #[test]
    fn the_prompt_shows_the_tools_as_they_are_parsed_and_offered() {
        let calls: Vec<SearchCall> =
            calls::parse_xml(SYSTEM_PROMPT).into_iter().map(Result::unwrap).collect();
        let names: Vec<&str> = calls.iter().map(SearchCall::name).collect();
        assert_eq!(names, calls::TOOL_NAMES);
        for definition in calls::definitions() {
            assert!(SYSTEM_PROMPT.contains(&format!("{} ", definition.name)), "{}", definition.name);
            let properties = definition.parameters["properties"].as_object().unwrap();
            for parameter in properties.keys() {
                assert!(SYSTEM_PROMPT.contains(parameter.as_str()), "{parameter} of {}", definition.name);
            }
        }
        assert!(SYSTEM_PROMPT.contains(super::super::OVER_LIMIT));
        assert!(SYSTEM_PROMPT.contains(&format!("at most {MAX_TURNS} turns")));
    }

    #[test]
    fn the_turn_counter_is_the_seeds() {
        let counters: Vec<String> = (0..MAX_TURNS).map(turn_counter).collect();
        assert_eq!(
            counters,
            [
                "You have used 0 turns and have 4 remaining",
                "You have used 1 turn and have 3 remaining",
                "You have used 2 turns and have 2 remaining",
                "You have used 3 turns, you only have 1 turn remaining. You have run out of turns to explore \
                 the code base and MUST call the finish tool now",
            ]
        );
    }
}
