//! Context-overflow pruning (seed 002): what to drop when the provider says the conversation no
//! longer fits.
//!
//! Invariants: system and instructions turns and the first user turn are kept; an assistant turn with tool calls
//! and the tool results that answer it are kept or dropped together; the newest round and the latest
//! user request are never dropped; the cut prefers a user/steering boundary.

use super::turn::Turn;

/// What [`prune`] removed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruned {
    pub turns_removed: usize,
    pub chars_removed: usize,
}

/// Drops roughly the oldest half (by size) of the droppable part of `history`.
/// Returns `None` when nothing can be dropped without breaking the invariants.
pub fn prune(history: &mut Vec<Turn>) -> Option<Pruned> {
    let first_user = history.iter().position(|t| matches!(t, Turn::User(_)))?;
    let start = first_user + 1;
    // The newest round (the last assistant turn and its results) always stays.
    let last = history.iter().rposition(|t| matches!(t, Turn::Assistant(_))).unwrap_or(history.len());
    let latest_user = history.iter().rposition(|t| matches!(t, Turn::User(_)));
    let candidates = valid_cuts(history, start, last);
    if candidates.is_empty() {
        return None;
    }
    let droppable: usize = history[start..last].iter().map(Turn::char_len).sum();
    let target = droppable / 2;
    // Prefer the first user boundary that removes at least half; else the first cut that does;
    // else the largest cut available.
    let removed_by = |end: usize| history[start..end].iter().map(Turn::char_len).sum::<usize>();
    let end = candidates
        .iter()
        .copied()
        .find(|&e| history[e].is_user_boundary() && removed_by(e) >= target)
        .or_else(|| candidates.iter().copied().find(|&e| removed_by(e) >= target))
        .unwrap_or(*candidates.last().expect("not empty"));
    // System and instructions turns and the user's latest request survive the cut.
    let kept: Vec<Turn> = (start..end)
        .filter(|&i| matches!(history[i], Turn::System(_) | Turn::Instructions(_)) || Some(i) == latest_user)
        .map(|i| history[i].clone())
        .collect();
    let chars_removed = removed_by(end) - kept.iter().map(Turn::char_len).sum::<usize>();
    let removed = end - start - kept.len();
    if removed == 0 {
        return None;
    }
    history.splice(start..end, kept);
    Some(Pruned { turns_removed: removed, chars_removed })
}

/// Indices `e` in `start+1..=last` such that cutting `start..e` keeps call/result pairs whole:
/// the turn at `e` is not a tool-results turn.
fn valid_cuts(history: &[Turn], start: usize, last: usize) -> Vec<usize> {
    (start + 1..=last).filter(|&e| e < history.len() && !matches!(history[e], Turn::ToolResults(_))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ContentPart, Response, ToolCall, ToolResult};
    use serde_json::json;

    fn call_round(id: &str, size: usize) -> [Turn; 2] {
        let response = Response {
            content: vec![ContentPart::ToolCall(ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: json!({"file_path": id}),
                signature: None,
            })],
            ..Default::default()
        };
        [
            Turn::assistant(&response),
            Turn::tool_results(vec![ToolResult {
                call_id: id.into(),
                name: "read_file".into(),
                content: "x".repeat(size),
                is_error: false,
                images: vec![],
            }]),
        ]
    }

    fn shape(history: &[Turn]) -> Vec<String> {
        history
            .iter()
            .map(|t| match t {
                Turn::User(u) => format!("U:{}", u.content),
                Turn::Steering(s) => format!("S:{}", s.content),
                Turn::System(s) => format!("Y:{}", s.content),
                Turn::Instructions(i) => format!("I:{}", i.docs[0].content),
                Turn::Assistant(a) => format!("A:{}", a.tool_calls.first().map_or("", |c| c.id.as_str())),
                Turn::ToolResults(r) => format!("R:{}", r.results[0].call_id),
            })
            .collect()
    }

    #[test]
    fn keeps_first_user_and_pairs_and_cuts_at_user_boundary() {
        let mut h = vec![Turn::user("task")];
        h.extend(call_round("a", 1000));
        h.extend(call_round("b", 1000));
        h.push(Turn::user("second"));
        h.extend(call_round("c", 1000));
        h.push(Turn::user("third"));
        h.extend(call_round("d", 10));
        let pruned = prune(&mut h).expect("something to drop");
        assert_eq!(shape(&h), ["U:task", "U:second", "A:c", "R:c", "U:third", "A:d", "R:d"]);
        assert_eq!(pruned.turns_removed, 4);
    }

    #[test]
    fn without_user_boundaries_cuts_between_pairs() {
        let mut h = vec![Turn::user("task")];
        for id in ["a", "b", "c", "d"] {
            h.extend(call_round(id, 1000));
        }
        prune(&mut h).expect("something to drop");
        let s = shape(&h);
        assert_eq!(s[0], "U:task");
        assert!(s[1].starts_with("A:"), "never starts with an orphaned result: {s:?}");
        assert!(s.len() < 9);
    }

    #[test]
    fn gives_up_when_only_the_task_and_one_round_remain() {
        let mut h = vec![Turn::user("task")];
        h.extend(call_round("a", 1000));
        assert_eq!(prune(&mut h), None);
        let mut only = vec![Turn::user("task")];
        assert_eq!(prune(&mut only), None);
    }

    #[test]
    fn system_turns_survive() {
        let mut h = vec![Turn::user("task"), Turn::system("note")];
        h.extend(call_round("a", 1000));
        h.push(Turn::user("next"));
        h.extend(call_round("b", 10));
        prune(&mut h).expect("something to drop");
        assert_eq!(shape(&h), ["U:task", "Y:note", "U:next", "A:b", "R:b"]);
    }

    #[test]
    fn instructions_turns_survive() {
        let docs = crate::profiles::ProjectDocs {
            docs: vec![crate::profiles::project_docs::ProjectDoc {
                path: "/repo/sub/AGENTS.md".into(),
                content: "sub rules".into(),
            }],
            truncated: false,
        };
        let mut h = vec![Turn::user("task")];
        h.extend(call_round("a", 1000));
        h.push(Turn::instructions(docs));
        h.extend(call_round("b", 1000));
        h.push(Turn::user("next"));
        h.extend(call_round("c", 10));
        prune(&mut h).expect("something to drop");
        assert_eq!(shape(&h), ["U:task", "I:sub rules", "U:next", "A:c", "R:c"]);
    }
}
