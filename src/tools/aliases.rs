//! Names other agents use for the same tools and arguments. A model (or a script) that calls
//! gemini-cli's `run_shell_command`, the spec's `edit_file` on the Gemini profile, or sends
//! `absolute_path` where the schema says `file_path` reaches the tool it meant instead of
//! spending a turn on an "unknown tool" or "invalid arguments" error.
//!
//! Invariant: an alias never shadows anything real. A tool alias applies only when no tool of
//! that name is registered; an argument alias only when the alias is not a declared parameter of
//! the tool and the canonical parameter is declared and absent.

use serde_json::{Map, Value};

/// `(alias, canonical tool)`: the names of codex, Claude Code, gemini-cli and the loop spec.
const TOOL_ALIASES: &[(&str, &str)] = &[
    ("run_shell_command", "shell"),
    ("bash", "shell"),
    ("search_file_content", "grep"),
    ("list_directory", "list_dir"),
    ("edit_file", "replace"),
    ("replace", "edit_file"),
];

/// `(canonical parameter, aliases)`, tried in order: the argument names of Claude Code (`glob`,
/// `-i`, `-A`/`-B`/`-C`, `head_limit` on its search tool, `timeout` on its shell), gemini-cli
/// (`absolute_path`, `dir_path`, `include`, `directory`) and codex (`workdir`, `limit`).
const ARGUMENT_ALIASES: &[(&str, &[&str])] = &[
    ("file_path", &["absolute_path", "path", "filePath", "file"]),
    ("absolute_path", &["file_path", "path"]),
    ("path", &["dir_path", "directory", "absolute_path"]),
    ("old_string", &["old_str"]),
    ("new_string", &["new_str"]),
    ("command", &["cmd"]),
    ("glob_filter", &["glob", "include"]),
    ("case_insensitive", &["-i", "ignore_case"]),
    ("context_lines", &["-C", "context"]),
    ("before_context", &["-B"]),
    ("after_context", &["-A"]),
    ("max_results", &["head_limit", "limit"]),
    ("timeout_ms", &["timeout"]),
    ("workdir", &["cwd", "directory", "dir_path"]),
];

/// The registered tool a call of `name` should run, when `name` itself is not registered.
pub fn tool_alias(name: &str) -> impl Iterator<Item = &'static str> + '_ {
    TOOL_ALIASES.iter().filter(move |(alias, _)| *alias == name).map(|(_, canonical)| *canonical)
}

/// Renames aliased keys of `args` to the parameters the tool declares (see the invariant).
pub fn normalize_arguments(args: &mut Map<String, Value>, declared: &[String]) {
    let is_declared = |key: &str| declared.iter().any(|d| d == key);
    for (canonical, aliases) in ARGUMENT_ALIASES {
        if !is_declared(canonical) || args.contains_key(*canonical) {
            continue;
        }
        let found = aliases.iter().find(|alias| !is_declared(alias) && args.contains_key(**alias));
        if let Some(alias) = found
            && let Some(value) = args.remove(*alias)
        {
            args.insert((*canonical).to_string(), value);
        }
    }
}

/// The top-level property names a parameter schema declares.
pub fn declared_parameters(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn normalized(args: Value, declared: &[&str]) -> Value {
        let declared: Vec<String> = declared.iter().map(|d| d.to_string()).collect();
        let Value::Object(mut map) = args else { unreachable!("tests pass objects") };
        normalize_arguments(&mut map, &declared);
        Value::Object(map)
    }

    #[test]
    fn an_undeclared_alias_becomes_the_declared_parameter() {
        assert_eq!(
            normalized(json!({"absolute_path": "/a", "limit": 3}), &["file_path", "limit"]),
            json!({"file_path": "/a", "limit": 3})
        );
        assert_eq!(
            normalized(json!({"file_path": "/a"}), &["absolute_path"]),
            json!({"absolute_path": "/a"})
        );
    }

    #[test]
    fn declared_parameters_and_present_canonicals_are_left_alone() {
        // grep declares `path`: it must not be renamed to anything.
        assert_eq!(normalized(json!({"path": "src"}), &["pattern", "path"]), json!({"path": "src"}));
        // Both present: the schema decides (additionalProperties rejects the stray one).
        assert_eq!(
            normalized(json!({"file_path": "a", "absolute_path": "b"}), &["file_path"]),
            json!({"file_path": "a", "absolute_path": "b"})
        );
    }

    #[test]
    fn other_agents_search_and_shell_arguments_map_onto_ours() {
        let grep = ["pattern", "path", "glob_filter", "case_insensitive", "context_lines", "max_results"];
        assert_eq!(
            normalized(json!({"pattern": "x", "glob": "*.rs", "-i": true, "-C": 2, "head_limit": 5}), &grep),
            json!({"pattern": "x", "glob_filter": "*.rs", "case_insensitive": true, "context_lines": 2, "max_results": 5})
        );
        assert_eq!(
            normalized(
                json!({"command": "ls", "timeout": 500, "cwd": "src"}),
                &["command", "timeout_ms", "workdir"]
            ),
            json!({"command": "ls", "timeout_ms": 500, "workdir": "src"})
        );
        // `include` is read_many_files' own parameter there: never renamed.
        assert_eq!(
            normalized(json!({"paths": ["a"], "include": ["*.md"]}), &["paths", "include"]),
            json!({"paths": ["a"], "include": ["*.md"]})
        );
    }

    #[test]
    fn tool_aliases_name_registered_tools_only_by_lookup() {
        assert_eq!(tool_alias("run_shell_command").collect::<Vec<_>>(), ["shell"]);
        assert_eq!(tool_alias("edit_file").collect::<Vec<_>>(), ["replace"]);
        assert!(tool_alias("shell").next().is_none());
    }
}
