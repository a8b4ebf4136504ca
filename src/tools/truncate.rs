//! Tool output truncation for the model (spec §5): character truncation first (head/tail or
//! tail), then line truncation where configured. Markers are the spec's, verbatim.
//!
//! Invariant: the output the model sees never exceeds the character limit plus one marker, and
//! whenever anything was removed a marker says so.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// Which part of an over-long output is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationMode {
    /// The beginning and the end; the middle is removed.
    HeadTail,
    /// The end only.
    Tail,
}

/// The limits that apply to one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimit {
    pub max_chars: usize,
    pub mode: TruncationMode,
    pub max_lines: Option<usize>,
}

/// Limits for tools the tables do not name (custom tools, list_dir, …).
pub const FALLBACK_LIMIT: ToolLimit =
    ToolLimit { max_chars: 30_000, mode: TruncationMode::HeadTail, max_lines: None };

/// The default limit of a tool: spec §5.2 and §5.3, extended to our other tools by analogy.
pub fn default_limit(tool: &str) -> ToolLimit {
    use TruncationMode::*;
    let (max_chars, mode, max_lines) = match tool {
        "read_file" | "read_many_files" => (50_000, HeadTail, None),
        "shell" => (30_000, HeadTail, Some(256)),
        "grep" => (20_000, Tail, Some(200)),
        "glob" => (20_000, Tail, Some(500)),
        "list_dir" => (20_000, Tail, Some(500)),
        "edit_file" | "replace" | "apply_patch" => (10_000, Tail, None),
        "write_file" => (1_000, Tail, None),
        "spawn_agent" => (20_000, HeadTail, None),
        _ => return FALLBACK_LIMIT,
    };
    ToolLimit { max_chars, mode, max_lines }
}

/// Per-tool limits with overrides from the configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TruncationPolicy {
    char_limits: BTreeMap<String, usize>,
    line_limits: BTreeMap<String, usize>,
}

impl TruncationPolicy {
    /// `char_limits` / `line_limits` override the defaults tool by tool (`tool_output_limits`,
    /// `tool_line_limits` in the configuration). A line limit of 0 turns line truncation off.
    pub fn new(char_limits: BTreeMap<String, usize>, line_limits: BTreeMap<String, usize>) -> Self {
        Self { char_limits, line_limits }
    }

    pub fn limit(&self, tool: &str) -> ToolLimit {
        let mut limit = default_limit(tool);
        if let Some(&chars) = self.char_limits.get(tool) {
            limit.max_chars = chars;
        }
        if let Some(&lines) = self.line_limits.get(tool) {
            limit.max_lines = (lines > 0).then_some(lines);
        }
        limit
    }

    /// What the model receives for `output` of `tool`: characters first, then lines. When the
    /// line pass drops the character marker (it sits in the middle of a head/tail cut), the
    /// marker is put back next to the line marker, so the model always learns about both.
    pub fn truncate<'a>(&self, tool: &str, output: &'a str) -> Cow<'a, str> {
        let limit = self.limit(tool);
        let by_chars = truncate_output(output, limit.max_chars, limit.mode);
        let Some(max_lines) = limit.max_lines else { return by_chars };
        let by_lines = match truncate_lines(&by_chars, max_lines) {
            Cow::Borrowed(_) => return by_chars,
            Cow::Owned(s) => s,
        };
        let char_marker = matches!(by_chars, Cow::Owned(_))
            .then(|| by_chars.lines().find(|l| l.starts_with(CHAR_MARKER_START)))
            .flatten();
        match char_marker {
            Some(marker) if !by_lines.contains(CHAR_MARKER_START) => {
                let at = by_lines.find("\n[... ").map_or(0, |i| i + 1);
                Cow::Owned(format!("{}{marker}\n{}", &by_lines[..at], &by_lines[at..]))
            }
            _ => Cow::Owned(by_lines),
        }
    }
}

/// How every character-truncation marker begins.
const CHAR_MARKER_START: &str = "[WARNING: Tool output was truncated.";

/// Byte index of the `n`th character of `s` (or its length).
fn char_index(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// Character truncation (spec §5.1).
pub fn truncate_output(output: &str, max_chars: usize, mode: TruncationMode) -> Cow<'_, str> {
    // Cheap exit: a string of at most `max_chars` bytes has at most that many characters.
    if output.len() <= max_chars {
        return Cow::Borrowed(output);
    }
    let length = output.chars().count();
    if length <= max_chars {
        return Cow::Borrowed(output);
    }
    let removed = length - max_chars;
    match mode {
        TruncationMode::HeadTail => {
            let half = max_chars / 2;
            let head = &output[..char_index(output, half)];
            let tail = &output[char_index(output, length - half)..];
            Cow::Owned(format!(
                "{head}\n\n[WARNING: Tool output was truncated. {removed} characters were removed from the middle. \
                 The full output is available in the event stream. \
                 If you need to see specific parts, re-run the tool with more targeted parameters.]\n\n{tail}"
            ))
        }
        TruncationMode::Tail => {
            let tail = &output[char_index(output, length - max_chars)..];
            Cow::Owned(format!(
                "[WARNING: Tool output was truncated. First {removed} characters were removed. \
                 The full output is available in the event stream.]\n\n{tail}"
            ))
        }
    }
}

/// Line truncation (spec §5.3): head and tail lines around an omission marker.
pub fn truncate_lines(output: &str, max_lines: usize) -> Cow<'_, str> {
    let lines: Vec<&str> = output.split('\n').collect();
    if lines.len() <= max_lines {
        return Cow::Borrowed(output);
    }
    let head_count = max_lines / 2;
    let tail_count = max_lines - head_count;
    let omitted = lines.len() - head_count - tail_count;
    Cow::Owned(format!(
        "{}\n[... {omitted} lines omitted ...]\n{}",
        lines[..head_count].join("\n"),
        lines[lines.len() - tail_count..].join("\n")
    ))
}
