//! Resuming a session whose last turn was cut off (the server died mid-turn): what the model
//! must be told before it goes on.
//!
//! Invariants:
//! - Every tool call of the resumed history has a result: a call that never finished gets one
//!   that says so (an edit that waited for review was not applied; a command may have run in
//!   part), so the history is valid for every provider.
//! - An interrupted turn is followed by one system note naming it and its unfinished calls; a
//!   turn that ended normally gets nothing.

use std::collections::HashSet;

use super::Turn;
use crate::llm::ToolResult;

/// The result of a call that never finished.
pub const UNFINISHED_RESULT: &str = "This call never finished: the agentls server stopped while it ran or while it \
     waited for the user's review or permission. Nothing it proposed was applied by agentls; a command may have \
     run in part.";

/// The turns to append to a resumed `history` so the model learns its previous turn was cut
/// off: results for the calls that never got one, then a note. `interrupted` says whether the
/// transcript shows a turn that never ended; unfinished calls alone also mean it was. Empty when
/// nothing was cut off.
pub fn close_interrupted(history: &[Turn], interrupted: bool) -> Vec<Turn> {
    let answered: HashSet<&str> = history
        .iter()
        .filter_map(|t| match t {
            Turn::ToolResults(r) => Some(r.results.iter().map(|r| r.call_id.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    let unfinished: Vec<(&str, &str)> = match history.iter().rev().find(|t| matches!(t, Turn::Assistant(_))) {
        Some(Turn::Assistant(a)) => a
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(c.id.as_str()))
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect(),
        _ => Vec::new(),
    };
    if !interrupted && unfinished.is_empty() {
        return Vec::new();
    }
    let mut turns = Vec::new();
    if !unfinished.is_empty() {
        let results = unfinished
            .iter()
            .map(|(id, name)| ToolResult {
                call_id: id.to_string(),
                name: name.to_string(),
                content: UNFINISHED_RESULT.into(),
                is_error: true,
                images: Vec::new(),
            })
            .collect();
        turns.push(Turn::tool_results(results));
    }
    let calls = if unfinished.is_empty() {
        "Every tool call it made had finished.".to_string()
    } else {
        let named: Vec<String> = unfinished.iter().map(|(id, name)| format!("`{name}` ({id})")).collect();
        format!(
            "These tool calls never finished: {}. What they did, if anything, is unknown: check the files before \
             relying on them.",
            named.join(", ")
        )
    };
    turns.push(Turn::system(format!(
        "[agentls] The previous turn was interrupted: the agentls server stopped before it finished, and this \
         session was resumed. {calls} Wait for the user's next message before continuing that work."
    )));
    turns
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::ToolCall;
    use crate::session::turn::AssistantTurn;

    fn asked(calls: &[(&str, &str)]) -> Turn {
        Turn::Assistant(AssistantTurn {
            content: "Working on it.".into(),
            tool_calls: calls
                .iter()
                .map(|(id, name)| ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: json!({}),
                    signature: None,
                })
                .collect(),
            reasoning: None,
            usage: Default::default(),
            response_id: None,
            parts: Vec::new(),
            timestamp: chrono::Utc::now(),
        })
    }

    fn answered(id: &str) -> Turn {
        Turn::tool_results(vec![ToolResult {
            call_id: id.into(),
            name: "shell".into(),
            content: "ok".into(),
            is_error: false,
            images: Vec::new(),
        }])
    }

    #[test]
    fn a_finished_turn_needs_nothing() {
        let history = vec![Turn::user("hi"), asked(&[("c1", "shell")]), answered("c1"), asked(&[])];
        assert!(close_interrupted(&history, false).is_empty());
    }

    #[test]
    fn unfinished_calls_get_results_and_the_model_a_note_naming_them() {
        let history =
            vec![Turn::user("fix it"), asked(&[("c1", "shell"), ("c2", "apply_patch")]), answered("c1")];
        let added = close_interrupted(&history, false);
        let [Turn::ToolResults(results), Turn::System(note)] = added.as_slice() else { panic!("{added:?}") };
        assert_eq!(results.results.len(), 1);
        assert_eq!((results.results[0].call_id.as_str(), results.results[0].is_error), ("c2", true));
        assert!(
            note.content.contains("`apply_patch` (c2)") && !note.content.contains("(c1)"),
            "{}",
            note.content
        );
    }

    #[test]
    fn an_input_cut_before_any_answer_gets_the_note_alone() {
        let added = close_interrupted(&[Turn::user("fix it")], true);
        let [Turn::System(note)] = added.as_slice() else { panic!("{added:?}") };
        assert!(
            note.content.contains("interrupted") && note.content.contains("had finished"),
            "{}",
            note.content
        );
    }
}
