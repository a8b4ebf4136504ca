//! Applying the hunks of one Update File operation to a file's text. Invariant: only the `-`/`+`
//! lines change the file: context lines keep the file's own spelling, new lines get the file's
//! own line break, and the BOM and the presence or absence of a final line break are kept. The
//! hunks returned are minimal and apply to the input text to give the output text.

use similar::{Algorithm, DiffTag, capture_diff_slices};

use super::parser::{Chunk, HunkLine};
use super::seek::{Pass, seek, seek_anywhere, similarity};
use crate::workspace::{Hunk, split_lines};

const BOM: &str = "\u{feff}";

/// Why a hunk could not be applied; the message quotes the hunk and says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApplyError(pub String);

/// A file line in the output: kept from the input (by index) or added by the patch.
#[derive(Debug, Clone, Copy)]
enum OutLine<'a> {
    Kept(usize),
    Added(&'a str),
}

struct Replacement<'a> {
    old: std::ops::Range<usize>,
    new: Vec<OutLine<'a>>,
}

/// The new text of `text` after `chunks`, and the minimal hunks between the two.
pub fn apply_chunks(text: &str, chunks: &[Chunk<'_>], path: &str) -> Result<(String, Vec<Hunk>), ApplyError> {
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(body) => (BOM, body),
        None => ("", text),
    };
    let lines = split_lines(body);
    let contents: Vec<&str> = lines.iter().map(|line| strip_break(line)).collect();
    let line_break =
        lines.iter().map(|line| &line[strip_break(line).len()..]).find(|b| !b.is_empty()).unwrap_or("\n");
    let ends_without_break = lines.last().is_some_and(|line| strip_break(line).len() == line.len());

    let mut replacements: Vec<Replacement> = Vec::with_capacity(chunks.len());
    let mut cursor = 0;
    for (number, chunk) in chunks.iter().enumerate() {
        let replacement = locate(&contents, chunk, cursor, path, number + 1)?;
        cursor = replacement.old.end;
        replacements.push(replacement);
    }
    if ends_without_break && !lines.is_empty() {
        // Lines added after a last line that had no break: that line gains one, so it joins the hunk.
        let last = lines.len() - 1;
        if let Some(replacement) = replacements.pop_if(|replacement| replacement.old.start == lines.len()) {
            match replacements.last_mut() {
                // The previous hunk already ends at the last line: the additions extend it.
                Some(previous) if previous.old.end == lines.len() => previous.new.extend(replacement.new),
                _ => {
                    let mut new = vec![OutLine::Kept(last)];
                    new.extend(replacement.new);
                    replacements.push(Replacement { old: last..lines.len(), new });
                }
            }
        }
    }

    let mut out = String::with_capacity(text.len() + text.len() / 8);
    out.push_str(bom);
    let offsets = line_offsets(&lines, bom.len());
    let mut hunks = Vec::new();
    let mut old_at = 0;
    let mut new_line_at = 0;
    let total = replacements.len();
    for (position, replacement) in replacements.into_iter().enumerate() {
        out.push_str(&text[offsets[old_at]..offsets[replacement.old.start]]);
        new_line_at += replacement.old.start - old_at;
        let region_start = out.len();
        let touches_end = replacement.old.end == lines.len();
        for (index, line) in replacement.new.iter().enumerate() {
            let is_last_line = position + 1 == total && touches_end && index + 1 == replacement.new.len();
            match *line {
                OutLine::Kept(i) => {
                    out.push_str(contents[i]);
                    let own_break = &lines[i][contents[i].len()..];
                    out.push_str(if own_break.is_empty() && !is_last_line { line_break } else { own_break });
                }
                OutLine::Added(content) => {
                    out.push_str(content);
                    if !(is_last_line && ends_without_break) {
                        out.push_str(line_break);
                    }
                }
            }
        }
        let region_text = &out[region_start..];
        let old_lines = &lines[replacement.old.clone()];
        let new_lines = split_lines(region_text);
        push_region_hunks(&mut hunks, &offsets, replacement.old.start, new_line_at, old_lines, &new_lines);
        new_line_at += new_lines.len();
        old_at = replacement.old.end;
    }
    out.push_str(&text[offsets[old_at]..]);
    Ok((out, hunks))
}

/// Finds where `chunk` applies (at or after `cursor`) and what replaces the matched lines.
fn locate<'a>(
    contents: &[&str],
    chunk: &Chunk<'a>,
    cursor: usize,
    path: &str,
    number: usize,
) -> Result<Replacement<'a>, ApplyError> {
    let mut start = cursor;
    let mut hint_line = None;
    if let Some(hint) = chunk.hint {
        let found = find_hint(contents, hint, cursor).ok_or_else(|| {
            let earlier = find_hint(contents, hint, 0).filter(|&line| line < cursor);
            let why = match earlier {
                Some(line) => format!(
                    "it is only at line {}, before the previous hunk; hunks must be in file order and must not overlap",
                    line + 1
                ),
                None => closest_line_note(contents, hint),
            };
            failure(chunk, path, number, &format!("The `@@ {hint}` line could not be found in {path}: {why}."))
        })?;
        hint_line = Some(found);
        start = found + 1;
    }
    let mut lines: &[HunkLine<'a>] = &chunk.lines;
    loop {
        let pattern: Vec<&str> = old_lines(lines);
        if pattern.is_empty() {
            // Pure addition: after the hint line, else at the end of the file.
            let at = hint_line.map_or(contents.len(), |line| line + 1);
            return Ok(Replacement { old: at..at, new: lines.iter().filter_map(added).collect() });
        }
        let found = seek(contents, &pattern, start, chunk.end_of_file)
            .or_else(|| hint_line.and_then(|line| seek(contents, &pattern, line, chunk.end_of_file)));
        if let Some((at, _pass)) = found {
            if at < cursor {
                return Err(failure(
                    chunk,
                    path,
                    number,
                    &format!(
                        "This hunk matches lines {}-{} of {path}, which overlap the previous hunk; \
                         merge the two hunks into one or fix their context.",
                        at + 1,
                        at + pattern.len()
                    ),
                ));
            }
            let mut new = Vec::with_capacity(lines.len());
            let mut file_line = at;
            for line in lines {
                match *line {
                    HunkLine::Context(_) => {
                        new.push(OutLine::Kept(file_line));
                        file_line += 1;
                    }
                    HunkLine::Delete(_) => file_line += 1,
                    HunkLine::Add(content) => new.push(OutLine::Added(content)),
                }
            }
            return Ok(Replacement { old: at..file_line, new });
        }
        // A model often ends a hunk with a blank context line the file does not have there.
        match lines.last() {
            Some(HunkLine::Context(text)) if text.trim().is_empty() => lines = &lines[..lines.len() - 1],
            _ => break,
        }
    }
    Err(not_found(contents, chunk, cursor.max(start), path, number))
}

fn added<'a>(line: &HunkLine<'a>) -> Option<OutLine<'a>> {
    match *line {
        HunkLine::Add(content) => Some(OutLine::Added(content)),
        _ => None,
    }
}

fn old_lines<'a>(lines: &[HunkLine<'a>]) -> Vec<&'a str> {
    lines
        .iter()
        .filter_map(|line| match *line {
            HunkLine::Context(text) | HunkLine::Delete(text) => Some(text),
            HunkLine::Add(_) => None,
        })
        .collect()
}

/// The `@@` hint as a whole line, else as the start of a line, else inside a line.
fn find_hint(contents: &[&str], hint: &str, from: usize) -> Option<usize> {
    if from >= contents.len() {
        return None;
    }
    if let Some((at, _)) = seek(contents, &[hint], from, false) {
        return Some(at);
    }
    let hint = hint.trim();
    let rest = &contents[from..];
    rest.iter()
        .position(|line| line.trim_start().starts_with(hint))
        .or_else(|| rest.iter().position(|line| line.contains(hint)))
        .map(|at| at + from)
}

/// Explains which expected line is missing and where the closest candidate is.
fn not_found(contents: &[&str], chunk: &Chunk<'_>, from: usize, path: &str, number: usize) -> ApplyError {
    let pattern = chunk.old_lines();
    if let Some(at) = seek_anywhere(contents, &pattern)
        && at < from
    {
        return failure(
            chunk,
            path,
            number,
            &format!(
                "These lines are at line {} of {path}, before the previous hunk; hunks must be in file order \
                 and must not overlap.",
                at + 1
            ),
        );
    }
    // The longest prefix of the hunk that matches somewhere at or after `from`.
    let (mut best_at, mut best_len) = (None, 0);
    for at in from..contents.len() {
        let len = pattern
            .iter()
            .zip(&contents[at..])
            .take_while(|(expected, line)| Pass::Normalized.lines_equal(line, expected))
            .count();
        if len > best_len {
            (best_at, best_len) = (Some(at), len);
        }
    }
    let missing = pattern[best_len.min(pattern.len() - 1)];
    let detail = match best_at {
        Some(at) if best_len < pattern.len() => {
            let candidate = at + best_len;
            let found = contents
                .get(candidate)
                .map_or_else(|| "the end of the file".to_string(), |line| format!("`{line}`"));
            format!(
                "The first {best_len} line(s) of the hunk match at line {} of {path}, but the expected line `{missing}` \
                 is not the next one: line {} is {found}.",
                at + 1,
                candidate + 1
            )
        }
        _ => format!(
            "The line `{missing}` could not be found in {path}: {}.",
            closest_line_note(contents, missing)
        ),
    };
    failure(chunk, path, number, &detail)
}

fn closest_line_note(contents: &[&str], wanted: &str) -> String {
    const MAX_CANDIDATES: usize = 20_000;
    let wanted_len = wanted.trim().len();
    let best = contents
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            let len = line.trim().len();
            len * 2 >= wanted_len && len <= wanted_len * 2 + 8
        })
        .take(MAX_CANDIDATES)
        .map(|(at, line)| (at, similarity(line, wanted)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((at, score)) if score >= 0.5 => {
            format!("the closest line is line {}: `{}`", at + 1, contents[at])
        }
        _ => "no similar line exists; read the file again to see its current text".to_string(),
    }
}

fn failure(chunk: &Chunk<'_>, path: &str, number: usize, detail: &str) -> ApplyError {
    let mut quoted = String::new();
    quoted.push_str(&match chunk.hint {
        Some(hint) => format!("@@ {hint}\n"),
        None => "@@\n".to_string(),
    });
    for line in &chunk.lines {
        let (marker, text) = match *line {
            HunkLine::Context(text) => (' ', text),
            HunkLine::Delete(text) => ('-', text),
            HunkLine::Add(text) => ('+', text),
        };
        quoted.push(marker);
        quoted.push_str(text);
        quoted.push('\n');
    }
    if chunk.end_of_file {
        quoted.push_str("*** End of File\n");
    }
    ApplyError(format!(
        "Hunk {number} of {path} (patch line {}) does not apply:\n{quoted}{detail}",
        chunk.patch_line
    ))
}

fn strip_break(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

fn line_offsets(lines: &[&str], base: usize) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut at = base;
    offsets.push(at);
    for line in lines {
        at += line.len();
        offsets.push(at);
    }
    offsets
}

/// Minimal hunks inside one replaced region (its old lines start at `old_first`, its new lines
/// at `new_first`).
fn push_region_hunks(
    hunks: &mut Vec<Hunk>,
    offsets: &[usize],
    old_first: usize,
    new_first: usize,
    old_lines: &[&str],
    new_lines: &[&str],
) {
    let mut new_offsets = Vec::with_capacity(new_lines.len() + 1);
    let mut at = 0;
    new_offsets.push(0);
    for line in new_lines {
        at += line.len();
        new_offsets.push(at);
    }
    let mut pending: Option<(std::ops::Range<usize>, std::ops::Range<usize>)> = None;
    let mut flush = |pending: &mut Option<(std::ops::Range<usize>, std::ops::Range<usize>)>| {
        if let Some((old, new)) = pending.take() {
            let new_text: String = new_lines[new.clone()].concat();
            hunks.push(Hunk {
                index: hunks.len(),
                old_start: old_first + old.start,
                old_lines: old.len(),
                new_start: new_first + new.start,
                new_lines: new.len(),
                old_range: offsets[old_first + old.start]..offsets[old_first + old.end],
                new_text,
            });
        }
    };
    for op in capture_diff_slices(Algorithm::Myers, old_lines, new_lines) {
        let (tag, old, new) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            flush(&mut pending);
            continue;
        }
        pending = Some(match pending.take() {
            Some((old_so_far, new_so_far)) => (old_so_far.start..old.end, new_so_far.start..new.end),
            None => (old, new),
        });
    }
    flush(&mut pending);
}

#[cfg(test)]
mod tests {
    use super::super::parser::{PatchOp, parse_patch};
    use super::*;
    use crate::workspace::{apply_hunks, check_hunks};

    fn apply(text: &str, body: &str) -> Result<String, ApplyError> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let ops = parse_patch(&patch).unwrap();
        let PatchOp::Update { chunks, .. } = &ops[0] else { panic!() };
        let (out, hunks) = apply_chunks(text, chunks, "f")?;
        check_hunks(text, &hunks).unwrap();
        assert_eq!(apply_hunks(text, &hunks), out, "hunks must reproduce the output");
        Ok(out)
    }

    #[test]
    fn keeps_crlf_bom_spelling_and_missing_final_break() {
        let text = "\u{feff}fn a() {\r\n    x \u{2014} 1;\r\n}\r\n";
        let out = apply(text, "@@ fn a() {\n     x - 1;\n+    y;\n }\n").unwrap();
        assert_eq!(out, "\u{feff}fn a() {\r\n    x \u{2014} 1;\r\n    y;\r\n}\r\n");
        assert_eq!(apply("a\nb", "@@\n a\n-b\n+c\n").unwrap(), "a\nc");
        assert_eq!(apply("a\nb", "@@\n a\n b\n+c\n").unwrap(), "a\nb\nc");
        assert_eq!(apply("a\nb", "@@\n+c\n").unwrap(), "a\nb\nc");
        assert_eq!(apply("", "@@\n+c\n").unwrap(), "c\n");
    }

    #[test]
    fn end_of_file_anchors_and_overlaps_are_refused() {
        let text = "x\ny\nx\ny\n";
        assert_eq!(apply(text, "@@\n x\n-y\n+Y\n*** End of File\n").unwrap(), "x\ny\nx\nY\n");
        let overlap = apply("a\nb\nc\n", "@@\n a\n-b\n+B\n c\n@@\n-c\n+C\n*** End of File\n").unwrap_err();
        assert!(overlap.0.contains("overlap"), "{overlap}");
        let order = apply("a\nb\nc\n", "@@\n-c\n+C\n@@\n-a\n+A\n").unwrap_err();
        assert!(order.0.contains("file order"), "{order}");
    }

    #[test]
    fn failures_quote_the_hunk_and_point_at_the_closest_line() {
        let error = apply(
            "fn main() {\n    let value = 1;\n}\n",
            "@@\n fn main() {\n-    let valeu = 1;\n+    let v = 2;\n",
        )
        .unwrap_err();
        let message = error.0;
        assert!(message.contains("Hunk 1 of f (patch line 3)"), "{message}");
        assert!(message.contains("-    let valeu = 1;"), "{message}");
        assert!(message.contains("line 2 is `    let value = 1;`"), "{message}");
        let error = apply("a\n", "@@\n-completely different\n").unwrap_err();
        assert!(error.0.contains("no similar line"), "{}", error.0);
    }

    #[test]
    fn hint_locates_the_hunk_and_trailing_blank_context_is_forgiven() {
        let text = "def a():\n    return 1\n\ndef b():\n    return 1\n";
        assert_eq!(
            apply(text, "@@ def b():\n-    return 1\n+    return 2\n\n").unwrap(),
            "def a():\n    return 1\n\ndef b():\n    return 2\n"
        );
        assert_eq!(
            apply(text, "@@ def b\n+    pass\n").unwrap(),
            "def a():\n    return 1\n\ndef b():\n    pass\n    return 1\n"
        );
    }
}
