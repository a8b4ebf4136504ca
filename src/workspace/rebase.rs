//! Three-way rebase of the agent's change onto text that changed since the agent read it.
//! Invariant: a rebase either keeps every change of both sides (when they touch different
//! lines) or fails; it never drops text the agent did not see.

use similar::TextMerge;

/// The agent's change and the newer text both changed the same lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the file changed since it was read, at lines {lines} (of its current text), where the edit also applies"
)]
pub struct RebaseConflict {
    /// 1-based line ranges of the current text that conflict, e.g. `3-5, 9`.
    pub lines: String,
}

/// Replays `base → ours` on top of `base → theirs` (`theirs` is the current text).
pub fn rebase(base: &str, ours: &str, theirs: &str) -> Result<String, RebaseConflict> {
    if ours == base || ours == theirs {
        return Ok(theirs.to_string());
    }
    if theirs == base {
        return Ok(ours.to_string());
    }
    let merge = TextMerge::from_lines(base, ours, theirs);
    if merge.is_conflicted() {
        let lines = merge
            .conflicts()
            .map(|region| {
                let range = region.theirs_range();
                match range.len() {
                    0 => format!("{}", range.start + 1),
                    1 => format!("{}", range.start + 1),
                    _ => format!("{}-{}", range.start + 1, range.end),
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        return Err(RebaseConflict { lines });
    }
    Ok(merge.to_string())
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
    }
}
