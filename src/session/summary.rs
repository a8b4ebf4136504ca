//! One-line summaries of tool calls for UIs (`read_file src/main.rs`, `shell: cargo test`).
//!
//! Invariants: a summary is a single line of at most [`MAX_SUMMARY`] characters; file paths in
//! it are relative to the session's directory when they lie inside it (commands are shown as
//! written).

use std::path::Path;

use serde_json::Value;

use crate::workspace::shown_path;

pub const MAX_SUMMARY: usize = 120;

/// A one-line description of a tool call in the session directory `cwd`.
pub fn summarize(tool: &str, args: &Value, cwd: &Path) -> String {
    let s = |key: &str| args.get(key).and_then(Value::as_str);
    let shown = |path: &str| shown_path(std::path::Path::new(path), &[cwd]);
    let text = match tool {
        "shell" | "shell_command" | "exec_command" => {
            format!("shell: {}", s("command").unwrap_or_default())
        }
        "grep" | "grep_files" | "search_file_content" => {
            let mut t = format!("grep {}", s("pattern").unwrap_or_default());
            if let Some(p) = s("path") {
                t.push_str(&format!(" in {}", shown(p)));
            }
            t
        }
        "glob" => format!("glob {}", s("pattern").unwrap_or_default()),
        "apply_patch" => {
            let patch = s("patch").or_else(|| s("input")).unwrap_or_default();
            let files: Vec<String> = patch
                .lines()
                .filter_map(|l| {
                    ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                        .iter()
                        .find_map(|p| l.strip_prefix(p))
                })
                .map(shown)
                .collect();
            format!("apply_patch {}", files.join(", "))
        }
        "read_many_files" => {
            let paths = args
                .get("paths")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(shown).collect::<Vec<_>>().join(", "));
            format!("read_many_files {}", paths.unwrap_or_default())
        }
        "spawn_agent" => format!("spawn_agent: {}", s("task").unwrap_or_default()),
        "codebase_search" => format!("codebase_search: {}", s("query").unwrap_or_default()),
        _ => {
            let path =
                ["file_path", "path", "dir_path", "absolute_path", "agent_id"].iter().find_map(|k| s(k));
            match path {
                Some(p) => format!("{tool} {}", shown(p)),
                None => tool.to_string(),
            }
        }
    };
    one_line(text.trim())
}

fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let mut line: String = first.chars().take(MAX_SUMMARY).collect();
    if line.len() < text.len() {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries() {
        let summarize = |tool: &str, args: &Value| super::summarize(tool, args, Path::new("/w/proj"));
        assert_eq!(summarize("read_file", &json!({"file_path": "src/main.rs"})), "read_file src/main.rs");
        assert_eq!(summarize("shell", &json!({"command": "cargo test"})), "shell: cargo test");
        assert_eq!(
            summarize(
                "apply_patch",
                &json!({"patch": "*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch"})
            ),
            "apply_patch a.py"
        );
        assert_eq!(summarize("shell", &json!({"command": "a\nb"})), "shell: a…");
        assert_eq!(
            summarize("codebase_search", &json!({"query": "where are sessions stored?"})),
            "codebase_search: where are sessions stored?"
        );
        assert_eq!(summarize("unknown", &json!(null)), "unknown");
    }

    #[test]
    fn paths_inside_the_session_directory_are_shown_relative() {
        let summarize = |tool: &str, args: &Value| super::summarize(tool, args, Path::new("/w/proj"));
        assert_eq!(summarize("edit_file", &json!({"file_path": "/w/proj/src/a.py"})), "edit_file src/a.py");
        assert_eq!(summarize("read_file", &json!({"file_path": "/w/other/a.py"})), "read_file /w/other/a.py");
        assert_eq!(summarize("grep", &json!({"pattern": "x", "path": "/w/proj/src"})), "grep x in src");
        assert_eq!(
            summarize("read_many_files", &json!({"paths": ["/w/proj/a", "b"]})),
            "read_many_files a, b"
        );
        assert_eq!(
            summarize("apply_patch", &json!({"patch": "*** Begin Patch\n*** Update File: /w/proj/m.py\n"})),
            "apply_patch m.py"
        );
        assert_eq!(summarize("shell", &json!({"command": "cat /w/proj/a"})), "shell: cat /w/proj/a");
        assert_eq!(summarize("list_dir", &json!({"path": "/w/proj"})), "list_dir /w/proj");
    }
}
