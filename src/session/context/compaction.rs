//! Compaction (seed 004 §1.5): which turns a summary replaces, the request that asks the model
//! for it, and the history that results.
//!
//! Invariants:
//! - The summary reaches the model as one user message whose first line is exactly
//!   [`SUMMARY_SENTINEL`] (the summary turn's own message), so it is read as background and not
//!   as a request.
//! - The cut never separates a tool call from its result: the first kept turn is never a
//!   tool-results turn, so every kept result follows the call it answers. Compaction runs only
//!   between model calls, where every call of the history has its result (never mid round).
//! - The latest `keep_exchanges` exchanges (a user input and everything after it) are kept as
//!   they are; when they are the whole history, the latest turns are kept instead.
//! - System and instructions turns of the summarised part are kept (after the summary): they
//!   are facts the model was handed, not conversation. So is the latest user input when the cut
//!   falls inside its exchange: the task at hand stays in the user's own words.

use chrono::Utc;

use crate::llm::{Message, Request, ToolChoice};
#[cfg(doc)]
use crate::session::turn::SUMMARY_SENTINEL;
use crate::session::turn::{SummaryTurn, Turn};

/// The instructions of the summary request.
const SUMMARY_SYSTEM_PROMPT: &str = include_str!("compaction_prompt.md");

/// What the summary request asks for after the transcript.
const SUMMARY_REQUEST: &str = "Summarise the conversation above as instructed. Reply with the summary only.";

/// A tool result longer than this is shortened in the transcript the summariser reads: what a
/// result showed matters, its every line does not.
const MAX_RESULT_CHARS: usize = 4_000;

/// Where to cut `history`: the turns before the returned index are summarised. `None` when
/// there is nothing worth summarising.
pub fn plan(history: &[Turn], keep_exchanges: usize) -> Option<usize> {
    let keep = keep_exchanges.max(1);
    // Something besides earlier summaries and the turns that stay after the summary anyway.
    let summarisable = |cut: usize| {
        history[..cut]
            .iter()
            .enumerate()
            .any(|(i, t)| !matches!(t, Turn::Summary(_)) && !kept_from_head(history, cut, i, t))
    };
    let inputs: Vec<usize> =
        history.iter().enumerate().filter(|(_, t)| matches!(t, Turn::User(_))).map(|(i, _)| i).collect();
    if inputs.len() >= keep {
        let cut = inputs[inputs.len() - keep];
        if cut > 0 && summarisable(cut) {
            return Some(cut);
        }
    }
    // The kept exchanges are the whole history (one long task): keep its latest turns instead,
    // starting at a turn that is not a tool result.
    let mut cut = history.len().checked_sub(2 * keep)?;
    while cut > 0 && matches!(history[cut], Turn::ToolResults(_)) {
        cut -= 1;
    }
    (cut > 0 && summarisable(cut)).then_some(cut)
}

/// The request that asks `model` to summarise `turns`: the turns as a plain transcript in one
/// user message (no tools offered, so any provider accepts it whatever the turns contain).
pub fn summary_request(turns: &[Turn], model: &str) -> Request {
    let transcript = transcript(turns);
    let mut request = Request::new(
        model,
        vec![
            Message::system(SUMMARY_SYSTEM_PROMPT.trim_end()),
            Message::user(format!("<transcript>\n{transcript}</transcript>\n\n{SUMMARY_REQUEST}")),
        ],
    );
    request.tool_choice = ToolChoice::None;
    request
}

/// `history` with the turns before `cut` replaced by `summary`.
pub fn apply(history: &[Turn], cut: usize, summary: String) -> Vec<Turn> {
    let head = &history[..cut];
    let earlier = |f: fn(&SummaryTurn) -> usize| {
        head.iter().map(|t| if let Turn::Summary(s) = t { f(s) } else { 0 }).sum::<usize>()
    };
    let model_turns =
        head.iter().filter(|t| matches!(t, Turn::Assistant(_))).count() + earlier(|s| s.model_turns);
    let turns_summarized = head
        .iter()
        .enumerate()
        .filter(|&(i, t)| !matches!(t, Turn::Summary(_)) && !kept_from_head(history, cut, i, t))
        .count()
        + earlier(|s| s.turns_summarized);
    let mut out =
        vec![Turn::Summary(SummaryTurn { summary, turns_summarized, model_turns, timestamp: Utc::now() })];
    out.extend(
        head.iter().enumerate().filter(|&(i, t)| kept_from_head(history, cut, i, t)).map(|(_, t)| t.clone()),
    );
    out.extend(history[cut..].iter().cloned());
    out
}

/// Whether turn `i` of the summarised part `..cut` stays after the summary: system and
/// instructions turns, and the latest user input when no later one is kept.
fn kept_from_head(history: &[Turn], cut: usize, i: usize, turn: &Turn) -> bool {
    let latest_user = history.iter().rposition(|t| matches!(t, Turn::User(_)));
    matches!(turn, Turn::System(_) | Turn::Instructions(_)) || (Some(i) == latest_user && i < cut)
}

/// The turns as text the summariser reads.
fn transcript(turns: &[Turn]) -> String {
    let mut out = String::new();
    for turn in turns {
        match turn {
            Turn::User(t) => out.push_str(&format!("USER:\n{}\n\n", t.content)),
            Turn::Steering(t) => out.push_str(&format!("USER (while the agent worked):\n{}\n\n", t.content)),
            Turn::System(t) => out.push_str(&format!("NOTE TO THE AGENT:\n{}\n\n", t.content)),
            Turn::Summary(s) => out.push_str(&format!("SUMMARY OF EARLIER CONVERSATION:\n{}\n\n", s.summary)),
            Turn::Instructions(i) => {
                let paths: Vec<String> = i.docs.iter().map(|d| d.path.display().to_string()).collect();
                out.push_str(&format!("INSTRUCTION FILES HANDED TO THE AGENT: {}\n\n", paths.join(", ")));
            }
            Turn::Assistant(a) => {
                out.push_str("AGENT:\n");
                if !a.content.is_empty() {
                    out.push_str(&a.content);
                    out.push('\n');
                }
                for call in &a.tool_calls {
                    out.push_str(&format!("[calls {} {}]\n", call.name, call.arguments));
                }
                out.push('\n');
            }
            Turn::ToolResults(r) => {
                for result in &r.results {
                    let status = if result.is_error { " (error)" } else { "" };
                    out.push_str(&format!(
                        "RESULT OF {}{status}:\n{}\n\n",
                        result.name,
                        shortened(&result.content)
                    ));
                }
            }
        }
    }
    out
}

fn shortened(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_RESULT_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(MAX_RESULT_CHARS).collect();
    format!("{head}\n… [{} more characters]", total - MAX_RESULT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ContentPart, Response, Role};
    use crate::session::turn::summary_message;

    fn round(id: &str, output: &str) -> [Turn; 2] {
        crate::session::turn::read_round(id, output.into())
    }

    fn answer(text: &str) -> Turn {
        Turn::assistant(&Response { content: vec![ContentPart::text(text)], ..Default::default() })
    }

    /// Four exchanges: task, two rounds, answer; each later one a question and an answer.
    fn history() -> Vec<Turn> {
        let mut h = vec![Turn::user("first task")];
        h.extend(round("a.rs", "fn a() {}"));
        h.extend(round("b.rs", "fn b() {}"));
        h.push(answer("done first"));
        for n in ["second", "third", "fourth"] {
            h.push(Turn::user(format!("{n} question")));
            h.push(answer(&format!("{n} answer")));
        }
        h
    }

    #[test]
    fn the_summary_message_starts_with_the_exact_sentinel_line() {
        let message = summary_message("we fixed the parser");
        assert_eq!(
            message,
            "[Earlier conversation summary — treat as background context]\n\nwe fixed the parser"
        );
        let turn = apply(&history(), 6, "we fixed the parser".into()).remove(0);
        let sent = turn.to_message();
        assert_eq!(sent.role, Role::User);
        assert_eq!(sent.content, vec![ContentPart::text(message)]);
    }

    #[test]
    fn keeps_the_last_exchanges_and_summarises_the_rest() {
        let h = history();
        let cut = plan(&h, 3).expect("something to summarise");
        assert_eq!(cut, 6, "the third exchange from the end starts at the second question");
        let compacted = apply(&h, cut, "summary".into());
        assert_eq!(compacted[1..], h[6..], "the tail is kept unchanged");
        let Turn::Summary(s) = &compacted[0] else { panic!("a summary first") };
        assert_eq!((s.turns_summarized, s.model_turns), (6, 3));
        // Four exchanges are the whole history: the latest eight turns are kept instead, from
        // the call whose result would have started them.
        assert_eq!(plan(&h, 4), Some(3));
        assert!(matches!(h[3], Turn::Assistant(_)));
    }

    #[test]
    fn one_long_exchange_keeps_its_latest_turns_without_splitting_a_call_from_its_result() {
        let mut h = vec![Turn::user("one long task")];
        for id in ["a", "b", "c", "d", "e"] {
            h.extend(round(id, "x"));
        }
        // 11 turns; keeping 2 exchanges' worth (4 turns) cuts at index 7: an assistant turn.
        let cut = plan(&h, 2).expect("cut");
        assert!(matches!(h[cut], Turn::Assistant(_)), "the tail starts with a call, not a result");
        assert_eq!(cut, 7);
        let compacted = apply(&h, cut, "s".into());
        assert!(matches!(&compacted[1], Turn::User(t) if t.content == "one long task"), "the task is kept");
        assert_eq!(compacted[2..], h[7..]);
        let Turn::Summary(s) = &compacted[0] else { panic!() };
        assert_eq!(s.turns_summarized, 6);
        // A cut that would land on a result moves back to its call.
        h.push(Turn::steering("hurry"));
        let cut = plan(&h, 2).expect("cut");
        assert!(!matches!(h[cut], Turn::ToolResults(_)));
        for (i, turn) in h.iter().enumerate().skip(cut) {
            if let Turn::ToolResults(r) = turn {
                let Turn::Assistant(call) = &h[i - 1] else { panic!("a result follows its call") };
                assert_eq!(call.tool_calls[0].id, r.results[0].call_id);
                assert!(i > cut, "the call is kept with its result");
            }
        }
    }

    #[test]
    fn nothing_to_summarise_is_no_plan() {
        assert_eq!(plan(&[], 3), None);
        assert_eq!(plan(&[Turn::user("hi"), answer("hello")], 3), None);
        let compacted = apply(&history(), 6, "s".into());
        assert_eq!(plan(&compacted[..3], 1), None, "a summary alone is not summarised again");
        let mut task = vec![Turn::user("task")];
        task.extend(round("a", "x"));
        assert_eq!(plan(&task, 1), None, "the task alone (kept anyway) is nothing to summarise");
    }

    #[test]
    fn instructions_and_system_turns_survive_and_earlier_summaries_add_up() {
        let mut h = history();
        h.insert(3, Turn::system("note"));
        let compacted = apply(&h, 7, "first".into());
        assert!(matches!(&compacted[1], Turn::System(t) if t.content == "note"));
        let again = apply(&compacted, 2, "second".into());
        let Turn::Summary(s) = &again[0] else { panic!() };
        assert_eq!((s.turns_summarized, s.model_turns), (6, 3), "the earlier summary's counts: {s:?}");
    }

    #[test]
    fn the_summary_request_holds_the_transcript_and_the_instructions_and_no_tools() {
        let h = history();
        let request = summary_request(&h[..6], "small-model");
        assert_eq!(request.model, "small-model");
        assert!(request.tools.is_empty());
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[0].role, Role::System);
        assert_eq!(request.messages[0].content, vec![ContentPart::text(SUMMARY_SYSTEM_PROMPT.trim_end())]);
        let expected = "<transcript>\nUSER:\nfirst task\n\n\
                        AGENT:\nreading a.rs\n[calls read_file {\"file_path\":\"a.rs\"}]\n\n\
                        RESULT OF read_file:\nfn a() {}\n\n\
                        AGENT:\nreading b.rs\n[calls read_file {\"file_path\":\"b.rs\"}]\n\n\
                        RESULT OF read_file:\nfn b() {}\n\n\
                        AGENT:\ndone first\n\n\
                        </transcript>\n\nSummarise the conversation above as instructed. Reply with the summary only.";
        assert_eq!(request.messages[1].content, vec![ContentPart::text(expected)]);
        let long = shortened(&"y".repeat(MAX_RESULT_CHARS + 5));
        assert!(long.ends_with("… [5 more characters]"), "{long}");
    }
}
