//! The `edit_file` tool (Anthropic profile, Claude Code semantics): replace an exact, unique
//! string (or every occurrence with `replace_all`) and propose the result as a change set. Also
//! holds the string-replacement engine the gemini-style `replace` tool shares.
//! Invariant: the edit applies only where the model's `old_string` occurs exactly (modulo the
//! file's own line breaks); anything else is an error naming the closest region, never a guess.

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::apply_patch::seek::{Pass, seek, similarity};
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
    let path: PathBuf = ctx
        .workspace
        .resolve(&ctx.cwd, &request.file_path)
        .map_err(|error| ToolError::new(error.to_string()))?;
    let snapshot = ctx.workspace.read_if_exists(&path).map_err(|error| ToolError::new(error.to_string()))?;
    let display = request.file_path.as_str();
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

/// "Not found", with the closest region: a whitespace- or punctuation-insensitive match, else
/// the most similar line.
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
        && let Some((at, pass)) = seek(&file_lines, pattern, 0, false)
    {
        let kind = if pass == Pass::Normalized {
            "whitespace or punctuation (quotes, dashes)"
        } else {
            "whitespace"
        };
        let region = file_lines[at..at + pattern.len()].join("\n");
        message.push_str(&format!(
            " A region differing only in {kind} is at lines {}-{}:\n{region}\nCopy the text exactly as it is in the file.",
            at + 1,
            at + pattern.len()
        ));
        return message;
    }
    let first = pattern.first().copied().unwrap_or(old_string);
    let best = file_lines
        .iter()
        .enumerate()
        .take(50_000)
        .map(|(at, line)| (at, similarity(line, first)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
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
