//! One-line summaries of tool calls for people (`read_file src/main.rs`, `shell: cargo test`):
//! each tool describes its own calls ([`Tool::summary`](super::Tool::summary)); this module holds
//! what they share.
//!
//! Invariants: a summary is a single line of at most [`MAX_SUMMARY`] characters; file paths in
//! it are relative to the session's directory when they lie inside it (commands are shown as
//! written).

use std::path::Path;

use serde_json::Value;

use crate::workspace::shown_path;

pub const MAX_SUMMARY: usize = 120;

/// The arguments that name what a tool without a summary of its own works on, tried in order.
const SUBJECT_KEYS: [&str; 5] = ["file_path", "path", "dir_path", "absolute_path", "agent_id"];

/// A call as its summary reads it: the name it used, its arguments, the session's directory.
#[derive(Debug, Clone, Copy)]
pub struct CallArgs<'a> {
    name: &'a str,
    args: &'a Value,
    cwd: &'a Path,
}

impl<'a> CallArgs<'a> {
    pub fn new(name: &'a str, args: &'a Value, cwd: &'a Path) -> Self {
        Self { name, args, cwd }
    }

    /// The string argument `key`, when there is one.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.args.get(key).and_then(Value::as_str)
    }

    /// Every argument, as the model sent them.
    pub fn args(&self) -> &'a Value {
        self.args
    }

    /// The argument `key`, when there is one.
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.args.get(key)
    }

    /// `path` as people see it: relative to the session's directory when it lies inside it.
    pub fn shown(&self, path: &str) -> String {
        shown_path(Path::new(path), &[self.cwd])
    }

    /// The summary of a tool that describes nothing of its own: the name the call used and the
    /// path (or agent) it names, or the name alone.
    pub fn default_summary(&self) -> String {
        match SUBJECT_KEYS.iter().find_map(|key| self.str(key)) {
            Some(subject) => format!("{} {}", self.name, self.shown(subject)),
            None => self.name.to_string(),
        }
    }
}

/// The first line of `text`, at most [`MAX_SUMMARY`] characters, marked `…` when cut.
pub fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let mut line: String = first.chars().take(MAX_SUMMARY).collect();
    if line.len() < text.len() {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tool_without_a_summary_shows_its_name_and_subject() {
        let cwd = Path::new("/w/proj");
        let summary = |name: &str, args: &Value| CallArgs::new(name, args, cwd).default_summary();
        assert_eq!(summary("edit_file", &json!({"file_path": "/w/proj/src/a.py"})), "edit_file src/a.py");
        assert_eq!(summary("read_file", &json!({"file_path": "/w/other/a.py"})), "read_file /w/other/a.py");
        assert_eq!(summary("list_dir", &json!({"path": "/w/proj"})), "list_dir /w/proj");
        assert_eq!(summary("wait", &json!({"agent_id": "agent-1"})), "wait agent-1");
        assert_eq!(summary("unknown", &json!(null)), "unknown");
    }

    #[test]
    fn a_summary_is_one_bounded_line() {
        assert_eq!(one_line("shell: a\nb"), "shell: a…");
        let long = one_line(&"x".repeat(MAX_SUMMARY + 10));
        assert_eq!(long.chars().count(), MAX_SUMMARY + 1);
        assert!(long.ends_with('…'));
        assert_eq!(one_line("short"), "short");
    }
}
