//! Applying the hunks of one Update File operation to a file's text. Invariant: only the `-`/`+`
//! lines change the file: context lines keep the file's own spelling, new lines get the file's
//! own line break, and the BOM and the presence or absence of a final line break are kept. The
//! hunks returned are minimal and apply to the input text to give the output text.

use std::ops::Range;
use std::sync::Arc;

use similar::{Algorithm, DiffTag, capture_diff_slices};

use super::parser::{Chunk, HunkLine};
use super::seek::{Lines, Pass, matches_at, seek, seek_anywhere, similarity};
use crate::exec::SharedStrBuilder;
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
pub fn apply_chunks(
    text: &str,
    chunks: &[Chunk<'_>],
    path: &str,
) -> Result<(Arc<str>, Vec<Hunk>), ApplyError> {
    let (out, changes) = apply_chunks_deferred(text, chunks, path)?;
    let hunks = changes.hunks(text, &out);
    Ok((out, hunks))
}

/// The changed stretches of an applied update, from which its hunks are made once the patch
/// itself is no longer held (the hunks copy the new text of every change).
#[derive(Debug, Default)]
pub struct Changes {
    runs: Vec<Run>,
}

impl Changes {
    /// Minimal hunks from `text` (the input of [`apply_chunks_deferred`]) to `out` (its output).
    pub fn hunks(&self, text: &str, out: &str) -> Vec<Hunk> {
        let mut hunks = Vec::new();
        for run in &self.runs {
            run.push_hunks(&mut hunks, text, out);
        }
        hunks
    }
}

/// Like [`apply_chunks`], with the hunks left to [`Changes::hunks`].
pub fn apply_chunks_deferred(
    text: &str,
    chunks: &[Chunk<'_>],
    path: &str,
) -> Result<(Arc<str>, Changes), ApplyError> {
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(body) => (BOM, body),
        None => ("", text),
    };
    let file = FileLines::new(body);
    let line_count = file.len();
    let line_break = (0..line_count).map(|i| file.line_break(i)).find(|b| !b.is_empty()).unwrap_or("\n");
    let ends_without_break = line_count > 0 && file.line_break(line_count - 1).is_empty();

    let mut replacements: Vec<Replacement> = Vec::with_capacity(chunks.len());
    let mut cursor = 0;
    for (number, chunk) in chunks.iter().enumerate() {
        let replacement = locate(&file, chunk, cursor, path, number + 1)?;
        cursor = replacement.old.end;
        replacements.push(replacement);
    }
    if ends_without_break {
        // Lines added after a last line that had no break: that line gains one, so it joins the hunk.
        let last = line_count - 1;
        if let Some(replacement) = replacements.pop_if(|replacement| replacement.old.start == line_count) {
            match replacements.last_mut() {
                // The previous hunk already ends at the last line: the additions extend it.
                Some(previous) if previous.old.end == line_count => previous.new.extend(replacement.new),
                _ => {
                    let mut new = vec![OutLine::Kept(last)];
                    new.extend(replacement.new);
                    replacements.push(Replacement { old: last..line_count, new });
                }
            }
        }
    }

    let layout = Layout { text, bom, file: &file, line_break, ends_without_break };
    // Measured first, so the text is written straight into its shared allocation.
    let mut measure = Measure(0);
    layout.write(&replacements, &mut measure);
    let mut out = SharedStrBuilder::with_len(measure.0);
    let changes = layout.write(&replacements, &mut out);
    Ok((out.finish(), changes))
}

/// Where the output of [`Layout::write`] goes: measured, or written.
trait Output {
    fn push_str(&mut self, piece: &str);
    fn len(&self) -> usize;
}

/// Only counts the bytes.
struct Measure(usize);

impl Output for Measure {
    fn push_str(&mut self, piece: &str) {
        self.0 += piece.len();
    }

    fn len(&self) -> usize {
        self.0
    }
}

impl Output for SharedStrBuilder {
    fn push_str(&mut self, piece: &str) {
        SharedStrBuilder::push_str(self, piece);
    }

    fn len(&self) -> usize {
        SharedStrBuilder::len(self)
    }
}

/// The input of an update and what its output is made of.
struct Layout<'t, 'f> {
    text: &'t str,
    bom: &'static str,
    file: &'f FileLines<'t>,
    /// The break given to added lines: the file's first.
    line_break: &'t str,
    ends_without_break: bool,
}

impl Layout<'_, '_> {
    /// Writes the output (the input with `replacements` made) and returns its changed stretches.
    fn write(&self, replacements: &[Replacement<'_>], out: &mut impl Output) -> Changes {
        let Self { text, bom, file, line_break, ends_without_break } = *self;
        let line_count = file.len();
        out.push_str(bom);
        let offset = |line: usize| bom.len() + file.start(line);
        let mut changes = Changes::default();
        let mut old_at = 0;
        // Where the output line for old line `old_at` starts, in lines.
        let mut new_line_at = 0;
        let total = replacements.len();
        for (position, replacement) in replacements.iter().enumerate() {
            out.push_str(&text[offset(old_at)..offset(replacement.old.start)]);
            new_line_at += replacement.old.start - old_at;
            let touches_end = replacement.old.end == line_count;
            // Runs of output lines that differ from the old lines they stand for become hunks: a
            // context line written back unchanged separates them.
            let mut run = Run::new(replacement.old.start, new_line_at, out.len());
            for (index, line) in replacement.new.iter().enumerate() {
                let is_last_line = position + 1 == total && touches_end && index + 1 == replacement.new.len();
                let line_start = out.len();
                match *line {
                    OutLine::Kept(i) => {
                        out.push_str(file.line(i));
                        let own_break = file.line_break(i);
                        let unchanged = !own_break.is_empty() || is_last_line;
                        out.push_str(if unchanged { own_break } else { line_break });
                        if unchanged {
                            run.close(&mut changes, offset, i, line_start);
                            run = Run::new(i + 1, new_line_at + 1, out.len());
                        } else {
                            run.old_end = i + 1;
                        }
                    }
                    OutLine::Added(content) => {
                        out.push_str(content);
                        if !(is_last_line && ends_without_break) {
                            out.push_str(line_break);
                        }
                    }
                }
                new_line_at += 1;
            }
            run.old_end = replacement.old.end;
            run.close(&mut changes, offset, replacement.old.end, out.len());
            old_at = replacement.old.end;
        }
        out.push_str(&text[offset(old_at)..]);
        changes
    }
}

/// The lines of a text, without their breaks, as a table of where each starts: four bytes a
/// line (files are at most [`crate::workspace::MAX_FILE_BYTES`], far below 4 GiB), so a large
/// file's table is a fraction of its text.
struct FileLines<'a> {
    body: &'a str,
    /// Where each line starts, then the end of the body.
    starts: Vec<u32>,
}

impl<'a> FileLines<'a> {
    fn new(body: &'a str) -> Self {
        let bytes = body.as_bytes();
        assert!(u32::try_from(bytes.len()).is_ok(), "files are far smaller than 4 GiB");
        let offset = |at: usize| at as u32;
        let mut starts;
        if memchr::memchr(b'\r', bytes).is_none() {
            // The common case: only `\n` breaks, found with a vectorised search.
            starts = vec![0];
            starts.extend(memchr::memchr_iter(b'\n', bytes).map(|end| offset(end + 1)));
        } else {
            starts = vec![0];
            let mut at = 0;
            while let Some(found) = memchr::memchr2(b'\n', b'\r', &bytes[at..]) {
                let end = at + found;
                at =
                    if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') { end + 2 } else { end + 1 };
                starts.push(offset(at));
            }
        }
        // A last line without a break; otherwise the last start is already the end.
        if starts.last().is_some_and(|&last| (last as usize) < bytes.len()) {
            starts.push(offset(bytes.len()));
        }
        Self { body, starts }
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Byte offset in the body where line `i` starts (`i == len`: the end of the body).
    fn start(&self, i: usize) -> usize {
        self.starts[i] as usize
    }

    /// Where line `i`'s text ends and its break starts.
    fn content_end(&self, i: usize) -> usize {
        let (start, end) = (self.start(i), self.start(i + 1));
        let bytes = self.body.as_bytes();
        match bytes[start..end] {
            [.., b'\r', b'\n'] => end - 2,
            [.., b'\n' | b'\r'] => end - 1,
            _ => end,
        }
    }

    /// The line break ending line `i` (empty for a last line without one).
    fn line_break(&self, i: usize) -> &'a str {
        &self.body[self.content_end(i)..self.start(i + 1)]
    }
}

impl Lines for FileLines<'_> {
    fn count(&self) -> usize {
        self.len()
    }

    fn line(&self, i: usize) -> &str {
        &self.body[self.start(i)..self.content_end(i)]
    }

    /// Searches the text for the pattern's first line (vectorised), and checks the rest of the
    /// pattern only where that line is found as a whole line. A long first line is compared
    /// line by line instead: lengths rule out most lines at once, and preparing a searcher for
    /// a long needle costs more than the comparisons it saves.
    fn find_exact(&self, pattern: &[&str], from: usize, last: usize) -> Option<usize> {
        const MAX_NEEDLE: usize = 256;
        let first = pattern[0];
        if first.is_empty() || first.len() > MAX_NEEDLE || from > last {
            return (from..=last).find(|&i| matches_at(self, pattern, i, Pass::Exact));
        }
        let finder = memchr::memmem::Finder::new(first.as_bytes());
        let bytes = self.body.as_bytes();
        let (mut at, end) = (self.start(from), self.start(last + 1));
        while let Some(found) = finder.find(&bytes[at..end]) {
            let position = at + found;
            let line = self.starts.partition_point(|&start| start as usize <= position) - 1;
            if self.start(line) == position
                && self.content_end(line) == position + first.len()
                && matches_at(self, pattern, line, Pass::Exact)
            {
                return Some(line);
            }
            at = position + 1;
        }
        None
    }
}

/// Output lines (from line `new_start`, byte `new_bytes.start` of the output) that replace
/// old lines `old_start..old_end` (bytes `old_bytes` of the input); one or more hunks when it
/// changes anything.
#[derive(Debug)]
struct Run {
    old_start: usize,
    old_end: usize,
    new_start: usize,
    old_bytes: Range<usize>,
    new_bytes: Range<usize>,
}

/// Above this many line pairs a changed run is one hunk rather than being diffed into smaller ones.
const MAX_RUN_DIFF: usize = 1 << 20;

impl Run {
    fn new(old_start: usize, new_start: usize, new_byte: usize) -> Self {
        Self { old_start, old_end: old_start, new_start, old_bytes: 0..0, new_bytes: new_byte..new_byte }
    }

    /// Ends the run where old line `old_end` starts and the output byte `new_end`, recording it
    /// when it replaces anything. `line_offset` gives the input byte where a line starts.
    fn close(
        mut self,
        changes: &mut Changes,
        line_offset: impl Fn(usize) -> usize,
        old_end: usize,
        new_end: usize,
    ) {
        self.old_end = self.old_end.max(old_end);
        self.new_bytes.end = new_end;
        if self.old_start == self.old_end && self.new_bytes.is_empty() {
            return;
        }
        self.old_bytes = line_offset(self.old_start)..line_offset(self.old_end);
        changes.runs.push(self);
    }

    fn push_hunks(&self, hunks: &mut Vec<Hunk>, text: &str, out: &str) {
        let old_lines = split_lines(&text[self.old_bytes.clone()]);
        let new_lines = split_lines(&out[self.new_bytes.clone()]);
        // Lines the patch deleted and added back unchanged are not part of the change.
        let prefix = old_lines.iter().zip(&new_lines).take_while(|(a, b)| a == b).count();
        let suffix = old_lines[prefix..]
            .iter()
            .rev()
            .zip(new_lines[prefix..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let old_middle = &old_lines[prefix..old_lines.len() - suffix];
        let new_middle = &new_lines[prefix..new_lines.len() - suffix];
        if old_middle.is_empty() && new_middle.is_empty() {
            return;
        }
        let old_first = self.old_start + prefix;
        let new_first = self.new_start + prefix;
        let old_offset =
            self.old_bytes.start + old_lines[..prefix].iter().map(|line| line.len()).sum::<usize>();
        let hunk = |old: Range<usize>, new: Range<usize>| {
            (old_offset, old_first, new_first, old_middle, new_middle, old, new)
        };
        if old_middle.len().saturating_mul(new_middle.len()) > MAX_RUN_DIFF {
            push_hunk(hunks, hunk(0..old_middle.len(), 0..new_middle.len()));
            return;
        }
        let mut pending: Option<(Range<usize>, Range<usize>)> = None;
        for op in capture_diff_slices(Algorithm::Myers, old_middle, new_middle) {
            let (tag, old, new) = op.as_tag_tuple();
            if tag == DiffTag::Equal {
                if let Some((old, new)) = pending.take() {
                    push_hunk(hunks, hunk(old, new));
                }
                continue;
            }
            pending = Some(match pending.take() {
                Some((old_so_far, new_so_far)) => (old_so_far.start..old.end, new_so_far.start..new.end),
                None => (old, new),
            });
        }
        if let Some((old, new)) = pending {
            push_hunk(hunks, hunk(old, new));
        }
    }
}

/// Where a hunk is: the byte and line where `old_lines[0]` starts in the input, the line where
/// `new_lines[0]` starts in the output, both sides' lines, and the replaced and replacing ranges.
type HunkPlace<'a> = (usize, usize, usize, &'a [&'a str], &'a [&'a str], Range<usize>, Range<usize>);

/// One hunk replacing `old_lines[old]` by `new_lines[new]`.
fn push_hunk(hunks: &mut Vec<Hunk>, place: HunkPlace<'_>) {
    let (old_offset, old_first, new_first, old_lines, new_lines, old, new) = place;
    let old_start = old_offset + old_lines[..old.start].iter().map(|line| line.len()).sum::<usize>();
    let old_len: usize = old_lines[old.clone()].iter().map(|line| line.len()).sum();
    hunks.push(Hunk {
        index: hunks.len(),
        old_start: old_first + old.start,
        old_lines: old.len(),
        new_start: new_first + new.start,
        new_lines: new.len(),
        old_range: old_start..old_start + old_len,
        new_text: new_lines[new].concat(),
    });
}

/// Finds where `chunk` applies (at or after `cursor`) and what replaces the matched lines.
fn locate<'a>(
    contents: &FileLines<'_>,
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
fn find_hint(contents: &FileLines<'_>, hint: &str, from: usize) -> Option<usize> {
    if from >= contents.len() {
        return None;
    }
    if let Some((at, _)) = seek(contents, &[hint], from, false) {
        return Some(at);
    }
    let hint = hint.trim();
    let mut rest = from..contents.len();
    rest.clone()
        .find(|&at| contents.line(at).trim_start().starts_with(hint))
        .or_else(|| rest.find(|&at| contents.line(at).contains(hint)))
}

/// Explains which expected line is missing and where the closest candidate is.
fn not_found(
    contents: &FileLines<'_>,
    chunk: &Chunk<'_>,
    from: usize,
    path: &str,
    number: usize,
) -> ApplyError {
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
            .zip((at..contents.len()).map(|i| contents.line(i)))
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
            let found = (candidate < contents.len())
                .then(|| contents.line(candidate))
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

fn closest_line_note(contents: &FileLines<'_>, wanted: &str) -> String {
    const MAX_CANDIDATES: usize = 20_000;
    let wanted_len = wanted.trim().len();
    let best = (0..contents.len())
        .map(|at| (at, contents.line(at)))
        .filter(|(_, line)| {
            let len = line.trim().len();
            len * 2 >= wanted_len && len <= wanted_len * 2 + 8
        })
        .take(MAX_CANDIDATES)
        .map(|(at, line)| (at, similarity(line, wanted)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((at, score)) if score >= 0.5 => {
            format!("the closest line is line {}: `{}`", at + 1, contents.line(at))
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
        assert_eq!(apply_hunks(text, &hunks), *out, "hunks must reproduce the output");
        Ok(out.to_string())
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

    proptest::proptest! {
        /// A patch made of random edits (replace, delete, insert) with unique context applies
        /// to give the edited text, and its hunks are exact: each changes something, and they
        /// reproduce the output from the input.
        #[test]
        fn random_edits_apply_with_exact_hunks(
            count in 2usize..40,
            edits in proptest::collection::vec((0usize..1000, 0u8..3, "[a-z ]{0,6}"), 1..6),
            crlf in proptest::bool::ANY,
            final_break in proptest::bool::ANY,
        ) {
            let break_ = if crlf { "\r\n" } else { "\n" };
            let lines: Vec<String> = (0..count).map(|i| format!("line {i}")).collect();
            let mut edits: Vec<(usize, u8, String)> =
                edits.into_iter().map(|(at, kind, text)| (at % count, kind, text)).collect();
            edits.sort_by_key(|edit| edit.0);
            edits.dedup_by_key(|edit| edit.0);
            let mut text = lines.join(break_);
            if final_break {
                text.push_str(break_);
            }
            let mut expected: Vec<String> = Vec::new();
            let mut body = String::new();
            for (i, line) in lines.iter().enumerate() {
                match edits.iter().find(|edit| edit.0 == i) {
                    None => expected.push(line.clone()),
                    Some((_, kind, new)) => {
                        body.push_str("@@\n");
                        match kind {
                            0 => {
                                body.push_str(&format!("-{line}\n+{new}\n"));
                                expected.push(new.clone());
                            }
                            1 => body.push_str(&format!("-{line}\n")),
                            _ => {
                                body.push_str(&format!(" {line}\n+{new}\n"));
                                expected.push(line.clone());
                                expected.push(new.clone());
                            }
                        }
                    }
                }
            }
            let (_, hunks) = apply_chunks_checked(&text, &body);
            let out = apply(&text, &body).unwrap();
            // The final break is kept; deleting a last line that had none leaves the break of
            // the line before it.
            let last_deleted = edits.last().is_some_and(|edit| edit.0 == count - 1 && edit.1 == 1);
            let mut want = expected.join(break_);
            if !expected.is_empty() && (final_break || last_deleted) {
                want.push_str(break_);
            }
            proptest::prop_assert_eq!(&out, &want);
            for hunk in &hunks {
                proptest::prop_assert!(text[hunk.old_range.clone()] != hunk.new_text, "empty hunk {hunk:?}");
            }
        }
    }

    proptest::proptest! {
        /// The line table gives the lines (without breaks) and breaks `split_lines` finds, and
        /// its vectorised exact search finds what trying every line finds.
        #[test]
        fn the_line_table_and_its_exact_search_agree_with_the_plain_ways(
            pieces in proptest::collection::vec(proptest::sample::select(
                vec!["a", "ab", "b", "", " a", "\n", "\r\n", "\r"]), 0..40),
            pattern in proptest::collection::vec(proptest::sample::select(vec!["a", "ab", "b", "", " a"]), 1..4),
            from in 0usize..20,
        ) {
            let text = pieces.concat();
            let file = FileLines::new(&text);
            let plain = crate::workspace::split_lines(&text);
            proptest::prop_assert_eq!(file.len(), plain.len());
            for (i, line) in plain.iter().enumerate() {
                let content = line.trim_end_matches(['\n', '\r']);
                proptest::prop_assert_eq!(file.line(i), content);
                proptest::prop_assert_eq!(file.line_break(i), &line[content.len()..]);
                proptest::prop_assert_eq!(file.start(i) + line.len(), file.start(i + 1));
            }
            if pattern.len() <= file.len() {
                let last = file.len() - pattern.len();
                let plain = (from..=last).find(|&i| matches_at(&file, &pattern, i, Pass::Exact));
                proptest::prop_assert_eq!(file.find_exact(&pattern, from, last), plain);
            }
        }
    }

    fn apply_chunks_checked(text: &str, body: &str) -> (Arc<str>, Vec<Hunk>) {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let ops = parse_patch(&patch).unwrap();
        let PatchOp::Update { chunks, .. } = &ops[0] else { panic!() };
        apply_chunks(text, chunks, "f").unwrap()
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
