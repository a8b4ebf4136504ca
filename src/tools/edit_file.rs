//! The `edit_file` tool (Anthropic profile, Claude Code semantics): replace an exact, unique
//! string (or every occurrence with `replace_all`) and propose the result as a change set. Also
//! holds the string-replacement engine the gemini-style `replace` tool shares.
//! Invariant: the edit applies only where the model's `old_string` occurs exactly (modulo the
//! file's own line breaks); anything else is an error naming the closest region, never a guess.

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::apply_patch::seek::{Pass, normalize_char, seek, similarity};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::workspace::{ChangeOutcome, ChangeSet, FileChange, Snapshot, split_lines};

const DESCRIPTION: &str = "Performs exact string replacements in files.

- `old_string` must match the file's text exactly, including indentation, and must be unique in \
the file; include more surrounding lines to make it unique, or set `replace_all` to change every \
occurrence (e.g. to rename a variable).
- `new_string` replaces it and must differ from `old_string`.
- With an empty `old_string` and a file that does not exist, the file is created with `new_string`.
- Line breaks follow the file's own style.";

/// Claude-Code-style exact string replacement.
pub struct EditFileTool {
    /// Read-before-edit guard: the file must have been read in this session and be unchanged.
    require_read: bool,
}

impl EditFileTool {
    pub fn new(require_read: bool) -> Self {
        Self { require_read }
    }
}

#[async_trait]
impl Tool for EditFileTool {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": { "type": "string", "description": "Path of the file to modify (absolute, or relative to the working directory)." },
                "old_string": { "type": "string", "description": "The exact text to replace." },
                "new_string": { "type": "string", "description": "The text to replace it with (must differ from old_string)." },
                "replace_all": { "type": "boolean", "description": "Replace every occurrence of old_string (default false).", "default": false }
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = StringEdit::from_args(&args)?;
        let replace_all = args.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
        let expected = if replace_all { Expected::AtLeastOne } else { Expected::Unique };
        let edited = propose_string_edit(ctx, &request, expected, self.require_read).await?;
        let content = match edited.created {
            true => format!("Created {} with the given content.", request.file_path),
            false => format!(
                "The file {} has been updated ({} replacement{}).",
                request.file_path,
                edited.replacements,
                if edited.replacements == 1 { "" } else { "s" }
            ),
        };
        Ok(ToolOutput::text(content + &edited.outcome.notes()))
    }
}

/// The arguments both string-replacement tools share.
pub(crate) struct StringEdit {
    pub file_path: String,
    pub old_string: String,
    pub new_string: String,
}

impl StringEdit {
    pub(crate) fn from_args(args: &Value) -> Result<Self, ToolError> {
        let field = |name: &str| -> Result<String, ToolError> {
            args.get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ToolError::new(format!("missing `{name}`: it must be a string")))
        };
        Ok(Self {
            file_path: field("file_path")?,
            old_string: field("old_string")?,
            new_string: field("new_string")?,
        })
    }
}

/// How many occurrences of `old_string` the caller requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    Unique,
    AtLeastOne,
    Exactly(usize),
}

pub(crate) struct EditResult {
    pub replacements: usize,
    pub created: bool,
    pub outcome: ChangeOutcome,
}

/// Resolves, reads, replaces and proposes; shared by `edit_file` and `replace`.
pub(crate) async fn propose_string_edit(
    ctx: &ToolContext,
    request: &StringEdit,
    expected: Expected,
    require_read: bool,
) -> Result<EditResult, ToolError> {
    if request.old_string == request.new_string {
        return Err(ToolError::new(
            "No changes to make: old_string and new_string are exactly the same. Give the new text in new_string.",
        ));
    }
    let path: PathBuf = ctx.resolve(&request.file_path)?;
    let snapshot = ctx
        .workspace
        .read_if_exists(&*ctx.env, &path)
        .await
        .map_err(|error| ToolError::new(error.to_string()))?;
    let shown = crate::workspace::shown_path(std::path::Path::new(&request.file_path), &[&ctx.cwd]);
    let display = shown.as_str();
    let (change, replacements, created) = match snapshot {
        None if request.old_string.is_empty() => {
            (FileChange::create(path.clone(), display, request.new_string.as_str()), 0, true)
        }
        None => {
            return Err(ToolError::new(format!(
                "{display}: no such file. Check the path; to create a file, use an empty old_string."
            )));
        }
        Some(snapshot) => {
            if require_read {
                ctx.reads.check(&snapshot).map_err(|error| ToolError::new(error.to_string()))?;
            }
            if request.old_string.is_empty() {
                if !snapshot.text.is_empty() {
                    return Err(ToolError::new(format!(
                        "{display} already exists and is not empty; an empty old_string only creates files. \
                         Give the exact text to replace."
                    )));
                }
                let change = FileChange::modify(snapshot, display, request.new_string.as_str());
                (change, 1, false)
            } else {
                let (text, count) = replace_in_text(&snapshot, display, request, expected)?;
                (FileChange::modify(snapshot, display, text), count, false)
            }
        }
    };
    let change = ChangeSet::new(vec![change]).map_err(|error| ToolError::new(error.to_string()))?;
    let outcome = ctx.editor.propose(change).await.map_err(|error| ToolError::new(error.to_string()))?;
    if let Some(refusal) = outcome.refusal_message() {
        return Err(ToolError::new(refusal));
    }
    ctx.reads.record_outcome(&outcome);
    Ok(EditResult { replacements, created, outcome })
}

/// `text` with `old_string` replaced by `new_string` under edit_file's rules (unique unless
/// `replace_all`, line breaks of the file), and the number of replacements. For fuzzing and scripts.
pub fn edit_text(
    text: &str,
    old_string: &str,
    new_string: &str,
    replace_all: bool,
) -> Result<(String, usize), ToolError> {
    if old_string == new_string || old_string.is_empty() {
        return Err(ToolError::new("old_string must be non-empty and differ from new_string"));
    }
    let snapshot = Snapshot::from_disk(PathBuf::from("text"), text);
    let request =
        StringEdit { file_path: "text".into(), old_string: old_string.into(), new_string: new_string.into() };
    replace_in_text(
        &snapshot,
        "text",
        &request,
        if replace_all { Expected::AtLeastOne } else { Expected::Unique },
    )
}

/// `snapshot`'s text with `old_string` replaced, and the number of replacements.
pub(crate) fn replace_in_text(
    snapshot: &Snapshot,
    display: &str,
    request: &StringEdit,
    expected: Expected,
) -> Result<(String, usize), ToolError> {
    let text: &str = &snapshot.text;
    let crlf = uses_crlf(text);
    let (old, new) = if crlf {
        (to_crlf(&request.old_string), to_crlf(&request.new_string))
    } else {
        (request.old_string.clone(), request.new_string.clone())
    };
    let mut old = old;
    let mut starts: Vec<usize> = text.match_indices(old.as_str()).map(|(at, _)| at).collect();
    if starts.is_empty() && old.contains("\r\n") {
        // The model copied CRLF text into an LF file.
        old = old.replace("\r\n", "\n");
        starts = text.match_indices(old.as_str()).map(|(at, _)| at).collect();
    }
    let count = starts.len();
    if count == 0 {
        return Err(ToolError::new(not_found_message(text, display, &request.old_string)));
    }
    match expected {
        Expected::Unique if count > 1 => {
            return Err(ToolError::new(format!(
                "Found {count} matches of old_string in {display} (at lines {}), but replace_all is false. \
                 To replace every occurrence set replace_all to true; to replace one, include more surrounding \
                 context in old_string so it matches exactly once.",
                line_numbers(text, &starts)
            )));
        }
        Expected::Exactly(wanted) if count != wanted => {
            return Err(ToolError::new(format!(
                "Expected {wanted} occurrence{} of old_string in {display} but found {count} (at lines {}). \
                 Set expected_replacements to {count} to replace them all, or add context to old_string.",
                if wanted == 1 { "" } else { "s" },
                line_numbers(text, &starts)
            )));
        }
        _ => {}
    }
    let mut out = String::with_capacity(text.len() + count * new.len());
    let mut at = 0;
    for start in &starts {
        out.push_str(&text[at..*start]);
        out.push_str(&new);
        at = start + old.len();
    }
    out.push_str(&text[at..]);
    Ok((out, count))
}

fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// 1-based line numbers of byte offsets (sorted), comma-separated.
fn line_numbers(text: &str, offsets: &[usize]) -> String {
    let mut numbers = Vec::with_capacity(offsets.len());
    let (mut line, mut at) = (1, 0);
    for &offset in offsets {
        line += text[at..offset].bytes().filter(|&b| b == b'\n').count();
        at = offset;
        numbers.push(line.to_string());
    }
    numbers.join(", ")
}

/// "Not found", with the closest region: whole lines differing only in whitespace or
/// punctuation, else the same text with whitespace ignored (anywhere in lines, across line
/// breaks), else the most similar block of lines, else the most similar line.
fn not_found_message(text: &str, display: &str, old_string: &str) -> String {
    let file_lines: Vec<&str> =
        split_lines(text).into_iter().map(|line| line.trim_end_matches(['\n', '\r'])).collect();
    let wanted: Vec<&str> = old_string.lines().collect();
    let mut message = format!("old_string was not found in {display}.");
    let trimmed_start = wanted.iter().position(|line| !line.trim().is_empty()).unwrap_or(0);
    let trimmed_end =
        wanted.iter().rposition(|line| !line.trim().is_empty()).map_or(wanted.len(), |end| end + 1);
    let pattern = &wanted[trimmed_start..trimmed_end.max(trimmed_start)];
    if !pattern.is_empty()
        && let Some((at, pass)) = seek(file_lines.as_slice(), pattern, 0, false)
    {
        let kind = if pass == Pass::Normalized {
            "whitespace or punctuation (quotes, dashes)"
        } else {
            "whitespace"
        };
        message.push_str(&format!(
            " A region differing only in {kind} is at {}:\n{}\nCopy the text exactly as it is in the file.",
            line_span(at, at + pattern.len()),
            region(&file_lines, at, at + pattern.len())
        ));
        return message;
    }
    if let Some(found) = find_ignoring_whitespace(text, old_string) {
        let first = line_of(text, found.start);
        let last = line_of(text, found.end.saturating_sub(1).max(found.start));
        let others = match found.count {
            1 => String::new(),
            count => format!(" (the first of {count})"),
        };
        message.push_str(&format!(
            " The same text with different whitespace or punctuation (quotes, dashes) is at {}{others}:\n{}\n\
             Copy the text exactly as it is in the file.",
            line_span(first, last + 1),
            region(&file_lines, first, last + 1)
        ));
        return message;
    }
    let first = pattern.first().copied().unwrap_or(old_string);
    let first_scores: Vec<f32> =
        file_lines.iter().take(MAX_SCORED_LINES).map(|line| similarity(line, first)).collect();
    if pattern.len() >= 2
        && let Some((at, score)) = most_similar_block(&file_lines, pattern, &first_scores)
        && score >= 0.6
    {
        message.push_str(&format!(
            " The most similar region is at {}:\n{}\nRead the file again and copy the text exactly.",
            line_span(at, at + pattern.len()),
            region(&file_lines, at, at + pattern.len())
        ));
        return message;
    }
    let best = first_scores.iter().copied().enumerate().max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((at, score)) if score >= 0.5 => message.push_str(&format!(
            " The closest line is line {}: `{}`. Read the file again and copy the text exactly.",
            at + 1,
            file_lines[at]
        )),
        _ => message.push_str(" No similar text exists; read the file again to see its current content."),
    }
    message
}

/// Lines compared one by one against old_string when looking for a similar region.
const MAX_SCORED_LINES: usize = 50_000;
/// Texts longer than this are not searched with whitespace ignored (it copies the text).
const MAX_LOOSE_SEARCH_BYTES: usize = 32 * 1024 * 1024;
/// Lines of a region quoted in an error at most.
const MAX_QUOTED_LINES: usize = 30;

/// `lines first+1..=end` (1-based, inclusive), or `line N` for one line.
fn line_span(first: usize, end: usize) -> String {
    if end <= first + 1 { format!("line {}", first + 1) } else { format!("lines {}-{}", first + 1, end) }
}

/// File lines `first..end` for quoting, cut after [`MAX_QUOTED_LINES`].
fn region(file_lines: &[&str], first: usize, end: usize) -> String {
    let end = end.min(file_lines.len());
    let shown = end.min(first + MAX_QUOTED_LINES);
    let mut quoted = file_lines[first..shown].join("\n");
    if shown < end {
        quoted.push_str(&format!("\n… ({} more lines)", end - shown));
    }
    quoted
}

/// 0-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset].iter().filter(|&&byte| byte == b'\n').count()
}

/// Where `needle` occurs in `text` when whitespace is ignored and punctuation normalised.
struct LooseMatch {
    /// Byte range in `text`, from the first to the last matched non-space character.
    start: usize,
    end: usize,
    /// How many such occurrences there are.
    count: usize,
}

/// The characters of `text` that count when whitespace is ignored, normalised, with the byte
/// offset and length of the character each comes from.
fn loose_chars(text: &str) -> impl Iterator<Item = (usize, usize, char)> + '_ {
    text.char_indices().flat_map(|(at, c)| {
        normalize_char(c).filter(|n| !n.is_whitespace()).map(move |n| (at, c.len_utf8(), n))
    })
}

fn find_ignoring_whitespace(text: &str, needle: &str) -> Option<LooseMatch> {
    if text.len() > MAX_LOOSE_SEARCH_BYTES {
        return None;
    }
    let needle: String = loose_chars(needle).map(|(_, _, c)| c).collect();
    if needle.is_empty() {
        return None;
    }
    let haystack: String = loose_chars(text).map(|(_, _, c)| c).collect();
    let found = haystack.find(&needle)?;
    let count = haystack.matches(&needle).count();
    let (mut start, mut end, mut at) = (None, 0, 0);
    for (offset, len, c) in loose_chars(text) {
        if at >= found + needle.len() {
            break;
        }
        if at >= found {
            start.get_or_insert(offset);
            end = offset + len;
        }
        at += c.len_utf8();
    }
    Some(LooseMatch { start: start?, end, count })
}

/// The block of `pattern.len()` file lines most similar to `pattern` (mean line similarity).
/// Only blocks whose first or last line resembles the pattern's are scored in full.
fn most_similar_block(file_lines: &[&str], pattern: &[&str], first_scores: &[f32]) -> Option<(usize, f32)> {
    const CANDIDATES: usize = 8;
    let m = pattern.len();
    if file_lines.len() < m {
        return None;
    }
    let last = pattern[m - 1];
    let starts = first_scores.len().min(file_lines.len() - m + 1);
    let mut ranked: Vec<(usize, f32)> = (0..starts)
        .map(|at| (at, (first_scores[at] + similarity(file_lines[at + m - 1], last)) / 2.0))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
        .iter()
        .take(CANDIDATES)
        .map(|&(at, _)| {
            let total: f32 =
                pattern.iter().zip(&file_lines[at..]).map(|(want, line)| similarity(line, want)).sum();
            (at, total / m as f32)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_region_ignores_whitespace_inside_and_across_lines() {
        let text =
            "fn main() {\n    let total = add(first,\n        second);\n    println!(\"{total}\");\n}\n";
        let message = not_found_message(text, "m.rs", "let total = add(first, second);");
        assert!(message.contains("lines 2-3"), "{message}");
        assert!(message.contains("    let total = add(first,\n        second);"), "{message}");
        let message = not_found_message(text, "m.rs", "println!(\u{201C}{total}\u{201D})");
        assert!(message.contains("line 4"), "{message}");
    }

    #[test]
    fn closest_region_finds_a_similar_block_with_line_numbers() {
        let text = "a = 1\nb = 2\n\ndef compute(x):\n    y = x * 2\n    return y + 1\n\nz = 3\n";
        let message = not_found_message(text, "c.py", "def compute(x):\n    y = x * 3\n    return y + 1");
        assert!(message.contains("most similar region is at lines 4-6"), "{message}");
        assert!(message.contains("    y = x * 2"), "{message}");
        let message = not_found_message(text, "c.py", "completely unrelated\nnothing alike here");
        assert!(message.contains("No similar text exists"), "{message}");
    }

    #[test]
    fn closest_region_of_a_huge_single_line_is_cheap() {
        let line = "x".repeat(1 << 20);
        let message = not_found_message(&line, "big.txt", &format!("y{}", &line[1..]));
        assert!(message.contains("closest line is line 1"), "{}", &message[..200]);
    }
}
