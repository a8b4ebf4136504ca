//! grep, glob and list_dir against real trees: .gitignore respected, output modes, ordering.

use crate::support::tools_support;

use std::fs::File;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agentls::tools::glob::GlobTool;
use agentls::tools::grep::GrepTool;
use agentls::tools::list_dir::ListDirTool;
use agentls::tools::registry::{ToolCallOutcome, ToolRegistry};
use tools_support::Fixture;

async fn call(fx: &Fixture, name: &str, args: serde_json::Value) -> ToolCallOutcome {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(GrepTool));
    registry.register(Arc::new(GlobTool));
    registry.register(Arc::new(ListDirTool));
    registry.execute(name, &args.to_string(), &fx.ctx).await
}

fn tree() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("src/main.rs", "fn main() {\n    let answer = 42;\n    println!(\"{answer}\");\n}\n");
    fx.write("src/lib.rs", "pub fn Answer() -> u32 {\n    42\n}\n");
    fx.write("README.md", "The answer is 42.\n");
    fx.write("target/debug/out.rs", "let answer = 42;\n");
    fx.write("build.log", "answer 42\n");
    fx
}

#[tokio::test]
async fn grep_respects_gitignore() {
    let fx = tree();
    let outcome =
        call(&fx, "grep", serde_json::json!({"pattern": "42", "output_mode": "files_with_matches"})).await;
    assert!(!outcome.is_error, "{}", outcome.content);
    let mut files: Vec<&str> = outcome.content.lines().collect();
    files.sort();
    assert_eq!(files, ["README.md", "src/lib.rs", "src/main.rs"]);
}

#[tokio::test]
async fn grep_searches_what_the_editor_shows_unsaved_buffers_included() {
    let fx = tree();
    let documents = fx.ctx.workspace.documents();
    // Typed but not saved: the disk still says 42 in main.rs.
    documents.open(&fx.root().join("src/main.rs"), "fn main() {\n    let answer = 43;\n}\n", 3);
    // A new file that exists only in the editor, and one the globs leave out.
    documents.open(&fx.root().join("src/new.rs"), "const ANSWER: u32 = 43;\n", 1);
    documents.open(&fx.root().join("notes.txt"), "43\n", 1);
    let outcome = call(&fx, "grep", serde_json::json!({"pattern": "4[23]", "path": "src"})).await;
    assert_eq!(
        outcome.content,
        "src/lib.rs:2:    42\nsrc/main.rs:2:    let answer = 43;\nsrc/new.rs:1:const ANSWER: u32 = 43;\n"
    );
    let filtered = call(
        &fx,
        "grep",
        serde_json::json!({"pattern": "43", "glob_filter": "*.rs", "output_mode": "count"}),
    )
    .await;
    let mut lines: Vec<&str> = filtered.content.lines().collect();
    lines.sort();
    assert_eq!(lines, ["src/main.rs:1", "src/new.rs:1"]);
    // A path naming the unsaved file itself.
    let single = call(&fx, "grep", serde_json::json!({"pattern": "ANSWER", "path": "src/new.rs"})).await;
    assert!(single.content.ends_with(":1:const ANSWER: u32 = 43;\n"), "{}", single.content);
}

#[tokio::test]
async fn grep_content_mode_prints_path_line_and_text() {
    let fx = tree();
    let outcome = call(&fx, "grep", serde_json::json!({"pattern": "answer", "path": "src"})).await;
    assert_eq!(
        outcome.content,
        "src/main.rs:2:    let answer = 42;\nsrc/main.rs:3:    println!(\"{answer}\");\n"
    );
}

#[tokio::test]
async fn grep_case_insensitive_glob_filter_and_count() {
    let fx = tree();
    let outcome = call(
        &fx,
        "grep",
        serde_json::json!({"pattern": "answer", "case_insensitive": true, "glob_filter": "*.rs", "output_mode": "count"}),
    )
    .await;
    assert_eq!(outcome.content, "src/lib.rs:1\nsrc/main.rs:2\n");
}

#[tokio::test]
async fn grep_context_lines_use_dashes() {
    let fx = tree();
    let outcome = call(
        &fx,
        "grep",
        serde_json::json!({"pattern": "^    42$", "path": "src/lib.rs", "context_lines": 1}),
    )
    .await;
    assert_eq!(
        outcome.content,
        "src/lib.rs-1-pub fn Answer() -> u32 {\nsrc/lib.rs:2:    42\nsrc/lib.rs-3-}\n"
    );
}

#[tokio::test]
async fn grep_limits_results_and_says_so() {
    let fx = Fixture::new();
    fx.write("many.txt", (0..50).map(|i| format!("hit {i}\n")).collect::<String>());
    let outcome = call(&fx, "grep", serde_json::json!({"pattern": "hit", "max_results": 3})).await;
    assert!(
        outcome
            .content
            .starts_with("many.txt:1:hit 0\nmany.txt:2:hit 1\nmany.txt:3:hit 2\n[Results were limited to 3")
    );
}

#[tokio::test]
async fn grep_reports_no_matches_and_bad_patterns() {
    let fx = tree();
    let none = call(&fx, "grep", serde_json::json!({"pattern": "zebra"})).await;
    assert!(!none.is_error);
    assert_eq!(none.content, "No matches found for pattern `zebra`.");
    let bad = call(&fx, "grep", serde_json::json!({"pattern": "(unclosed"})).await;
    assert!(bad.is_error && bad.content.contains("invalid regex"), "{}", bad.content);
    let missing = call(&fx, "grep", serde_json::json!({"pattern": "x", "path": "nowhere"})).await;
    assert!(missing.is_error);
}

fn set_mtime(fx: &Fixture, relative: &str, seconds_ago: u64) {
    let file = File::options().write(true).open(fx.root().join(relative)).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago)).unwrap();
}

#[tokio::test]
async fn glob_returns_newest_first_and_skips_ignored_files() {
    let fx = tree();
    set_mtime(&fx, "src/main.rs", 300);
    set_mtime(&fx, "src/lib.rs", 100);
    set_mtime(&fx, "README.md", 200);
    let outcome = call(&fx, "glob", serde_json::json!({"pattern": "**/*.rs"})).await;
    assert_eq!(outcome.content, "src/lib.rs\nsrc/main.rs\n");
    let by_name = call(&fx, "glob", serde_json::json!({"pattern": "*.{rs,md}"})).await;
    assert_eq!(by_name.content, "src/lib.rs\nREADME.md\nsrc/main.rs\n");
    let none = call(&fx, "glob", serde_json::json!({"pattern": "*.py"})).await;
    assert_eq!(none.content, "No files found matching `*.py`.");
}

#[tokio::test]
async fn glob_in_a_subdirectory_shows_paths_from_the_working_directory() {
    let fx = tree();
    let outcome = call(&fx, "glob", serde_json::json!({"pattern": "*.rs", "path": "src"})).await;
    let mut lines: Vec<&str> = outcome.content.lines().collect();
    lines.sort();
    assert_eq!(lines, ["src/lib.rs", "src/main.rs"]);
}

#[tokio::test]
async fn list_dir_lists_to_a_depth_and_skips_ignored_entries() {
    let fx = tree();
    let outcome = call(&fx, "list_dir", serde_json::json!({})).await;
    assert_eq!(outcome.content, "Directory listing for .:\n.gitignore\nREADME.md\n[DIR] src/\n");
    let deep = call(&fx, "list_dir", serde_json::json!({"depth": 2, "ignore": ["lib.rs"]})).await;
    assert_eq!(deep.content, "Directory listing for .:\n.gitignore\nREADME.md\n[DIR] src/\nsrc/main.rs\n");
    let bad_depth = call(&fx, "list_dir", serde_json::json!({"depth": 0})).await;
    assert!(bad_depth.is_error && bad_depth.content.contains("`depth`"), "{}", bad_depth.content);
}
