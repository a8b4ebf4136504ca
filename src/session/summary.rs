//! One-line summaries of the tool calls of a history whose session may not be running (the
//! `agentls.history` of a stored session): each built-in tool describes its own calls
//! ([`Tool::summary`](crate::tools::Tool::summary)); a running session asks its own registry.

use std::path::Path;

use serde_json::Value;

use crate::tools::profiles::catalogue;

/// A one-line description of a call of `tool` in the session directory `cwd`.
pub fn summarize(tool: &str, args: &Value, cwd: &Path) -> String {
    catalogue().summary(tool, args, cwd)
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
        assert_eq!(summarize("spawn_agent", &json!({"task": "fix the tests"})), "spawn_agent: fix the tests");
        assert_eq!(summarize("glob", &json!({"pattern": "**/*.rs"})), "glob **/*.rs");
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

    #[test]
    fn a_call_under_another_agents_name_is_described_by_the_tool_it_runs() {
        let summarize = |tool: &str, args: &Value| super::summarize(tool, args, Path::new("/w/proj"));
        assert_eq!(summarize("search_file_content", &json!({"pattern": "x"})), "grep x");
        assert_eq!(summarize("run_shell_command", &json!({"command": "ls"})), "shell: ls");
        assert_eq!(summarize("list_directory", &json!({"path": "/w/proj/src"})), "list_directory src");
    }
}
