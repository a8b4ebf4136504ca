//! One-line summaries of tool calls for UIs (`read_file src/main.rs`, `shell: cargo test`).
//!
//! Invariant: a summary is a single line of at most [`MAX_SUMMARY`] characters.

use serde_json::Value;

pub const MAX_SUMMARY: usize = 120;

/// A one-line description of a tool call.
pub fn summarize(tool: &str, args: &Value) -> String {
    let s = |key: &str| args.get(key).and_then(Value::as_str);
    let text = match tool {
        "shell" | "shell_command" | "exec_command" => {
            format!("shell: {}", s("command").unwrap_or_default())
        }
        "grep" | "grep_files" | "search_file_content" => {
            let mut t = format!("grep {}", s("pattern").unwrap_or_default());
            if let Some(p) = s("path") {
                t.push_str(&format!(" in {p}"));
            }
            t
        }
        "glob" => format!("glob {}", s("pattern").unwrap_or_default()),
        "apply_patch" => {
            let patch = s("patch").or_else(|| s("input")).unwrap_or_default();
            let files: Vec<&str> = patch
                .lines()
                .filter_map(|l| {
                    ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                        .iter()
                        .find_map(|p| l.strip_prefix(p))
                })
                .collect();
            format!("apply_patch {}", files.join(", "))
        }
        "read_many_files" => {
            let paths = args
                .get("paths")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "));
            format!("read_many_files {}", paths.unwrap_or_default())
        }
        "spawn_agent" => format!("spawn_agent: {}", s("task").unwrap_or_default()),
        _ => {
            let path =
                ["file_path", "path", "dir_path", "absolute_path", "agent_id"].iter().find_map(|k| s(k));
            match path {
                Some(p) => format!("{tool} {p}"),
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
        assert_eq!(summarize("unknown", &json!(null)), "unknown");
    }
}
