//! Context-overflow pruning (seed 002): what to drop when the provider says the conversation no
//! longer fits.
//!
//! Invariants: system, instructions and summary turns and the first user turn are kept; an assistant turn with tool calls
//! and the tool results that answer it are kept or dropped together; the newest round and the latest
//! user request are never dropped; the cut prefers a user/steering boundary.

use crate::session::turn::Turn;

/// What [`prune`] removed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruned {
    pub turns_removed: usize,
    pub chars_removed: usize,
    /// What the removed turns were, for the user (`2 user messages, 3 model responses, …`).
    pub dropped: String,
}

/// Drops roughly the oldest half (by size) of the droppable part of `history`.
/// Returns `None` when nothing can be dropped without breaking the invariants.
pub fn prune(history: &mut Vec<Turn>) -> Option<Pruned> {
    // After a compaction the history may start with its summary and no user turn.
    let first_user = history.iter().position(|t| matches!(t, Turn::User(_) | Turn::Summary(_)))?;
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
        .filter(|&i| {
            matches!(history[i], Turn::System(_) | Turn::Instructions(_) | Turn::Summary(_))
                || Some(i) == latest_user
        })
        .map(|i| history[i].clone())
        .collect();
    let chars_removed = removed_by(end) - kept.iter().map(Turn::char_len).sum::<usize>();
    let removed = end - start - kept.len();
    if removed == 0 {
        return None;
    }
    let dropped_turns: Vec<&Turn> = (start..end)
        .filter(|&i| !matches!(history[i], Turn::System(_) | Turn::Instructions(_) | Turn::Summary(_)))
        .filter(|&i| Some(i) != latest_user)
        .map(|i| &history[i])
        .collect();
    let dropped = describe(&dropped_turns);
    history.splice(start..end, kept);
    Some(Pruned { turns_removed: removed, chars_removed, dropped })
}

/// `2 user messages, 3 model responses and 3 tool results (read_file ×2, shell)`.
fn describe(turns: &[&Turn]) -> String {
    let count = |f: fn(&Turn) -> bool| turns.iter().filter(|t| f(t)).count();
    let mut tools: Vec<(String, usize)> = Vec::new();
    for turn in turns {
        if let Turn::ToolResults(r) = turn {
            for result in &r.results {
                match tools.iter_mut().find(|(name, _)| *name == result.name) {
                    Some((_, n)) => *n += 1,
                    None => tools.push((result.name.clone(), 1)),
                }
            }
        }
    }
    let results: usize = tools.iter().map(|(_, n)| n).sum();
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    let users = count(|t| matches!(t, Turn::User(_) | Turn::Steering(_)));
    let answers = count(|t| matches!(t, Turn::Assistant(_)));
    if users > 0 {
        parts.push(plural(users, "user message", "user messages"));
    }
    if answers > 0 {
        parts.push(plural(answers, "model response", "model responses"));
    }
    if results > 0 {
        let names: Vec<String> = tools
            .iter()
            .map(|(name, n)| if *n == 1 { name.clone() } else { format!("{name} ×{n}") })
            .collect();
        parts.push(format!("{} ({})", plural(results, "tool result", "tool results"), names.join(", ")));
    }
    match parts.len() {
        0 => "nothing".into(),
        1 => parts.remove(0),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

/// Indices `e` in `start+1..=last` such that cutting `start..e` keeps call/result pairs whole:
/// the turn at `e` is not a tool-results turn.
fn valid_cuts(history: &[Turn], start: usize, last: usize) -> Vec<usize> {
    (start + 1..=last).filter(|&e| e < history.len() && !matches!(history[e], Turn::ToolResults(_))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_round(id: &str, size: usize) -> [Turn; 2] {
        crate::session::turn::read_round(id, "x".repeat(size))
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
                Turn::Summary(s) => format!("Σ:{}", s.summary),
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
        assert_eq!(pruned.dropped, "2 model responses and 2 tool results (read_file ×2)");
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
    fn a_compacted_history_keeps_its_summary() {
        let mut h = vec![Turn::Summary(crate::session::turn::SummaryTurn {
            summary: "earlier".into(),
            turns_summarized: 9,
            model_turns: 4,
            timestamp: chrono::Utc::now(),
        })];
        for id in ["a", "b", "c", "d"] {
            h.extend(call_round(id, 1000));
        }
        let pruned = prune(&mut h).expect("something to drop");
        assert_eq!(shape(&h)[0], "Σ:earlier");
        assert!(shape(&h)[1].starts_with("A:"));
        assert!(pruned.dropped.contains("tool result"), "{}", pruned.dropped);
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
