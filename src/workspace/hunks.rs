//! Minimal line hunks between two texts, applying a subset of them, and unified diffs for display.
//! Invariant: the hunks of a change are sorted, non-overlapping, indexed 0.. in order, and
//! applying all of them to the base text yields the new text byte for byte.

use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::udiff::UnifiedHunkHeader;
use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices_deadline, group_diff_ops};

/// How long a diff may search for the minimal edit before settling for a coarser one.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// One contiguous replacement of base lines by new lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Stable index within its file change (what a reviewer accepts or rejects).
    pub index: usize,
    /// First replaced base line (0-based) and the number of base lines replaced.
    pub old_start: usize,
    pub old_lines: usize,
    /// First line of the replacement in the fully changed text (0-based) and its line count.
    pub new_start: usize,
    pub new_lines: usize,
    /// The replaced bytes of the base text.
    pub old_range: Range<usize>,
    /// The replacement text.
    pub new_text: String,
}

/// Splits `text` into lines that keep their terminator (`\n`, `\r\n` or a lone `\r`); the last
/// line has none when the text does not end with a line break. Empty text has no lines.
pub fn split_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    if !bytes.contains(&b'\r') {
        // The common case, with a vectorised search for the breaks.
        return text.split_inclusive('\n').collect();
    }
    let mut lines = Vec::with_capacity(bytes.len() / 32 + 1);
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' => {
                let end = if bytes.get(i + 1) == Some(&b'\n') { i + 2 } else { i + 1 };
                lines.push(&text[start..end]);
                start = end;
                i = end - 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < bytes.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Minimal hunks turning `old` into `new` (common leading and trailing lines are skipped before
/// diffing, and the diff settles for a coarser answer after `deadline`).
pub fn compute_hunks(old: &str, new: &str, deadline: Option<Instant>) -> Vec<Hunk> {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let prefix = old_lines.iter().zip(&new_lines).take_while(|(a, b)| a == b).count();
    let max_suffix = old_lines.len().min(new_lines.len()) - prefix;
    let suffix = old_lines
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let old_middle = &old_lines[prefix..old_lines.len() - suffix];
    let new_middle = &new_lines[prefix..new_lines.len() - suffix];
    let ops = capture_diff_slices_deadline(Algorithm::Myers, old_middle, new_middle, deadline);

    let old_offsets = line_offsets(&old_lines);
    let new_offsets = line_offsets(&new_lines);
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut pending: Option<(Range<usize>, Range<usize>)> = None;
    let flush = |pending: &mut Option<(Range<usize>, Range<usize>)>, hunks: &mut Vec<Hunk>| {
        if let Some((old_range, new_range)) = pending.take() {
            hunks.push(Hunk {
                index: hunks.len(),
                old_start: old_range.start,
                old_lines: old_range.len(),
                new_start: new_range.start,
                new_lines: new_range.len(),
                old_range: old_offsets[old_range.start]..old_offsets[old_range.end],
                new_text: new[new_offsets[new_range.start]..new_offsets[new_range.end]].to_string(),
            });
        }
    };
    for op in &ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let old_range = old_range.start + prefix..old_range.end + prefix;
        let new_range = new_range.start + prefix..new_range.end + prefix;
        if tag == DiffTag::Equal {
            flush(&mut pending, &mut hunks);
            continue;
        }
        pending = Some(match pending.take() {
            Some((old, new)) => (old.start..old_range.end, new.start..new_range.end),
            None => (old_range, new_range),
        });
    }
    flush(&mut pending, &mut hunks);
    hunks
}

/// A hunk replacing the whole of `old` with `new` (for creates and deletes).
pub fn whole_text_hunk(old: &str, new: &str) -> Hunk {
    Hunk {
        index: 0,
        old_start: 0,
        old_lines: split_lines(old).len(),
        new_start: 0,
        new_lines: split_lines(new).len(),
        old_range: 0..old.len(),
        new_text: new.to_string(),
    }
}

/// `base` with the given hunks applied (they must be sorted and non-overlapping, as the hunks
/// of one file change are).
pub fn apply_hunks<'a>(base: &str, hunks: impl IntoIterator<Item = &'a Hunk>) -> String {
    let mut out = String::with_capacity(base.len());
    let mut at = 0;
    for hunk in hunks {
        out.push_str(&base[at..hunk.old_range.start]);
        out.push_str(&hunk.new_text);
        at = hunk.old_range.end;
    }
    out.push_str(&base[at..]);
    out
}

/// Checks the invariant of a file's hunks against its base text: in range, on char boundaries,
/// sorted, non-overlapping, indexed in order.
pub fn check_hunks(base: &str, hunks: &[Hunk]) -> Result<(), String> {
    let mut previous_end = 0;
    for (position, hunk) in hunks.iter().enumerate() {
        let range = &hunk.old_range;
        if hunk.index != position {
            return Err(format!("hunk {} is at position {position}", hunk.index));
        }
        if range.start > range.end || range.end > base.len() {
            return Err(format!("hunk {} is out of range", hunk.index));
        }
        if !base.is_char_boundary(range.start) || !base.is_char_boundary(range.end) {
            return Err(format!("hunk {} splits a character", hunk.index));
        }
        if range.start < previous_end {
            return Err(format!("hunk {} overlaps the hunk before it", hunk.index));
        }
        previous_end = range.end;
    }
    Ok(())
}

/// A unified diff (3 lines of context) of `old` → `new` given the hunks between them, with
/// `--- a/<old_label>` / `+++ b/<new_label>` headers. Empty when there are no hunks.
pub fn unified_diff(old_label: &str, new_label: &str, old: &str, new: &str, hunks: &[Hunk]) -> String {
    if hunks.is_empty() {
        return String::new();
    }
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let mut ops = Vec::with_capacity(hunks.len() * 2 + 1);
    let (mut old_at, mut new_at) = (0, 0);
    for hunk in hunks {
        if hunk.old_start > old_at {
            ops.push(DiffOp::Equal { old_index: old_at, new_index: new_at, len: hunk.old_start - old_at });
        }
        ops.push(match (hunk.old_lines, hunk.new_lines) {
            (0, new_len) => DiffOp::Insert { old_index: hunk.old_start, new_index: hunk.new_start, new_len },
            (old_len, 0) => DiffOp::Delete { old_index: hunk.old_start, old_len, new_index: hunk.new_start },
            (old_len, new_len) => {
                DiffOp::Replace { old_index: hunk.old_start, old_len, new_index: hunk.new_start, new_len }
            }
        });
        old_at = hunk.old_start + hunk.old_lines;
        new_at = hunk.new_start + hunk.new_lines;
    }
    if old_lines.len() > old_at {
        ops.push(DiffOp::Equal { old_index: old_at, new_index: new_at, len: old_lines.len() - old_at });
    }
    let mut out = format!("--- a/{old_label}\n+++ b/{new_label}\n");
    for group in group_diff_ops(ops, 3) {
        let _ = writeln!(out, "{}", UnifiedHunkHeader::new(&group));
        for op in &group {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => old_range.for_each(|i| push_diff_line(&mut out, ' ', old_lines[i])),
                _ => {
                    old_range.for_each(|i| push_diff_line(&mut out, '-', old_lines[i]));
                    new_range.for_each(|i| push_diff_line(&mut out, '+', new_lines[i]));
                }
            }
        }
    }
    out
}

fn push_diff_line(out: &mut String, marker: char, line: &str) {
    out.push(marker);
    let content = line.trim_end_matches(['\n', '\r']);
    out.push_str(content);
    out.push('\n');
    if content.len() == line.len() {
        out.push_str("\\ No newline at end of file\n");
    }
}

/// Byte offset of each line start, plus the total length at the end.
fn line_offsets(lines: &[&str]) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut at = 0;
    offsets.push(0);
    for line in lines {
        at += line.len();
        offsets.push(at);
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_keep_their_terminators() {
        assert_eq!(split_lines("a\nb\r\nc\rd"), vec!["a\n", "b\r\n", "c\r", "d"]);
        assert!(split_lines("").is_empty());
    }

    #[test]
    fn hunks_are_minimal_and_indexed() {
        let old = "a\nb\nc\nd\ne\nf\n";
        let new = "a\nB\nc\nd\ne\nf\ng\n";
        let hunks = compute_hunks(old, new, None);
        assert_eq!(
            hunks,
            vec![
                Hunk {
                    index: 0,
                    old_start: 1,
                    old_lines: 1,
                    new_start: 1,
                    new_lines: 1,
                    old_range: 2..4,
                    new_text: "B\n".into()
                },
                Hunk {
                    index: 1,
                    old_start: 6,
                    old_lines: 0,
                    new_start: 6,
                    new_lines: 1,
                    old_range: 12..12,
                    new_text: "g\n".into()
                },
            ]
        );
        assert_eq!(apply_hunks(old, &hunks[..1]), "a\nB\nc\nd\ne\nf\n");
        assert_eq!(
            unified_diff("x", "x", old, new, &hunks),
            "--- a/x\n+++ b/x\n@@ -1,6 +1,7 @@\n a\n-b\n+B\n c\n d\n e\n f\n+g\n"
        );
    }

    #[test]
    fn diff_marks_missing_final_newline() {
        let hunks = compute_hunks("a\nb", "a\nc", None);
        assert_eq!(
            unified_diff("f", "f", "a\nb", "a\nc", &hunks),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!["a\n", "b\n", "c\r\n", "d", "\n", "e\r", "ü\n"]),
            0..30,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn applying_all_hunks_of_a_diff_yields_the_new_text(old in text(), new in text()) {
            let hunks = compute_hunks(&old, &new, None);
            prop_assert!(check_hunks(&old, &hunks).is_ok());
            prop_assert_eq!(apply_hunks(&old, &hunks), new);
        }
    }
}
