//! Tool dispatch for a session (spec §2.5 `execute_single_tool`, §3.8, §5): lookup, schema
//! validation, execution, truncation for the model.
//!
//! Invariants: every call yields exactly one result, in call order; unknown tools, invalid
//! arguments and tool failures become `is_error` results; the full output is returned alongside
//! the truncated text the model receives.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::llm::{Image, ToolDefinition};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Tools by name; registering a name again replaces the earlier tool (latest wins).
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<(Arc<dyn Tool>, Arc<jsonschema::Validator>)>,
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// Full output (or the error message).
    pub full: String,
    /// What the model receives (truncated with a marker when too long).
    pub for_model: String,
    pub is_error: bool,
    pub images: Vec<Image>,
}

impl ToolSet {
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        let mut set = Self::default();
        for tool in tools {
            set.register(tool);
        }
        set
    }

    /// Adds a tool, replacing one with the same name. A tool whose schema does not compile is
    /// skipped with a log line (it could never be called correctly).
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let validator = match jsonschema::validator_for(&tool.parameters()) {
            Ok(v) => Arc::new(v),
            Err(e) => {
                tracing::error!(tool = tool.name(), error = %e, "tool schema does not compile; tool left out");
                return;
            }
        };
        self.tools.retain(|(t, _)| t.name() != tool.name());
        self.tools.push((tool, validator));
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(t, _)| t.name().to_string()).collect()
    }

    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|(t, _)| ToolDefinition {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs one call: lookup, validation, execution, truncation.
    pub async fn execute(&self, name: &str, args: &Value, ctx: &ToolContext, limits: &Limits) -> Executed {
        let Some((tool, validator)) = self.tools.iter().find(|(t, _)| t.name() == name) else {
            return error(format!("Unknown tool: {name}. Available tools: {}", self.names().join(", ")));
        };
        let problems: Vec<String> = validator
            .iter_errors(args)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
            })
            .collect();
        if !problems.is_empty() {
            return error(format!("Invalid arguments for tool: {name}: {}", problems.join("; ")));
        }
        match tool.call(args.clone(), ctx).await {
            Ok(ToolOutput { content, images }) => Executed {
                for_model: limits.truncate(name, &content),
                full: content,
                is_error: false,
                images: images
                    .into_iter()
                    .map(|i| Image { media_type: i.media_type, data: i.data })
                    .collect(),
            },
            Err(ToolError(message)) => {
                let message = format!("Tool error ({name}): {message}");
                Executed { for_model: limits.truncate(name, &message), full: message, ..error(String::new()) }
            }
        }
    }
}

fn error(message: String) -> Executed {
    Executed { full: message.clone(), for_model: message, is_error: true, images: Vec::new() }
}

/// How output is cut before the model sees it (spec §5.1–5.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Limits {
    /// Per-tool character limits overriding the defaults.
    pub chars: BTreeMap<String, usize>,
    /// Per-tool line limits overriding the defaults.
    pub lines: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    HeadTail,
    Tail,
}

fn default_limit(tool: &str) -> (usize, Mode) {
    match tool {
        "read_file" | "read_many_files" => (50_000, Mode::HeadTail),
        "shell" => (30_000, Mode::HeadTail),
        "grep" | "glob" | "list_dir" => (20_000, Mode::Tail),
        "edit_file" | "apply_patch" | "replace" => (10_000, Mode::Tail),
        "write_file" => (1_000, Mode::Tail),
        "spawn_agent" | "wait" => (20_000, Mode::HeadTail),
        _ => (30_000, Mode::HeadTail),
    }
}

fn default_lines(tool: &str) -> Option<usize> {
    match tool {
        "shell" => Some(256),
        "grep" => Some(200),
        "glob" => Some(500),
        _ => None,
    }
}

impl Limits {
    /// Character truncation first, then line truncation.
    pub fn truncate(&self, tool: &str, output: &str) -> String {
        let (default_chars, mode) = default_limit(tool);
        let max_chars = self.chars.get(tool).copied().unwrap_or(default_chars);
        let text = truncate_chars(output, max_chars, mode);
        match self.lines.get(tool).copied().or_else(|| default_lines(tool)) {
            Some(max_lines) => truncate_lines(&text, max_lines),
            None => text,
        }
    }
}

fn truncate_chars(output: &str, max_chars: usize, mode: Mode) -> String {
    let len = output.chars().count();
    if len <= max_chars {
        return output.to_string();
    }
    let removed = len - max_chars;
    let tail_from = |n: usize| output.char_indices().nth(len - n).map_or(output.len(), |(i, _)| i);
    match mode {
        Mode::HeadTail => {
            let half = max_chars / 2;
            let head_end = output.char_indices().nth(half).map_or(output.len(), |(i, _)| i);
            format!(
                "{}\n\n[WARNING: Tool output was truncated. {removed} characters were removed from the middle. \
                 The full output is available in the event stream. If you need to see specific parts, \
                 re-run the tool with more targeted parameters.]\n\n{}",
                &output[..head_end],
                &output[tail_from(half)..]
            )
        }
        Mode::Tail => format!(
            "[WARNING: Tool output was truncated. First {removed} characters were removed. \
             The full output is available in the event stream.]\n\n{}",
            &output[tail_from(max_chars)..]
        ),
    }
}

fn truncate_lines(output: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = output.split('\n').collect();
    if lines.len() <= max_lines {
        return output.to_string();
    }
    let head = max_lines / 2;
    let tail = max_lines - head;
    let omitted = lines.len() - head - tail;
    format!(
        "{}\n[... {omitted} lines omitted ...]\n{}",
        lines[..head].join("\n"),
        lines[lines.len() - tail..].join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_with_marker() {
        let text = format!("{}{}", "a".repeat(60_000), "b".repeat(40_000));
        let out = Limits::default().truncate("read_file", &text);
        assert!(out.starts_with(&"a".repeat(25_000)));
        assert!(out.ends_with(&"b".repeat(25_000)));
        assert!(
            out.contains(
                "[WARNING: Tool output was truncated. 50000 characters were removed from the middle."
            )
        );
    }

    #[test]
    fn tail_mode_and_lines_after_chars() {
        let text = (0..5000).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let out = Limits::default().truncate("grep", &text);
        assert!(out.contains("[WARNING: Tool output was truncated. First"));
        assert!(out.contains("lines omitted ...]"));
        assert!(out.ends_with("line 4999"));
    }

    #[test]
    fn overrides_apply() {
        let limits =
            Limits { chars: [("shell".to_string(), 10)].into(), lines: [("shell".to_string(), 1000)].into() };
        let out = limits.truncate("shell", &"x".repeat(30));
        assert!(out.contains("20 characters were removed"));
        assert_eq!(Limits::default().truncate("shell", "short"), "short");
    }
}
