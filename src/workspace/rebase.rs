//! Three-way rebase of the agent's change onto text that changed since the agent read it.
//! Invariant: a rebase either keeps every change of both sides or fails; it never drops text the
//! agent did not see.
//!
//! Policy (deliberately more permissive than diff3/git, which also refuse edits that merely
//! touch): the two changes conflict only when they replace a common base line, when one inserts
//! strictly inside a block the other replaces, or when both insert different text at the same
//! place. Edits of directly adjacent lines (the user edits line 10, the agent line 11) apply
//! cleanly; an insertion at the edge of the other side's block goes before or after the block.
//! The same edit made on both sides is applied once.

use std::time::Instant;

use super::hunks::{DIFF_DEADLINE, Hunk, compute_hunks};

/// The agent's change and the newer text both changed the same lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the file changed since it was read, at lines {lines} (of its current text), where the edit also applies"
)]
pub struct RebaseConflict {
    /// 1-based line ranges of the current text that conflict, e.g. `3-5, 9`.
    pub lines: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Theirs,
}

/// Replays `base → ours` on top of `base → theirs` (`theirs` is the current text).
pub fn rebase(base: &str, ours: &str, theirs: &str) -> Result<String, RebaseConflict> {
    if ours == base || ours == theirs {
        return Ok(theirs.to_string());
    }
    if theirs == base {
        return Ok(ours.to_string());
    }
    let deadline = Some(Instant::now() + DIFF_DEADLINE);
    let our_hunks = compute_hunks(base, ours, deadline);
    let their_hunks = compute_hunks(base, theirs, deadline);
    let mut edits: Vec<(Side, &Hunk)> = our_hunks
        .iter()
        .map(|hunk| (Side::Ours, hunk))
        .chain(their_hunks.iter().map(|hunk| (Side::Theirs, hunk)))
        .collect();
    // In base order; at one place an insertion comes before a block that replaces lines.
    edits.sort_by_key(|(side, hunk)| (hunk.old_start, hunk.old_lines != 0, *side == Side::Theirs));

    let mut conflicts: Vec<String> = Vec::new();
    let mut applied: Vec<&Hunk> = Vec::with_capacity(edits.len());
    let (mut last_ours, mut last_theirs): (Option<&Hunk>, Option<&Hunk>) = (None, None);
    for (side, hunk) in edits {
        let other = match side {
            Side::Ours => last_theirs,
            Side::Theirs => last_ours,
        };
        match other {
            Some(other) if same_edit(other, hunk) => continue,
            Some(other) if clash(other, hunk) => {
                let theirs_hunk = if side == Side::Theirs { hunk } else { other };
                conflicts.push(current_lines(theirs_hunk));
            }
            _ => {}
        }
        match side {
            Side::Ours => last_ours = Some(hunk),
            Side::Theirs => last_theirs = Some(hunk),
        }
        applied.push(hunk);
    }
    if !conflicts.is_empty() {
        conflicts.dedup();
        return Err(RebaseConflict { lines: conflicts.join(", ") });
    }
    let mut out = String::with_capacity(theirs.len().max(ours.len()));
    let mut at = 0;
    for hunk in applied {
        out.push_str(&base[at..hunk.old_range.start]);
        out.push_str(&hunk.new_text);
        at = hunk.old_range.end;
    }
    out.push_str(&base[at..]);
    Ok(out)
}

fn same_edit(a: &Hunk, b: &Hunk) -> bool {
    a.old_range == b.old_range && a.new_text == b.new_text
}

/// Whether `later` (which does not start before `earlier`) collides with `earlier`, an edit
/// of the other side.
fn clash(earlier: &Hunk, later: &Hunk) -> bool {
    let earlier_end = earlier.old_start + earlier.old_lines;
    match (earlier.old_lines, later.old_lines) {
        // Two insertions at the same place: which goes first is unknowable.
        (0, 0) => earlier.old_start == later.old_start,
        // An insertion before or at the start of a block: it goes before the block.
        (0, _) => false,
        // An insertion strictly inside a replaced block; at its end it goes after the block.
        (_, 0) => later.old_start > earlier.old_start && later.old_start < earlier_end,
        // Two blocks sharing a base line.
        _ => later.old_start < earlier_end,
    }
}

/// A hunk's lines in the current text, 1-based (`3`, `3-5`).
fn current_lines(theirs: &Hunk) -> String {
    match theirs.new_lines {
        0 | 1 => format!("{}", theirs.new_start + 1),
        count => format!("{}-{}", theirs.new_start + 1, theirs.new_start + count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn separate_regions_rebase_and_overlaps_fail() {
        let base = "a\nb\nc\nd\ne\n";
        assert_eq!(rebase(base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n").unwrap(), "A\nb\nc\nd\nE\n");
        let conflict = rebase(base, "a\nB\nc\nd\ne\n", "a\nX\nc\nd\ne\n").unwrap_err();
        assert_eq!(conflict.lines, "2");
        // The same edit on both sides is applied once.
        assert_eq!(rebase(base, "a\nB\nc\nd\ne\n", "a\nB\nc\nd\nE\n").unwrap(), "a\nB\nc\nd\nE\n");
    }

    #[test]
    fn directly_adjacent_lines_rebase_cleanly() {
        let base = "a\nb\nc\nd\n";
        // The user edits line 2, the agent line 3 (and the reverse).
        assert_eq!(rebase(base, "a\nb\nC\nd\n", "a\nB\nc\nd\n").unwrap(), "a\nB\nC\nd\n");
        assert_eq!(rebase(base, "a\nB\nc\nd\n", "a\nb\nC\nd\n").unwrap(), "a\nB\nC\nd\n");
        // Adjacent blocks of several lines, and a deletion next to an edit.
        assert_eq!(rebase(base, "a\nb\nC\nD\n", "A\nB\nc\nd\n").unwrap(), "A\nB\nC\nD\n");
        assert_eq!(rebase(base, "a\nc\nd\n", "a\nb\nC\nd\n").unwrap(), "a\nC\nd\n");
        // An insertion right before or right after the other side's edited line.
        assert_eq!(rebase(base, "a\nnew\nb\nc\nd\n", "a\nB\nc\nd\n").unwrap(), "a\nnew\nB\nc\nd\n");
        assert_eq!(rebase(base, "a\nb\nnew\nc\nd\n", "a\nB\nc\nd\n").unwrap(), "a\nB\nnew\nc\nd\n");
    }

    #[test]
    fn overlapping_blocks_and_insertions_conflict() {
        let base = "a\nb\nc\nd\n";
        // Blocks sharing line 3.
        let conflict = rebase(base, "a\nb\nC\nD\n", "a\nB\nX\nd\n").unwrap_err();
        assert_eq!(conflict.lines, "2-3");
        // An insertion inside a block the other side replaced.
        let conflict = rebase(base, "a\nb\nnew\nc\nd\n", "a\nX\nY\nd\n").unwrap_err();
        assert_eq!(conflict.lines, "2-3");
        // Different insertions at the same place.
        let conflict = rebase(base, "a\nb\nours\nc\nd\n", "a\nb\ntheirs\nc\nd\n").unwrap_err();
        assert_eq!(conflict.lines, "3");
    }

    proptest! {
        /// Edits to disjoint line blocks rebase in either order to the same text with both edits.
        #[test]
        fn rebase_of_non_overlapping_edits_commutes(
            lines in prop::collection::vec("[a-z]{1,3}", 8..30),
            first in 0usize..100, second in 0usize..100,
            ours_text in "[A-Z]{1,4}", theirs_text in "[A-Z]{1,4}",
        ) {
            let n = lines.len();
            let (i, j) = (first % (n / 2 - 1), n / 2 + 1 + second % (n - n / 2 - 1));
            let base: String = lines.iter().map(|line| format!("{line}\n")).collect();
            let edit = |at: usize, text: &str| -> String {
                lines.iter().enumerate().map(|(k, line)| if k == at { format!("{text}\n") } else { format!("{line}\n") }).collect()
            };
            let ours = edit(i, &ours_text);
            let theirs = edit(j, &theirs_text);
            let mut both_lines: Vec<String> = lines.iter().map(|line| format!("{line}\n")).collect();
            both_lines[i] = format!("{ours_text}\n");
            both_lines[j] = format!("{theirs_text}\n");
            let both: String = both_lines.concat();
            prop_assert_eq!(rebase(&base, &ours, &theirs).unwrap(), both.clone());
            prop_assert_eq!(rebase(&base, &theirs, &ours).unwrap(), both);
        }

        /// Edits of any two different lines (adjacent ones included) both survive, in either
        /// order; edits of the same line to different texts conflict.
        #[test]
        fn single_line_edits_conflict_only_on_the_same_line(
            lines in prop::collection::vec("[a-z]{1,3}", 2..12),
            first in 0usize..100, second in 0usize..100,
            ours_text in "[A-Z]{1,4}", theirs_text in "[A-Z]{1,4}",
        ) {
            let n = lines.len();
            let (i, j) = (first % n, second % n);
            let edit = |edits: &[(usize, &str)]| -> String {
                lines.iter().enumerate().map(|(k, line)| {
                    match edits.iter().find(|(at, _)| *at == k) {
                        Some((_, text)) => format!("{text}\n"),
                        None => format!("{line}\n"),
                    }
                }).collect()
            };
            let base = edit(&[]);
            let ours = edit(&[(i, &ours_text)]);
            let theirs = edit(&[(j, &theirs_text)]);
            if i != j {
                let both = edit(&[(i, &ours_text), (j, &theirs_text)]);
                prop_assert_eq!(rebase(&base, &ours, &theirs).unwrap(), both.clone());
                prop_assert_eq!(rebase(&base, &theirs, &ours).unwrap(), both);
            } else if ours_text != theirs_text {
                prop_assert!(rebase(&base, &ours, &theirs).is_err());
            }
        }
    }
}
